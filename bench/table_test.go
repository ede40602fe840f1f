package main

import (
	"testing"
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

func TestConnCell(t *testing.T) {
	tests := []struct {
		name  string
		total int64
		by    map[string]int64
		want  string
	}{
		{"none", 0, nil, "0"},
		{"one protocol", 16, map[string]int64{"h1": 16}, "16 h1"},
		{"mixed, h2 first", 5, map[string]int64{"h1": 1, "h2": 4}, "4 h2 + 1 h1"},
		{"one without a request yet", 3, map[string]int64{"h2": 2, "": 1}, "2 h2 + 1 unused"},
		{"only unused", 2, map[string]int64{"": 2}, "2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := connCell(tt.total, tt.by); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
