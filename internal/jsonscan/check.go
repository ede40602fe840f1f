package jsonscan

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Check and Valid are the bounded check of an untrusted document
// (docs/ARCHITECTURE.md, "Hostile clients"): syntax (RFC 8259), UTF-8, a
// nesting limit, and duplicate keys of the top-level object, in one pass
// that keeps an explicit stack of at most MaxDepth bytes on its own
// frame. Recursive validators (gjson.Valid among them) use one stack
// frame per nesting level, so a body of six million '[' overflows the
// goroutine stack, which Go cannot recover from. Duplicate top-level keys
// are refused because the router reads and rewrites top-level fields
// ("model", "stream") while a provider may keep another occurrence:
// {"model":"cheap","model":"expensive"} must not be routed as one model
// and served as the other. Keys are compared after unescaping, so
// "mod\u0065l" is "model"; keys of nested objects are not compared.

// MaxDepth is the deepest nesting Check accepts: objects and arrays
// inside each other, the outermost counting 1. Real requests (tool
// schemas included) stay far below it; the adapters' decoders
// (encoding/json allows 10,000) stay well above it.
const MaxDepth = 256

// MaxTopLevelKeys bounds the members of the top-level object, which is
// what keeps the duplicate check linear in the body.
const MaxTopLevelKeys = 1024

// Problem is the class of an Error.
type Problem uint8

const (
	// Syntax: not JSON (RFC 8259), including control characters in strings.
	Syntax Problem = iota
	// UTF8: a string holds bytes that are not UTF-8.
	UTF8
	// Depth: objects and arrays nest deeper than MaxDepth.
	Depth
	// DuplicateKey: a top-level key occurs twice (Error.Key says which).
	DuplicateKey
	// TooManyKeys: the top-level object has more than MaxTopLevelKeys keys.
	TooManyKeys
)

// Error says what is wrong and where.
type Error struct {
	// Problem classifies the error.
	Problem Problem
	// Offset is the byte offset of the problem in the document.
	Offset int
	// Reason is a lower-case phrase: "invalid character 'x'",
	// "nesting deeper than 256 levels", "invalid UTF-8", ...
	Reason string
	// Key is the repeated key (unescaped) for DuplicateKey; "" otherwise.
	Key string
}

func (e *Error) Error() string {
	return e.Reason + " at byte " + strconv.Itoa(e.Offset)
}

// Valid reports whether doc is one valid JSON value no deeper than
// MaxDepth. It does not compare keys.
func Valid(doc []byte) bool {
	return run(doc, false) == nil
}

// Check validates doc, which must be one JSON value (any type) with
// optional surrounding whitespace, and, when it is an object, that its
// keys are distinct. It returns nil or an *Error.
func Check(doc []byte) error {
	if err := run(doc, true); err != nil {
		return err
	}
	return nil
}

// span is one top-level key as it appears in the document (quotes
// excluded); esc marks keys with backslash escapes.
type span struct {
	start, end int
	esc        bool
}

const (
	inObject = '{'
	inArray  = '['
)

// smallKeys is how many top-level keys are compared pairwise, on the
// stack; more go through a map.
const smallKeys = 32

func run(b []byte, dupKeys bool) *Error {
	var keysBuf [smallKeys]span
	keys := keysBuf[:0]
	i := skipWS(b, 0)
	if i == len(b) {
		return &Error{Offset: i, Reason: "empty document"}
	}
	i, keys, err := value(b, i, 0, keys, dupKeys)
	if err != nil {
		return err
	}
	if i = skipWS(b, i); i != len(b) {
		return &Error{Offset: i, Reason: "unexpected data after the JSON value"}
	}
	if dupKeys {
		return duplicates(b, keys)
	}
	return nil
}

// value checks the value that begins at b[i] (whitespace skipped),
// inside outer objects and arrays, and returns the index just past it.
// When record is set (outer is 0), the keys of the value's own members
// are appended to keys, at most MaxTopLevelKeys, and returned.
func value(b []byte, i, outer int, keys []span, record bool) (int, []span, *Error) {
	var (
		stack [MaxDepth]byte
		depth int // inside the value: stack[:depth]
	)
value:
	// A value starts at b[i] (whitespace skipped).
	if i >= len(b) {
		return i, keys, &Error{Offset: i, Reason: "unexpected end of the document"}
	}
	switch b[i] {
	case '{', '[':
		if outer+depth == MaxDepth {
			return i, keys, &Error{Problem: Depth, Offset: i, Reason: "nesting deeper than " + strconv.Itoa(MaxDepth) + " levels"}
		}
		stack[depth] = b[i]
		depth++
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == closer(stack[depth-1]) {
			depth--
			i++
			goto after
		}
		if stack[depth-1] == inObject {
			goto member
		}
		goto value
	case '"':
		end, _, err := scanString(b, i)
		if err != nil {
			return i, keys, err
		}
		i = end
	case 't':
		if !hasLiteral(b, i, "true") {
			return i, keys, invalidAt(b, i)
		}
		i += 4
	case 'f':
		if !hasLiteral(b, i, "false") {
			return i, keys, invalidAt(b, i)
		}
		i += 5
	case 'n':
		if !hasLiteral(b, i, "null") {
			return i, keys, invalidAt(b, i)
		}
		i += 4
	default:
		end, err := scanNumber(b, i)
		if err != nil {
			return i, keys, err
		}
		i = end
	}
after:
	// A value ended just before b[i].
	if depth == 0 {
		return i, keys, nil
	}
	if i = skipWS(b, i); i >= len(b) {
		return i, keys, &Error{Offset: i, Reason: "unexpected end of the document"}
	}
	switch top := stack[depth-1]; {
	case b[i] == ',':
		i = skipWS(b, i+1)
		if top == inObject {
			goto member
		}
		goto value
	case b[i] == closer(top):
		depth--
		i++
		goto after
	}
	return i, keys, invalidAt(b, i)
member:
	// An object member starts at b[i]: its key, recorded at the top
	// level, then its value.
	{
		var (
			k   span
			err *Error
		)
		if i, k, err = key(b, i); err != nil {
			return i, keys, err
		}
		if depth == 1 && record {
			if len(keys) == MaxTopLevelKeys {
				return i, keys, &Error{Problem: TooManyKeys, Offset: k.start - 1, Reason: "more than " + strconv.Itoa(MaxTopLevelKeys) + " top-level keys"}
			}
			keys = append(keys, k)
		}
	}
	goto value
}

func closer(open byte) byte {
	if open == inObject {
		return '}'
	}
	return ']'
}

// key scans `"name" :` at b[i] and returns the index of the value after
// it and where the name is.
func key(b []byte, i int) (int, span, *Error) {
	if i >= len(b) || b[i] != '"' {
		if i >= len(b) {
			return i, span{}, &Error{Offset: i, Reason: "unexpected end of the document"}
		}
		return i, span{}, &Error{Offset: i, Reason: "invalid character " + quoteByte(b[i]) + ": want a string key"}
	}
	end, esc, err := scanString(b, i)
	if err != nil {
		return i, span{}, err
	}
	k := span{start: i + 1, end: end - 1, esc: esc}
	i = skipWS(b, end)
	if i >= len(b) || b[i] != ':' {
		if i >= len(b) {
			return i, k, &Error{Offset: i, Reason: "unexpected end of the document"}
		}
		return i, k, &Error{Offset: i, Reason: "invalid character " + quoteByte(b[i]) + ": want ':' after a key"}
	}
	return skipWS(b, i+1), k, nil
}

// duplicates reports the first key of keys that occurs twice.
func duplicates(b []byte, keys []span) *Error {
	if len(keys) < 2 {
		return nil
	}
	name := func(k span) string {
		if !k.esc {
			return string(b[k.start:k.end])
		}
		var s string
		_ = json.Unmarshal(b[k.start-1:k.end+1], &s) // valid: scanned above
		return s
	}
	if len(keys) <= smallKeys {
		for j := 1; j < len(keys); j++ {
			for i := 0; i < j; i++ {
				if sameKey(b, keys[i], keys[j], name) {
					return &Error{Problem: DuplicateKey, Offset: keys[j].start - 1, Reason: "duplicate key " + strconv.Quote(name(keys[j])), Key: name(keys[j])}
				}
			}
		}
		return nil
	}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		n := name(k)
		if _, dup := seen[n]; dup {
			return &Error{Problem: DuplicateKey, Offset: k.start - 1, Reason: "duplicate key " + strconv.Quote(n), Key: n}
		}
		seen[n] = struct{}{}
	}
	return nil
}

func sameKey(b []byte, x, y span, name func(span) string) bool {
	if !x.esc && !y.esc {
		return string(b[x.start:x.end]) == string(b[y.start:y.end])
	}
	return name(x) == name(y)
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// scanString scans the string starting at the quote b[i] and returns the
// index after its closing quote and whether it has escapes.
func scanString(b []byte, i int) (end int, esc bool, err *Error) {
	i++
	for i < len(b) {
		// Fast path: the plain bytes most strings are made of, eight at
		// a step.
		i = Plain(unsafe.String(unsafe.SliceData(b), len(b)), i)
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, &Error{Offset: i, Reason: "unexpected end of the document"}
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, esc, &Error{Offset: i, Reason: "invalid \\u escape in a string"}
				}
				i += 6
			default:
				return i, esc, &Error{Offset: i, Reason: "invalid escape " + strconv.Quote(string(b[i:i+2])) + " in a string"}
			}
		case c < 0x20:
			return i, esc, &Error{Offset: i, Reason: "control character " + quoteByte(c) + " in a string"}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, esc, &Error{Problem: UTF8, Offset: i, Reason: "invalid UTF-8 in a string"}
			}
			i += size
		}
	}
	return i, esc, &Error{Offset: i, Reason: "unexpected end of the document in a string"}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func scanNumber(b []byte, i int) (int, *Error) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		if i >= len(b) {
			return i, &Error{Offset: i, Reason: "unexpected end of the document"}
		}
		return i, invalidAt(b, start)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, &Error{Offset: i, Reason: "invalid number: want a digit after '.'"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, &Error{Offset: i, Reason: "invalid number: want a digit in the exponent"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func invalidAt(b []byte, i int) *Error {
	if i >= len(b) {
		return &Error{Offset: i, Reason: "unexpected end of the document"}
	}
	if b[i] >= utf8.RuneSelf {
		return &Error{Offset: i, Reason: "invalid character (byte " + strconv.Itoa(int(b[i])) + ")"}
	}
	return &Error{Offset: i, Reason: "invalid character " + quoteByte(b[i])}
}

func quoteByte(c byte) string {
	return strconv.QuoteRune(rune(c))
}
