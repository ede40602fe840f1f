package proxy

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// writeError is the one function that writes an error response. code is
// error.code; typ is error.type; param "" is written as null. retryAfter >
// 0 adds Retry-After in whole seconds, rounded up.
func writeError(w http.ResponseWriter, status int, typ, code, param, message string, retryAfter time.Duration) {
	h := w.Header()
	h[hdrCType] = valJSON
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(retryAfter.Seconds())), 10))
	}
	b := appendErrorJSON(make([]byte, 0, 128+len(message)), typ, code, param, message)
	b = append(b, '\n')
	setHeader(h, hdrCLength, strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// appendErrorJSON appends {"error":{"message","type","param","code"}}.
func appendErrorJSON(b []byte, typ, code, param, message string) []byte {
	b = append(b, `{"error":{"message":`...)
	b = provider.AppendJSONString(b, message)
	b = append(b, `,"type":`...)
	b = provider.AppendJSONString(b, typ)
	b = append(b, `,"param":`...)
	b = appendNullable(b, param)
	b = append(b, `,"code":`...)
	b = appendNullable(b, code)
	return append(b, "}}"...)
}

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return provider.AppendJSONString(b, s)
}

func (e *apiError) write(w http.ResponseWriter) {
	if e.endConn {
		endConnection(w)
	}
	writeError(w, e.status, e.typ, e.code, e.param, e.message, e.retryAfter)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
