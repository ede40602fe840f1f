package provider

import (
	"cmp"
	"slices"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// A target's cap on the answer's length (docs/ARCHITECTURE.md, "Output
// limits"): a model that writes at most 16384 tokens refuses a request
// asking for 64000 ("max_tokens is too large") instead of answering it,
// so the limit it is sent is lowered to what it can give. A limit at or
// under the cap, and a request without one, are sent unchanged.

// CapOutput is n, an output limit, lowered to limit when limit is set
// (above 0) and n exceeds it.
func CapOutput(n, limit int64) int64 {
	if limit > 0 && n > limit {
		return limit
	}
	return n
}

// The top-level fields of an op's body that limit the answer's length, as
// its provider reads them.
var (
	chatLimits      = []string{"max_completion_tokens", "max_tokens"}
	maxTokensLimit  = []string{"max_tokens"}
	responsesLimits = []string{"max_output_tokens"}
)

// limitFields are op's output limit fields; none for embeddings.
func limitFields(op Op) []string {
	switch op {
	case OpChat:
		return chatLimits
	case OpCompletions, OpMessages:
		return maxTokensLimit
	case OpResponses:
		return responsesLimits
	}
	return nil
}

// splice is a value of Body written anew: the bytes [start, end), replaced
// by the model's name or the cap.
type splice struct {
	start, end int
	model      bool
}

// appendCapped is AppendBody for a request to a capped target: the model
// swapped as AppendBody swaps it, and every output limit above the cap
// written as the cap. Finding the limits takes a pass over the body's
// top level (gjson, no copy of the body: about 40 µs for a 100 KB
// conversation), which a request to a target without a cap never pays.
func (r *Request) appendCapped(dst []byte) []byte {
	var buf [3]splice // the model and at most two limits
	sp := buf[:0]
	if r.ModelEnd > r.ModelStart {
		sp = append(sp, splice{start: r.ModelStart, end: r.ModelEnd, model: true})
	}
	if fields := limitFields(r.Op); len(fields) > 0 {
		// Body is not modified while it is read, and nothing read from it
		// outlives this call but offsets. One pass over the top level
		// finds every field (a conversation's messages are skipped, not
		// decoded).
		// The bodies the router sends were checked: a top-level key is
		// never repeated, so the pass ends once every field was seen.
		seen := 0
		gjson.Parse(unsafe.String(unsafe.SliceData(r.Body), len(r.Body))).ForEach(func(k, v gjson.Result) bool {
			if !slices.Contains(fields, k.Str) {
				return true
			}
			seen++
			if v.Type == gjson.Number && v.Num > float64(r.MaxOutputTokens) {
				sp = append(sp, splice{start: v.Index, end: v.Index + len(v.Raw)})
			}
			return seen < len(fields)
		})
	}
	slices.SortFunc(sp, func(a, b splice) int { return cmp.Compare(a.start, b.start) })
	at := 0
	for _, s := range sp {
		dst = append(dst, r.Body[at:s.start]...)
		if s.model {
			// A string always encodes, and a pointer costs no allocation.
			dst, _ = openaiwire.Append(dst, &r.Model)
		} else {
			dst = strconv.AppendInt(dst, r.MaxOutputTokens, 10)
		}
		at = s.end
	}
	return append(dst, r.Body[at:]...)
}
