package openaiwire

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// appendChunk appends c's JSON exactly as encoding/json writes it (HTML
// escaping off), without reflection: a translated stream writes one chunk
// per upstream event, and encoding/json's reflection was most of what
// translating a stream cost (docs/ARCHITECTURE.md, "Streaming"). ok false
// means c has a part this encoder leaves to encoding/json (usage, or
// log probabilities other than null); nothing was appended then.
// FuzzChunkEncoding keeps the two byte-for-byte equal.
func appendChunk(dst []byte, c *ChatCompletionChunk) (out []byte, ok bool) {
	if c.Usage != nil {
		return dst, false
	}
	for i := range c.Choices {
		if lp := c.Choices[i].Logprobs; lp != nil && string(lp) != "null" {
			return dst, false
		}
	}
	b := append(dst, `{"id":`...)
	b = appendString(b, c.ID)
	b = append(b, `,"object":`...)
	b = appendString(b, c.Object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, c.Created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, c.Model)
	b = append(b, `,"choices":`...)
	if c.Choices == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range c.Choices {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendChunkChoice(b, &c.Choices[i])
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

func appendChunkChoice(b []byte, ch *ChunkChoice) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(ch.Index), 10)
	b = append(b, `,"delta":{`...)
	d := &ch.Delta
	sep := false
	if d.Role != "" {
		b = append(b, `"role":`...)
		b = appendString(b, d.Role)
		sep = true
	}
	if d.Content != nil {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"content":`...)
		b = appendString(b, *d.Content)
		sep = true
	}
	if len(d.ToolCalls) > 0 {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"tool_calls":[`...)
		for i := range d.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendToolCallDelta(b, &d.ToolCalls[i])
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	if ch.Logprobs != nil {
		b = append(b, `,"logprobs":null`...)
	}
	b = append(b, `,"finish_reason":`...)
	if ch.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, *ch.FinishReason)
	}
	return append(b, '}')
}

func appendToolCallDelta(b []byte, t *ToolCallDelta) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(t.Index), 10)
	if t.ID != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, t.ID)
	}
	if t.Type != "" {
		b = append(b, `,"type":`...)
		b = appendString(b, t.Type)
	}
	b = append(b, `,"function":{`...)
	if t.Function.Name != "" {
		b = append(b, `"name":`...)
		b = appendString(b, t.Function.Name)
		b = append(b, ',')
	}
	b = append(b, `"arguments":`...)
	b = appendString(b, t.Function.Arguments)
	return append(b, "}}"...)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, as Append writes a *string,
// without Append's interface value: a writer that escapes many strings
// (the Messages API's translation) calls it directly.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// Canonical reports whether lit is a JSON string literal, quotes
// included, exactly as AppendString writes the string it denotes: a
// writer may then copy it instead of decoding it and encoding it again
// (the Messages API's translation copies most of a request's text so).
// It is AppendString's rule read backwards: valid UTF-8 without U+2028,
// U+2029 or control characters, and escapes only for '"', '\\', the
// control characters (\b, \f, \n, \r, \t, else \u00xx in lower case)
// and U+2028 and U+2029 (\u2028, \u2029). (The \ufffd AppendString
// writes for invalid UTF-8 is not canonical: it denotes U+FFFD, which
// AppendString writes as it is.)
func Canonical(lit string) bool {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return false
	}
	s := lit[1 : len(lit)-1]
	for i := 0; i < len(s); {
		for i+8 <= len(s) && plain8(s[i:i+8]) { // most text: eight bytes a step
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return false
			}
			i += size
			continue
		}
		if c < 0x20 || c == '"' {
			return false
		}
		if c != '\\' {
			i++
			continue
		}
		if i+1 == len(s) {
			return false
		}
		switch s[i+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			i += 2
			continue
		case 'u':
		default:
			return false
		}
		if i+6 > len(s) {
			return false
		}
		switch u := s[i+2 : i+6]; {
		case u == "2028" || u == "2029":
		case u[0] != '0' || u[1] != '0' || u[2] != '0' && u[2] != '1' || strings.IndexByte(hexDigits, u[3]) < 0:
			return false
		default:
			switch u[2:] {
			case "08", "09", "0a", "0c", "0d": // written \b, \t, \n, \f, \r
				return false
			}
		}
		i += 6
	}
	return true
}

// plain8 reports whether the eight bytes of s (its length; read at once,
// without a copy) are all printable ASCII
// other than '"' and '\\': bytes AppendString writes as they are, and
// most of any text.
func plain8(s string) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s), 8))
	q, b := x^(ones*'"'), x^(ones*'\\')
	// The high bit of a byte that is ≥ 0x80, < 0x20 (the subtraction
	// borrows only from a byte below it), or a quote or a backslash (xor
	// made it zero); false positives only above a true one.
	return (x|(x-ones*0x20)&^x|(q-ones)&^q|(b-ones)&^b)&highs == 0
}

// appendString appends s as a JSON string the way encoding/json does with
// HTML escaping off: '"' and '\\' escaped, control characters as \b, \f,
// \n, \r, \t or \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped (JavaScript line terminators), everything else as is.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
