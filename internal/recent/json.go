package recent

import (
	"strconv"
	"time"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
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

// appendString appends s as a JSON string, escaped as every JSON the
// router writes is (openaiwire.AppendString: encoding/json's escaping but
// HTML's: the page inserts every string as text).
func appendString(dst []byte, s string) []byte { return openaiwire.AppendString(dst, s) }

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
