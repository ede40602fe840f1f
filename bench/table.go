package main

import (
	"strings"
	"unicode/utf8"
)

// markdownTable renders a GitHub-flavoured markdown table with columns
// padded to their widest cell. Columns whose index is in right are
// right-aligned (numbers). A row shorter than header is padded with
// empty cells; extra cells are dropped.
func markdownTable(header []string, rows [][]string, right map[int]bool) string {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = max(3, utf8.RuneCountInString(h))
	}
	for _, r := range rows {
		for i := range header {
			if i < len(r) {
				width[i] = max(width[i], utf8.RuneCountInString(r[i]))
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteByte('|')
		for i := range header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			b.WriteByte(' ')
			if right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			b.WriteString(" |")
		}
		b.WriteByte('\n')
	}
	line(header)
	b.WriteByte('|')
	for i := range header {
		b.WriteByte(' ')
		if right[i] {
			b.WriteString(strings.Repeat("-", width[i]-1) + ":")
		} else {
			b.WriteString(strings.Repeat("-", width[i]))
		}
		b.WriteString(" |")
	}
	b.WriteByte('\n')
	for _, r := range rows {
		line(r)
	}
	return b.String()
}
