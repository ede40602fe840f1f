package jsonscan

import (
	"bytes"
	"testing"
)

// TestString: a string's end and escapes, found eight bytes at a
// time, are those a byte loop finds, wherever the quotes and backslashes
// sit and whatever the bytes around them (neighbouring values, high bits
// set).
func TestString(t *testing.T) {
	naive := func(s string) (int, bool) {
		esc := false
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case '"':
				return j + 1, esc
			case '\\':
				esc = true
				j++
			}
		}
		return -1, esc
	}
	fills := []byte{'a', '!', '#', '[', ']', 0x21, 0x5b, 0x5d, 0x80, 0xa2, 0xdc, 0xff, 0x00, 0x01}
	for n := 0; n <= 24; n++ {
		for _, fill := range fills {
			b := append([]byte{'"'}, bytes.Repeat([]byte{fill}, n)...)
			for at := 1; at <= n; at++ {
				for _, c := range []byte{'"', '\\'} {
					b[at] = c
					for at2 := at; at2 <= n; at2++ {
						c2 := b[at2]
						b[at2] = '"'
						gotEnd, gotEsc := String(string(b), 0)
						wantEnd, wantEsc := naive(string(b))
						if gotEnd != wantEnd || gotEsc != wantEsc {
							t.Fatalf("String(%q) = %d, %v, want %d, %v", b, gotEnd, gotEsc, wantEnd, wantEsc)
						}
						b[at2] = c2
					}
					b[at] = fill
				}
			}
			if gotEnd, _ := String(string(b), 0); gotEnd != -1 {
				t.Fatalf("String(%q) = %d, want -1", b, gotEnd)
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
		if end, esc := String(tt.s, 0); end != tt.end || esc != tt.esc {
			t.Errorf("String(%s) = %d, %v, want %d, %v", tt.s, end, esc, tt.end, tt.esc)
		}
	}
}
