package chat

import (
	"crypto/rand"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
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

// lit appends the string whose JSON literal is v as str writes it: v
// itself when it is already written so (openaiwire.Canonical; most text
// is), else decoded and written again. A value that is not a string is
// written "" (gjson's Str).
func lit(dst []byte, v string) []byte {
	if openaiwire.Canonical(v) {
		return append(dst, v...)
	}
	return str(dst, jsonscan.Unquote(v))
}

// litPart is lit without the quotes, as strPart is str.
func litPart(dst []byte, v string) []byte {
	if openaiwire.Canonical(v) {
		return append(dst, v[1:len(v)-1]...)
	}
	return strPart(dst, jsonscan.Unquote(v))
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
