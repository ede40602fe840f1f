package answer

import "net/http"

// Response header names in canonical form (textproto.CanonicalMIMEHeaderKey),
// so setting them is a map write: Header.Set would re-canonicalize
// "X-LLMRouter-…" and allocate on every request.
const (
	hdrRequestID = "X-Request-Id"
	hdrProvider  = "X-Llmrouter-Provider"
	hdrModel     = "X-Llmrouter-Model"
	hdrTier      = "X-Llmrouter-Tier"
	hdrAttempts  = "X-Llmrouter-Attempts"
	hdrDegraded  = "X-Llmrouter-Degraded"
	hdrOverhead  = "X-Llmrouter-Overhead-Ms"
	hdrCost      = "X-Llmrouter-Cost-Usd"
	hdrHedged    = "X-Llmrouter-Hedged"
	hdrCType     = "Content-Type"
	hdrCLength   = "Content-Length"
	// hdrShouldRetry is the Stainless SDKs' (OpenAI's, Anthropic's)
	// x-should-retry, in canonical form.
	hdrShouldRetry = "X-Should-Retry"
)

// Shared single-value slices for constant header values. net/http only
// reads header values, so sharing them across responses is safe.
var (
	valJSON        = []string{"application/json"}
	valTrue        = []string{"true"}
	valFalse       = []string{"false"}
	valBearerRealm = []string{`Bearer realm="llmrouter"`}
)

// setHeader sets a canonical key to one value.
func setHeader(h http.Header, key, v string) { h[key] = []string{v} }

// SetProvider sets X-LLMRouter-Provider, the provider an answer comes
// from, on h.
func SetProvider(h http.Header, name string) { setHeader(h, hdrProvider, name) }
