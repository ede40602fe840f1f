package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmrouter/llmrouter/bench/internal/upstream"
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

// connCell is a count of upstream connections with their protocols, e.g.
// "16 h1", "4 h2" or "3 h2 + 1 h1"; a connection that carried no request
// has no protocol yet ("+ 1 unused").
func connCell(total int64, by map[string]int64) string {
	var parts []string
	for _, p := range []string{upstream.ProtoH2, upstream.ProtoH1} {
		if by[p] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", by[p], p))
		}
	}
	if len(parts) == 0 {
		return strconv.FormatInt(total, 10)
	}
	s := strings.Join(parts, " + ")
	if by[""] > 0 {
		s += fmt.Sprintf(" + %d unused", by[""])
	}
	return s
}
