package chat

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// str appends s as a JSON string, escaped as openaiwire writes strings.
func str(dst []byte, s string) []byte { return openaiwire.AppendString(dst, s) }

// strPart appends s escaped as the inside of a JSON string, without
// quotes, for a string written in pieces (escaping works per character,
// so the pieces join into the escaped whole).
func strPart(dst []byte, s string) []byte {
	mark := len(dst)
	dst = str(dst, s)
	n := copy(dst[mark:], dst[mark+1:len(dst)-1])
	return dst[:mark+n]
}

// unsafeString views b as a string without copying. b must not change
// while the string or anything sliced from it is in use.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// unsafeBytes views s as bytes, to be read only.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// idByte reports whether c may appear in a tool_use id: Anthropic's
// clients check ids against ^[a-zA-Z0-9_-]+$.
func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// maxID bounds an id derived from a provider's.
const maxID = 128

// appendID appends prefix and id made valid: bytes outside
// [a-zA-Z0-9_-] become '_', cut to maxID bytes; an empty id becomes
// prefix and 24 random alphanumerics (a provider that gives no tool call
// id still needs one the client can answer, unique across the
// conversation's turns).
func appendID(dst []byte, prefix, id string) []byte {
	dst = append(dst, prefix...)
	if id == "" {
		return appendRandom(dst)
	}
	if len(id) > maxID {
		id = id[:maxID]
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !idByte(c) {
			c = '_'
		}
		dst = append(dst, c)
	}
	return dst
}

// appendToolID appends a provider's tool call id as a tool_use id: made
// valid, or "toolu_" and random alphanumerics when there is none.
func appendToolID(dst []byte, id string) []byte {
	if id == "" {
		return appendID(dst, "toolu_", "")
	}
	return appendID(dst, "", id)
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// appendRandom appends 24 random alphanumerics.
func appendRandom(dst []byte) []byte {
	var b [24]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	for _, c := range b {
		dst = append(dst, alphabet[int(c)%len(alphabet)])
	}
	return dst
}

// appendMessageID appends a message id for the chat completion chatID:
// "msg_" and the chat id made valid (less a "msg_" it may already carry,
// as the anthropic adapter's do), random when there is none.
func appendMessageID(dst []byte, chatID string) []byte {
	if len(chatID) > 4 && chatID[:4] == "msg_" {
		chatID = chatID[4:]
	}
	return appendID(dst, "msg_", chatID)
}

// The walks below read JSON text that is valid (a stream's chunk, by
// provider.Stream's contract; an answer Answer checked; a request the
// proxy checked) without decoding it: a value is handed out
// as its text, or walked in its turn from where it begins, so that text
// read once need not be read again. On text that is not valid JSON a walk
// ends early or reads nonsense, but never reads out of bounds.

// walker walks the members of a JSON object or the elements of a JSON
// array, in order. member moves to the next one: key is a member's key,
// unescaped (as gjson compares keys), "" for an element, and i is where
// its value begins; the caller then reads the value with skip (its text
// in val), or walks it itself and resumes at its end.
type walker struct {
	s        string
	i        int  // the next byte to read; once done, just past the value walked, or -1
	obj      bool // an object's members, not an array's elements
	done     bool
	key, val string
}

// walkAt returns the walker of the value that begins at s[i]: an object's
// members, an array's elements, nothing for any other value.
func walkAt(s string, i int) walker {
	if i < len(s) && (s[i] == '{' || s[i] == '[') {
		return walker{s: s, i: i + 1, obj: s[i] == '{'}
	}
	return walker{s: s, i: valueEnd(s, i), done: true}
}

// member moves to the next member or element; false at the end.
func (w *walker) member() bool {
	if w.done {
		return false
	}
	i := skipSpace(w.s, w.i)
	if i < len(w.s) && w.s[i] == ',' {
		i = skipSpace(w.s, i+1)
	}
	switch {
	case i >= len(w.s):
		return w.fail()
	case w.s[i] == '}' || w.s[i] == ']':
		w.i, w.done = i+1, true
		return false
	case !w.obj:
		w.key, w.i = "", i
		return true
	case w.s[i] != '"':
		return w.fail()
	}
	end, esc := stringEnd(w.s, i)
	if end < 0 {
		return w.fail()
	}
	w.key = w.s[i+1 : end-1]
	if esc {
		w.key = gjson.Parse(w.s[i:end]).Str
	}
	i = skipSpace(w.s, end)
	if i >= len(w.s) || w.s[i] != ':' {
		return w.fail()
	}
	w.i = skipSpace(w.s, i+1)
	return true
}

// skip reads the current value's extent into val.
func (w *walker) skip() {
	end := valueEnd(w.s, w.i)
	if end < 0 {
		w.fail()
		return
	}
	w.val, w.i = w.s[w.i:end], end
}

// first is the current value's first byte; 0 when the text ends first.
func (w *walker) first() byte {
	if w.i < 0 || w.i >= len(w.s) {
		return 0
	}
	return w.s[w.i]
}

// next is member and skip.
func (w *walker) next() bool {
	if !w.member() {
		return false
	}
	w.skip()
	return !w.done
}

// resume goes on from end, where the caller's own walk of the current
// value ended (-1: the text ended first).
func (w *walker) resume(end int) {
	if end < 0 {
		w.fail()
		return
	}
	w.i = end
}

// fail ends a walk of text that is not valid JSON.
func (w *walker) fail() bool {
	w.i, w.done, w.val = -1, true, ""
	return false
}

// skipSpace returns the index of the first byte from i on that is not
// JSON whitespace.
func skipSpace(s string, i int) int {
	for i < len(s) && s[i] <= ' ' { // only whitespace, in valid JSON
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string whose opening
// quote is s[i], or -1 when it does not end, and whether it holds an
// escape. It reads eight bytes at a time for a quote or a backslash: the
// strings of a chunk are mostly short, so a byte loop costs a branch a
// byte and strings.IndexByte a call a string.
func stringEnd(s string, i int) (int, bool) {
	const (
		ones    = 0x0101010101010101
		highs   = 0x8080808080808080
		quotes  = ones * '"'
		slashes = ones * '\\'
	)
	esc := false
	for j := i + 1; j < len(s); {
		if j+8 <= len(s) {
			x := binary.LittleEndian.Uint64(unsafeBytes(s[j : j+8]))
			q, b := x^quotes, x^slashes
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

// valueEnd returns the index just past the JSON value that begins at
// s[i], or -1 when it does not end.
func valueEnd(s string, i int) int {
	if i < 0 || i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		end, _ := stringEnd(s, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				end, _ := stringEnd(s, j)
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

// fields returns the JSON texts of the first members of the object v
// named keys (at most four), as gjson's Get finds them, in one walk that
// ends once each is found; "" for a key v lacks, and for every key when v
// is not an object.
func fields(v string, keys ...string) (vals [4]string) {
	w := walkAt(v, 0)
	if !w.obj {
		return vals
	}
	found := 0
	for found < len(keys) && w.next() {
		for k, key := range keys {
			if vals[k] == "" && w.key == key {
				vals[k] = w.val
				found++
			}
		}
	}
	return vals
}

// strValue is the string a JSON value's text denotes, "" for a value
// that is not a string (gjson's Str).
func strValue(v string) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if strings.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	return gjson.Parse(v).Str
}

// isString reports whether the JSON text v is a string.
func isString(v string) bool { return v != "" && v[0] == '"' }

// lit appends the string whose JSON literal is v as str writes it: v
// itself when it is already written so (openaiwire.Canonical; most text
// is), else decoded and written again. A value that is not a string is
// written "" (gjson's Str).
func lit(dst []byte, v string) []byte {
	if openaiwire.Canonical(v) {
		return append(dst, v...)
	}
	return str(dst, strValue(v))
}

// litPart is lit without the quotes, as strPart is str.
func litPart(dst []byte, v string) []byte {
	if openaiwire.Canonical(v) {
		return append(dst, v[1:len(v)-1]...)
	}
	return strPart(dst, strValue(v))
}

// intValue is the integer a JSON value's text denotes as gjson reads one
// (Int): a plain integer directly, anything else through gjson; 0 for
// none.
func intValue(v string) int64 {
	if v == "" {
		return 0
	}
	digits := v
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return gjson.Parse(v).Int()
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return gjson.Parse(v).Int()
		}
		n = n*10 + int64(c-'0')
	}
	if v[0] == '-' {
		n = -n
	}
	return n
}
