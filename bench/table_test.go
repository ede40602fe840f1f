package main

import (
	"testing"
	"time"
)

func TestMarkdownTable(t *testing.T) {
	tests := []struct {
		name   string
		header []string
		rows   [][]string
		right  map[int]bool
		want   string
	}{
		{
			name:   "pads and aligns",
			header: []string{"target", "req/s"},
			rows:   [][]string{{"nginx", "12345"}, {"llmrouter", "9"}},
			right:  map[int]bool{1: true},
			want: "| target    | req/s |\n" +
				"| --------- | ----: |\n" +
				"| nginx     | 12345 |\n" +
				"| llmrouter |     9 |\n",
		},
		{
			name:   "short row padded, long row cut, µ counted as one column",
			header: []string{"a", "µs"},
			rows:   [][]string{{"x"}, {"y", "1", "dropped"}},
			want: "| a   | µs  |\n" +
				"| --- | --- |\n" +
				"| x   |     |\n" +
				"| y   | 1   |\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := markdownTable(tt.header, tt.rows, tt.right); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	lat := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"median of ten", lat, 0.5, 5},
		{"p99 of ten is the largest", lat, 0.99, 10},
		{"p100", lat, 1, 10},
		{"one value", lat[:1], 0.99, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.in, tt.p); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	stat := []byte("4242 (we ird) name) S 1 777 777 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 3 0 100 1000 50 18446744073709551615")
	pgrp, cpu, err := parseStat(stat)
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	if pgrp != 777 || cpu != 175*clockTick {
		t.Errorf("got pgrp %d cpu %v, want 777 %v", pgrp, cpu, 175*clockTick)
	}
}
