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
