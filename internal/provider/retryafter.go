package provider

import (
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter caps what a provider may ask us to wait: a malformed or
// hostile header must not park a provider for years. A day covers Azure's
// "retry after 86400 seconds" (a quota block).
const maxRetryAfter = 24 * time.Hour

// The headers RetryAfter reads, in canonical form once: h[key] needs no
// canonicalising of the key on every call, which http.Header.Get does.
var (
	hRetryAfterMs = textproto.CanonicalMIMEHeaderKey("retry-after-ms")
	hRetryAfter   = textproto.CanonicalMIMEHeaderKey("retry-after")
)

// HeaderValue is h's first value for key, which is in canonical form
// (Head.Get).
func HeaderValue(h http.Header, key string) string { return HeadOf(h).Get(key) }

// RetryAfter reads the wait a provider asked for (Head.RetryAfter).
func RetryAfter(h http.Header, now time.Time) time.Duration { return HeadOf(h).RetryAfter(now) }

// RetryAfter reads the wait a provider asked for, in the order the official
// OpenAI and Anthropic SDKs use: retry-after-ms, then Retry-After as seconds
// (integer or fraction), then Retry-After as an HTTP-date relative to now.
// It returns 0 when none is present, malformed, or not in the future.
func (h Head) RetryAfter(now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get(hRetryAfterMs)); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clampWait(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get(hRetryAfter))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clampWait(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampWait(float64(t.Sub(now)))
	}
	return 0
}

// CapWait bounds a wait a provider announced (a reset time, a retry delay)
// to [0, 24h]: a malformed or far-future value must not park a provider
// for longer than a day.
func CapWait(d time.Duration) time.Duration { return clampWait(float64(d)) }

func clampWait(ns float64) time.Duration {
	switch {
	case math.IsNaN(ns) || ns <= 0:
		return 0
	case ns >= float64(maxRetryAfter):
		return maxRetryAfter
	}
	return time.Duration(ns)
}

// ParseCount reads a rate-limit count header (Head.Count).
func ParseCount(h http.Header, key string, zeroUnknown bool) int64 {
	return HeadOf(h).Count(key, zeroUnknown)
}

// Count reads a rate-limit count header. Absent, malformed and negative
// values are -1 (unknown). zeroUnknown also maps 0 to -1, for limits
// (Azure sends limit 0 and -1 meaning "not reported"; a limit of 0 is
// never a real capacity). key is in canonical form (Get).
func (h Head) Count(key string, zeroUnknown bool) int64 {
	v := strings.TrimSpace(h.Get(key))
	if v == "" {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || math.IsNaN(f) || f < 0 || f > math.MaxInt64 {
			return -1
		}
		n = int64(f)
	}
	if n < 0 || (zeroUnknown && n == 0) {
		return -1
	}
	return n
}
