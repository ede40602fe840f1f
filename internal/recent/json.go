package recent

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends q as a JSON object, the one encoding/json makes of a
// record Since returned, reading the texts where the record keeps them:
// it allocates nothing, so that the status page's event stream encodes a
// record for a fraction of what reflection costs (docs/ARCHITECTURE.md,
// "Status page").
func (q *Request) AppendJSON(dst []byte) []byte {
	dst = strconv.AppendUint(append(dst, `{"seq":`...), q.Seq, 10)
	dst = append(dst, `,"at":"`...)
	dst = append(q.At.AppendFormat(dst, time.RFC3339Nano), '"')
	dst = appendString(append(dst, `,"id":`...), q.ID)
	dst = appendString(append(dst, `,"api":`...), q.API)
	dst = appendString(append(dst, `,"asked":`...), string(q.asked[:q.askedN]))
	dst = appendString(append(dst, `,"model":`...), q.Model)
	dst = appendString(append(dst, `,"key":`...), q.Key)
	dst = strconv.AppendInt(append(dst, `,"status":`...), int64(q.Status), 10)
	dst = appendString(append(dst, `,"provider":`...), q.Provider)
	dst = appendString(append(dst, `,"target":`...), q.Target)
	dst = strconv.AppendInt(append(dst, `,"tier":`...), int64(q.Tier), 10)
	dst = strconv.AppendInt(append(dst, `,"attempt_count":`...), int64(q.N), 10)
	dst = append(dst, `,"attempts":[`...)
	for i, a := range q.attempts[:min(q.N, MaxAttempts)] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(append(dst, `{"provider":`...), a.Provider)
		dst = append(appendString(append(dst, `,"kind":`...), a.Kind), '}')
	}
	dst = strconv.AppendInt(append(dst, `],"ttft_ns":`...), int64(q.TTFT), 10)
	dst = strconv.AppendInt(append(dst, `,"total_ns":`...), int64(q.Total), 10)
	dst = appendFloat(append(dst, `,"cost_usd":`...), q.CostUSD)
	dst = strconv.AppendBool(append(dst, `,"degraded":`...), q.Degraded)
	dst = strconv.AppendBool(append(dst, `,"hedged":`...), q.Hedged)
	dst = strconv.AppendBool(append(dst, `,"rescued":`...), q.Rescued)
	dst = appendString(append(dst, `,"affinity":`...), q.Affinity)
	dst = appendString(append(dst, `,"error":`...), string(q.err[:q.errN]))
	return append(dst, '}')
}

// appendFloat appends f as encoding/json does.
func appendFloat(dst []byte, f float64) []byte {
	if abs := max(f, -f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		n := len(dst)
		dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
		// e-09 to e-9, as encoding/json writes it.
		if m := len(dst) - n; m >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
		return dst
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it: quotes, backslashes, control characters, <, > and &,
// U+2028 and U+2029, and invalid UTF-8 as U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(dst, s[start:]...), '"')
}

// Copy appends to dst the records after seq still held, at most limit
// (the newest; limit <= 0: every one held), as Since does, without
// filling Asked, Error and Attempts: for AppendJSON, which reads them
// where the record keeps them. With a dst of room enough it allocates
// nothing.
func (r *Ring) Copy(seq uint64, limit int, dst []Request) ([]Request, uint64) {
	if r == nil || len(r.buf) == 0 {
		return dst, seq
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	first, last := r.spanLocked(seq, limit)
	for s := first; s <= last; s++ {
		dst = append(dst, r.buf[s%uint64(len(r.buf))])
	}
	return dst, last
}
