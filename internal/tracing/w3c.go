package tracing

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// ids are a span's identity in its trace: what a W3C traceparent says.
type ids struct {
	trace   [16]byte
	span    [8]byte
	sampled bool
	// state is the client's tracestate, re-serialized; "" when it sent
	// none (or one that does not parse).
	state string
}

// newTraceID is a random trace id, never all zeros.
func newTraceID() (id [16]byte) {
	for id == ([16]byte{}) {
		putUint64(id[:8], rand.Uint64())
		putUint64(id[8:], rand.Uint64())
	}
	return id
}

// newSpanID is a random span id, never all zeros.
func newSpanID() (id [8]byte) {
	for id == ([8]byte{}) {
		putUint64(id[:], rand.Uint64())
	}
	return id
}

func putUint64(b []byte, v uint64) {
	_ = b[7]
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// parseTraceparent reads a W3C traceparent
// (version-traceid-parentid-flags, lowercase hex): ok is false for one
// the Trace Context specification says to ignore (a malformed value,
// version ff, an all-zero id). A version above 00 may carry more after
// its flags, behind a dash. When ok is false the ids mean nothing.
func parseTraceparent(v string) (trace [16]byte, span [8]byte, sampled, ok bool) {
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return trace, span, false, false
	}
	ver, ok1 := hexByte(v[0], v[1])
	flags, ok2 := hexByte(v[53], v[54])
	if !ok1 || !ok2 || ver == 0xff || (ver == 0 && len(v) != 55) || (len(v) > 55 && v[55] != '-') {
		return trace, span, false, false
	}
	if !lowerHex(trace[:], v[3:35]) || !lowerHex(span[:], v[36:52]) ||
		trace == ([16]byte{}) || span == ([8]byte{}) {
		return trace, span, false, false
	}
	return trace, span, flags&1 == 1, true
}

// lowerHex decodes s, lowercase hex of exactly len(dst) bytes, into dst.
func lowerHex(dst []byte, s string) bool {
	for i := range dst {
		b, ok := hexByte(s[2*i], s[2*i+1])
		if !ok {
			return false
		}
		dst[i] = b
	}
	return true
}

func hexByte(hi, lo byte) (byte, bool) {
	h, ok1 := hexDigit(hi)
	l, ok2 := hexDigit(lo)
	return h<<4 | l, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// traceparent is the W3C traceparent that names the span id of trace.
func traceparent(id *ids) string {
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], id.trace[:])
	b[35] = '-'
	hex.Encode(b[36:52], id.span[:])
	copy(b[52:], "-00")
	if id.sampled {
		b[54] = '1'
	}
	return string(b[:])
}

// tracestate is the W3C tracestate h carries, re-serialized ("" when
// none, or when it does not parse: the specification's rule). Several
// tracestate lines are one list.
func tracestate(h http.Header) string {
	vs := h["Tracestate"]
	if len(vs) == 0 {
		return ""
	}
	ts, err := trace.ParseTraceState(strings.Join(vs, ","))
	if err != nil {
		return ""
	}
	return ts.String()
}

// spanKey is the context key of the span a context carries.
type spanKey struct{}

// fromContext is the span ctx carries, nil when none.
func fromContext(ctx context.Context) *span {
	s, _ := ctx.Value(spanKey{}).(*span)
	return s
}

// Inject writes the W3C trace context of the span ctx carries (an
// attempt's) into h: traceparent, and tracestate when the client sent
// one. Without a span in ctx (tracing off) it writes nothing and
// allocates nothing. Every adapter's request goes through it
// (provider.Send).
func Inject(ctx context.Context, h http.Header) {
	s := fromContext(ctx)
	if s == nil {
		return
	}
	h["Traceparent"] = []string{traceparent(&s.id)}
	if s.id.state != "" {
		h["Tracestate"] = []string{s.id.state}
	} else {
		delete(h, "Tracestate")
	}
}

// IDs returns the hex trace and span ids of the span ctx carries, "" and
// "" when it carries none (tests).
func IDs(ctx context.Context) (traceID, spanID string) {
	s := fromContext(ctx)
	if s == nil {
		return "", ""
	}
	return hex.EncodeToString(s.id.trace[:]), hex.EncodeToString(s.id.span[:])
}
