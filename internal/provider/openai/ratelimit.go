package openai

import (
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// maxWait caps any wait read from a header or a message, like
// provider.RetryAfter does: a day covers Azure's "retry after 86400
// seconds" and no more.
const maxWait = 24 * time.Hour

// Header names in canonical form, computed once: they are looked up as
// they are (provider.Head.Get).
var (
	hLimitRequests     = textproto.CanonicalMIMEHeaderKey("x-ratelimit-limit-requests")
	hLimitTokens       = textproto.CanonicalMIMEHeaderKey("x-ratelimit-limit-tokens")
	hRemainingRequests = textproto.CanonicalMIMEHeaderKey("x-ratelimit-remaining-requests")
	hRemainingTokens   = textproto.CanonicalMIMEHeaderKey("x-ratelimit-remaining-tokens")
	hResetRequests     = textproto.CanonicalMIMEHeaderKey("x-ratelimit-reset-requests")
	hResetTokens       = textproto.CanonicalMIMEHeaderKey("x-ratelimit-reset-tokens")
	hAzureResetTokens  = textproto.CanonicalMIMEHeaderKey("x-rate-limit-reset-tokens") // sic: Azure's other spelling, bare seconds
)

// ParseRateLimit reads the budget an OpenAI-family response announced
// (OpenAI, Azure, and the OpenAI-compatible clouds that copy OpenAI's
// headers). Every header is optional:
//   - x-ratelimit-limit-{requests,tokens}: absent, malformed, negative or 0
//     is unknown (-1). Azure sends 0 and -1 meaning "not reported".
//   - x-ratelimit-remaining-{requests,tokens}: absent, malformed or
//     negative is unknown. 0 is "no capacity" only when the matching limit
//     is a positive number; next to an unknown limit (Azure's -1/0, or no
//     limit header) it is unknown, so a quirk never blocks a provider.
//   - x-ratelimit-reset-{requests,tokens}: Go durations ("6m0s", "12ms");
//     malformed or negative is 0 (unknown). When the token reset is
//     missing, Azure's x-rate-limit-reset-tokens (bare seconds) is used.
//   - RetryAfter: retry-after-ms or Retry-After, relative to now for the
//     HTTP-date form (provider.RetryAfter).
func ParseRateLimit(h http.Header, now time.Time) outcome.RateLimit {
	return rateLimit(provider.HeadOf(h), now)
}

// rateLimit is ParseRateLimit of any answer's head.
func rateLimit(h provider.Head, now time.Time) outcome.RateLimit {
	rl := outcome.UnknownRateLimit
	rl.LimitRequests = h.Count(hLimitRequests, true)
	rl.LimitTokens = h.Count(hLimitTokens, true)
	rl.RemainingRequests = remaining(h, hRemainingRequests, rl.LimitRequests)
	rl.RemainingTokens = remaining(h, hRemainingTokens, rl.LimitTokens)
	rl.ResetRequests = parseDuration(h.Get(hResetRequests))
	rl.ResetTokens = parseDuration(h.Get(hResetTokens))
	if rl.ResetTokens == 0 {
		rl.ResetTokens = parseSeconds(h.Get(hAzureResetTokens))
	}
	rl.RetryAfter = h.RetryAfter(now)
	return rl
}

// remaining reads a remaining count; see ParseRateLimit for why 0 next to
// an unknown limit is unknown.
func remaining(h provider.Head, key string, limit int64) int64 {
	n := h.Count(key, false)
	if n == 0 && limit <= 0 {
		return -1
	}
	return n
}

// parseDuration reads a Go duration header value; malformed, negative or
// absent is 0, and the result is capped at maxWait.
func parseDuration(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0
	}
	return min(d, maxWait)
}

// parseSeconds reads a bare number of seconds (integer or fraction);
// malformed, negative or absent is 0, and the result is capped at maxWait.
func parseSeconds(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return clampSeconds(s)
}

func clampSeconds(s float64) time.Duration {
	switch {
	case math.IsNaN(s) || s <= 0:
		return 0
	case s >= maxWait.Seconds():
		return maxWait
	}
	return time.Duration(s * float64(time.Second))
}
