package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Space returns the index of the first byte from i on that is not JSON
// whitespace (any byte up to ' ' counts: only whitespace does in valid
// JSON).
func Space(s string, i int) int {
	for i < len(s) && s[i] <= ' ' {
		i++
	}
	return i
}

const (
	ones   = 0x0101010101010101
	highs  = 0x8080808080808080
	quotes = ones * '"'
	slash  = ones * '\\'
)

// load is the eight bytes of s from j on, little-endian; j+8 <= len(s).
func load(s string, j int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[j:]), 8))
}

// String returns the index just past the JSON string whose opening quote
// is s[i], or -1 when it does not end, and whether it holds an escape.
// It reads eight bytes a step for a quote or a backslash: a branch a
// byte is what a byte loop costs, a call a string what
// strings.IndexByte does, and most strings are short.
func String(s string, i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(s); {
		if j+8 <= len(s) {
			x := load(s, j)
			q, b := x^quotes, x^slash
			// The high bit of each byte that was zero, and of none before
			// the first (a borrow only runs upwards).
			m := ((q-ones)&^q | (b-ones)&^b) & highs
			if m == 0 {
				j += 8
				continue
			}
			j += bits.TrailingZeros64(m) / 8
		} else if c := s[j]; c != '"' && c != '\\' {
			j++
			continue
		}
		if s[j] == '"' {
			return j + 1, esc
		}
		esc = true
		j += 2 // a backslash and the byte it escapes
	}
	return -1, esc
}

// Plain returns the index of the first byte from i on that a JSON string
// cannot hold as it is (a quote, a backslash, a control character) or
// that is not ASCII, len(s) when there is none: the run a validator can
// step over eight bytes at a time.
func Plain(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := load(s, i)
		q, b := x^quotes, x^slash
		// Zero bytes of q and b (a quote, a backslash), bytes below 0x20
		// (x-0x20 borrows), bytes of 0x80 and above (their high bit): the
		// first flagged byte is exact, as a borrow only runs upwards.
		m := ((q-ones)&^q | (b-ones)&^b | (x-0x20*ones)&^x | x) & highs
		if m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// End returns the index just past the JSON value that begins at s[i], or
// -1 when it does not end. Nesting is counted, not followed.
func End(s string, i int) int {
	if i < 0 || i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		end, _ := String(s, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				end, _ := String(s, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i // a number, true, false or null
	for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ']' && s[j] != ' ' && s[j] != '\n' && s[j] != '\r' && s[j] != '\t' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// Unquote is the string a JSON value's text denotes, "" for a value that
// is not a string (gjson's Str). Without escapes it is v's own bytes
// (no copy); with them, a new string.
func Unquote(v string) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if strings.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	return gjson.Parse(v).Str
}

// IsString reports whether the JSON text v is a string.
func IsString(v string) bool { return v != "" && v[0] == '"' }

// Walker walks the members of a JSON object or the elements of a JSON
// array, in order. Member moves to the next one: Key is its key,
// unescaped (as gjson compares keys), "" for an element, and At is where
// its value begins; the caller then reads the value with Skip (its text
// in Val), or walks it itself and Resumes at its end. The zero Walker
// has nothing to walk.
//
// A checked Walker (a Doc's, and the Walk of a checked Walker) checks
// what it walks as Check does, as it goes: its members' syntax, the
// values Skip reads, nesting, and the top level's keys. It ends as the
// text ends early (At -1) at the first problem, without saying which:
// Check says, and a caller whose checked walk failed asks it.
type Walker struct {
	s        string
	i        int  // the next byte to read; once done, just past the value walked, or -1
	obj      bool // an object's members, not an array's elements
	done     bool
	checked  bool
	depth    int  // checked: the objects and arrays around the values walked (1: the top level's)
	n        int  // checked: the members read so far
	kspan    span // checked: where the current member's key is
	key, val string
}

// Walk returns the walker of the value that begins at s[i]: an object's
// members, an array's elements, nothing for any other value.
func Walk(s string, i int) Walker {
	if i >= 0 && i < len(s) && (s[i] == '{' || s[i] == '[') {
		return Walker{s: s, i: i + 1, obj: s[i] == '{'}
	}
	return Walker{s: s, i: End(s, i), done: true}
}

// Members returns the walker of an object's members from s[i] on: just
// past its opening brace, or just past a member's value.
func Members(s string, i int) Walker { return Walker{s: s, i: i, obj: true} }

// Object reports whether w walks an object's members.
func (w *Walker) Object() bool { return w.obj }

// Key is the current member's key, unescaped; "" for an element.
func (w *Walker) Key() string { return w.key }

// Val is the current value's text, once Skip has read it.
func (w *Walker) Val() string { return w.val }

// At is where the walk is: after Member, where the current value begins;
// after Skip, just past it; once done, just past the value walked, or -1
// when the text ended first.
func (w *Walker) At() int { return w.i }

// Text is the text walked.
func (w *Walker) Text() string { return w.s }

// Member moves to the next member or element; false at the end.
func (w *Walker) Member() bool {
	if w.done {
		return false
	}
	if w.checked {
		return w.member()
	}
	s := w.s
	i := Space(s, w.i)
	if i < len(s) && s[i] == ',' {
		i = Space(s, i+1)
	}
	switch {
	case i >= len(s):
		return w.fail()
	case s[i] == '}' || s[i] == ']':
		w.i, w.done = i+1, true
		return false
	case !w.obj:
		w.key, w.i = "", i
		return true
	case s[i] != '"':
		return w.fail()
	}
	end, esc := String(s, i)
	if end < 0 {
		return w.fail()
	}
	w.key = s[i+1 : end-1]
	if esc {
		w.key = gjson.Parse(s[i:end]).Str
	}
	i = Space(s, end)
	if i >= len(s) || s[i] != ':' {
		return w.fail()
	}
	w.i = Space(s, i+1)
	return true
}

// Skip reads the current value's extent into Val.
func (w *Walker) Skip() {
	if w.checked {
		w.skip()
		return
	}
	end := End(w.s, w.i)
	if end < 0 {
		w.fail()
		return
	}
	w.val, w.i = w.s[w.i:end], end
}

// First is the current value's first byte; 0 when the text ends first.
func (w *Walker) First() byte {
	if w.i < 0 || w.i >= len(w.s) {
		return 0
	}
	return w.s[w.i]
}

// Next is Member and Skip.
func (w *Walker) Next() bool {
	if !w.Member() {
		return false
	}
	w.Skip()
	return !w.done
}

// Resume goes on from end, where the caller's own walk of the current
// value ended (-1: the text ended first).
func (w *Walker) Resume(end int) {
	if end < 0 {
		w.fail()
		return
	}
	w.i = end
}

// Seek moves the walk to i, just past a member of the object walked
// (a caller that remembers where it was in text of the same shape).
func (w *Walker) Seek(i int) { w.i = i }

// fail ends a walk of text that is not valid JSON.
func (w *Walker) fail() bool {
	w.i, w.done, w.val = -1, true, ""
	return false
}

// Fields returns the JSON texts of the first members of the object v
// named keys (at most four), as gjson's Get finds them, in one walk that
// ends once each is found; "" for a key v lacks, and for every key when v
// is not an object.
func Fields(v string, keys ...string) (vals [4]string) {
	w := Walk(v, 0)
	if !w.obj {
		return vals
	}
	found := 0
	for found < len(keys) && w.Next() {
		for k, key := range keys {
			if vals[k] == "" && w.key == key {
				vals[k] = w.val
				found++
			}
		}
	}
	return vals
}
