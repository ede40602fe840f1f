package chat

import (
	"bytes"
	"strings"
	"testing"
)

// TestSpecial: the first quote or backslash, found eight bytes at a time,
// is the one a byte loop finds, wherever it sits and whatever the bytes
// around it (neighbouring values, high bits set).
func TestSpecial(t *testing.T) {
	fills := []byte{'a', '!', '#', '[', ']', 0x21, 0x5b, 0x5d, 0x80, 0xa2, 0xdc, 0xff, 0x00, 0x01}
	for n := 0; n <= 40; n++ {
		for _, fill := range fills {
			b := bytes.Repeat([]byte{fill}, n)
			if got := special(string(b), 0); got != n {
				t.Fatalf("special(%q, 0) = %d, want %d", b, got, n)
			}
			for at := 0; at < n; at++ {
				for _, c := range []byte{'"', '\\'} {
					b[at] = c
					for from := 0; from <= n; from++ {
						want := n
						if i := strings.IndexAny(string(b[from:]), `"\`); i >= 0 {
							want = from + i
						}
						if got := special(string(b), from); got != want {
							t.Fatalf("special(%q, %d) = %d, want %d", b, from, got, want)
						}
					}
					b[at] = fill
				}
			}
		}
	}
}

// TestWalkStrings: strings end at their closing quote, escaped quotes
// and backslashes inside them included.
func TestWalkStrings(t *testing.T) {
	tests := []struct {
		s   string
		end int
		esc bool
	}{
		{`""`, 2, false},
		{`"abc"x`, 5, false},
		{`"a\"b"`, 6, true},
		{`"a\\"b"`, 5, true},
		{`"a\\\"b"`, 8, true},
		{`"0123456789abcdef\"0123456789"`, 30, true},
		{`"0123456789abcdef\\"0123456789"`, 20, true},
		{`"\u0022"`, 8, true},
		{`"abc`, -1, false},
		{`"abc\"`, -1, true},
		{`"abc\`, -1, true},
	}
	for _, tt := range tests {
		if end, esc := stringEnd(tt.s, 0); end != tt.end || esc != tt.esc {
			t.Errorf("stringEnd(%s) = %d, %v, want %d, %v", tt.s, end, esc, tt.end, tt.esc)
		}
	}
}
