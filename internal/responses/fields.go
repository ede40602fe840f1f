package responses

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// raw is v, a value's text in dc.s, as a json.RawMessage: its bytes are
// dc.s's (never written: capped, an append copies).
func (dc *decoder) raw(v string) json.RawMessage {
	if v == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(v), len(v))[:len(v):len(v)]
}

// field is the index in names of key: the exact name, else the first
// equal to it under Unicode case folding (encoding/json's matching);
// -1 none.
func field(key string, names []string) int {
	for i, n := range names {
		if key == n {
			return i
		}
	}
	for i, n := range names {
		if strings.EqualFold(key, n) {
			return i
		}
	}
	return -1
}

// kind is what the JSON value v is, as encoding/json's type errors say.
func kind(v string) string {
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// typeError is the refusal of a value of the wrong type at path: want
// what it must be, got what it is (encoding/json's UnmarshalTypeError,
// worded by decodeError).
func typeError(path, want, got string) *Error {
	return BadRequest(path, "%s must be %s, got %s", orBody(path), want, got)
}

// The fields of each type, each read from its value's text v: null
// leaves a value as it is and a pointer nil, as encoding/json does.
func str(path, v string, dst *string) *Error {
	switch {
	case v[0] == '"':
		*dst = unquote(v)
	case v != "null":
		return typeError(path, "a string", kind(v))
	}
	return nil
}

func strPtr(path, v string, dst **string) *Error {
	switch {
	case v[0] == '"':
		s := unquote(v)
		*dst = &s
	case v == "null":
		*dst = nil
	default:
		return typeError(path, "a string", kind(v))
	}
	return nil
}

func boolPtr(path, v string, dst **bool) *Error {
	switch v {
	case "true", "false":
		b := v == "true"
		*dst = &b
	case "null":
		*dst = nil
	default:
		return typeError(path, "a boolean", kind(v))
	}
	return nil
}

func intPtr(path, v string, dst **int64) *Error {
	switch k := kind(v); k {
	case "number":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return typeError(path, "an integer", "number "+v)
		}
		*dst = &n
	case "null":
		*dst = nil
	default:
		return typeError(path, "an integer", k)
	}
	return nil
}

func floatPtr(path, v string, dst **float64) *Error {
	switch k := kind(v); k {
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return typeError(path, "a number", "number "+v)
		}
		*dst = &f
	case "null":
		*dst = nil
	default:
		return typeError(path, "a number", k)
	}
	return nil
}

// strSlice reads an array of strings into dst, reusing its elements as
// encoding/json does (a null element keeps what was there).
func strSlice(path, v string, dst *[]string) *Error {
	switch k := kind(v); k {
	case "null":
		*dst = nil
		return nil
	case "array":
	default:
		return typeError(path, "an array", k)
	}
	out := (*dst)[:0]
	if out == nil {
		out = []string{}
	}
	var first *Error
	for w := jsonscan.Walk(v, 0); w.Next(); {
		if len(out) < cap(out) {
			out = out[:len(out)+1]
		} else {
			out = append(out, "")
		}
		if e := str(path, w.Val(), &out[len(out)-1]); e != nil && first == nil {
			first = e
		}
	}
	*dst = out
	return first
}

// object walks the object v's members, calling f with each one's field
// index in names (-1 none) and value text, and returns f's first
// refusal; one of another type is refused at path.
func object(path, v string, names []string, f func(i int, v string) *Error) *Error {
	if v[0] != '{' {
		return typeError(path, "an object", kind(v))
	}
	var first *Error
	for w := jsonscan.Walk(v, 0); w.Next(); {
		if i := field(w.Key(), names); i >= 0 {
			if e := f(i, w.Val()); e != nil && first == nil {
				first = e
			}
		}
	}
	return first
}

var (
	textFields   = []string{"format", "verbosity"}
	formatFields = []string{"type", "name", "description", "schema", "strict"}
)

// textConfig reads text into *dst, merged into what is there.
func (dc *decoder) textConfig(v string, dst **wire.TextConfig) *Error {
	if v == "null" {
		*dst = nil
		return nil
	}
	if *dst == nil {
		*dst = &wire.TextConfig{}
	}
	t := *dst
	return object("text", v, textFields, func(i int, v string) *Error {
		if i == 1 {
			return str("text.verbosity", v, &t.Verbosity)
		}
		if v == "null" {
			t.Format = nil
			return nil
		}
		if t.Format == nil {
			t.Format = &wire.Format{}
		}
		f := t.Format
		return object("text.format", v, formatFields, func(i int, v string) *Error {
			switch i {
			case 0:
				return str("text.format.type", v, &f.Type)
			case 1:
				return str("text.format.name", v, &f.Name)
			case 2:
				return str("text.format.description", v, &f.Description)
			case 3:
				f.Schema = dc.raw(v)
				return nil
			}
			return boolPtr("text.format.strict", v, &f.Strict)
		})
	})
}

var reasoningFields = []string{"effort", "summary"}

// reasoning reads reasoning into *dst, merged into what is there.
func reasoning(v string, dst **wire.Reasoning) *Error {
	if v == "null" {
		*dst = nil
		return nil
	}
	if *dst == nil {
		*dst = &wire.Reasoning{}
	}
	r := *dst
	return object("reasoning", v, reasoningFields, func(i int, v string) *Error {
		if i == 0 {
			return strPtr("reasoning.effort", v, &r.Effort)
		}
		return strPtr("reasoning.summary", v, &r.Summary)
	})
}

// metadata reads metadata into *dst, added to what is there.
func metadata(v string, dst *map[string]string) *Error {
	switch k := kind(v); k {
	case "null":
		*dst = nil
		return nil
	case "object":
	default:
		return typeError("metadata", "an object", k)
	}
	if strings.Contains(v, `\u`) {
		// A key may hold an escape Walker's Key reads otherwise (an
		// unpaired surrogate): encoding/json reads it, rarely.
		if err := json.Unmarshal([]byte(v), dst); err != nil {
			return decodeError("metadata", err)
		}
		return nil
	}
	if *dst == nil {
		*dst = map[string]string{}
	}
	var first *Error
	for w := jsonscan.Walk(v, 0); w.Next(); {
		var s string
		if e := str("metadata", w.Val(), &s); e != nil {
			if first == nil {
				first = e
			}
		}
		(*dst)[w.Key()] = s
	}
	return first
}

// isNull reports whether a raw value is absent or null.
func isNull[T string | json.RawMessage](raw T) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// unquote is the string the JSON string v denotes, as encoding/json
// reads it (an unpaired surrogate escape is U+FFFD: gjson's reading,
// jsonscan.Unquote, differs there). Without escapes it is v's own bytes.
func unquote(v string) string {
	v = v[1 : len(v)-1]
	i := strings.IndexByte(v, '\\')
	if i < 0 {
		return v
	}
	b := make([]byte, 0, len(v))
	for i >= 0 {
		b = append(b, v[:i]...)
		v = v[i:]
		if len(v) < 2 {
			return string(b) // cannot happen in checked text
		}
		n := 2
		switch c := v[1]; c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(v)
			n = 6
			if utf16.IsSurrogate(r) {
				if dec := utf16.DecodeRune(r, hex4(v[6:])); dec != unicode.ReplacementChar {
					r, n = dec, 12
				} else {
					r = unicode.ReplacementChar
				}
			}
			if r < 0 {
				r = unicode.ReplacementChar // cannot happen in checked text
			}
			b = utf8.AppendRune(b, r)
		default: // '"', '\\', '/'
			b = append(b, c)
		}
		v = v[n:]
		i = strings.IndexByte(v, '\\')
	}
	b = append(b, v...)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// hex4 is the rune of the \uXXXX escape that begins s; -1 when s does not
// begin with one.
func hex4(s string) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range []byte(s[2:6]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
