package openai

import (
	"net/http"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

func TestParseRateLimit(t *testing.T) {
	u := outcome.UnknownRateLimit
	with := func(f func(*outcome.RateLimit)) outcome.RateLimit {
		r := u
		f(&r)
		return r
	}
	tests := []struct {
		name   string
		header map[string]string
		want   outcome.RateLimit
	}{
		{"missing", nil, u},
		{"openai full set", map[string]string{
			"x-ratelimit-limit-requests": "5000", "x-ratelimit-remaining-requests": "4998", "x-ratelimit-reset-requests": "24ms",
			"x-ratelimit-limit-tokens": "800000", "x-ratelimit-remaining-tokens": "791200", "x-ratelimit-reset-tokens": "6m0s",
		}, outcome.RateLimit{LimitRequests: 5000, RemainingRequests: 4998, ResetRequests: 24 * time.Millisecond,
			LimitTokens: 800000, RemainingTokens: 791200, ResetTokens: 6 * time.Minute}},
		{"groq durations", map[string]string{"x-ratelimit-reset-requests": "2m59.56s", "x-ratelimit-reset-tokens": "7.66s"},
			with(func(r *outcome.RateLimit) {
				r.ResetRequests = 2*time.Minute + 59560*time.Millisecond
				r.ResetTokens = 7660 * time.Millisecond
			})},
		{"openai exhausted is no capacity", map[string]string{
			"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s",
		}, with(func(r *outcome.RateLimit) { r.LimitRequests, r.RemainingRequests, r.ResetRequests = 60, 0, time.Second })},
		{"azure classic remaining only", map[string]string{
			"x-ratelimit-remaining-requests": "79", "x-ratelimit-remaining-tokens": "61353",
		}, with(func(r *outcome.RateLimit) { r.RemainingRequests, r.RemainingTokens = 79, 61353 })},
		{"remaining zero without limit is unknown", map[string]string{"x-ratelimit-remaining-tokens": "0"}, u},
		{"azure -1 quirk", map[string]string{
			"x-ratelimit-limit-tokens": "-1", "x-ratelimit-remaining-tokens": "-1", "x-ratelimit-reset-tokens": "0",
		}, u},
		{"azure limit 0", map[string]string{
			"x-ratelimit-limit-requests": "0", "x-ratelimit-remaining-requests": "0",
			"x-ratelimit-limit-tokens": "0", "x-ratelimit-remaining-tokens": "0",
		}, u},
		{"azure limit 0 keeps a positive remaining", map[string]string{
			"x-ratelimit-limit-tokens": "0", "x-ratelimit-remaining-tokens": "1200",
		}, with(func(r *outcome.RateLimit) { r.RemainingTokens = 1200 })},
		{"malformed", map[string]string{
			"x-ratelimit-limit-requests": "lots", "x-ratelimit-remaining-requests": "some",
			"x-ratelimit-reset-requests": "soon", "x-ratelimit-reset-tokens": "10", "retry-after": "later",
		}, u},
		{"negative", map[string]string{
			"x-ratelimit-limit-tokens": "-5", "x-ratelimit-remaining-tokens": "-3", "x-ratelimit-reset-tokens": "-5s", "retry-after": "-1",
		}, u},
		{"zero durations", map[string]string{"x-ratelimit-reset-requests": "0s", "x-ratelimit-reset-tokens": "0ms"}, u},
		{"huge reset capped", map[string]string{"x-ratelimit-reset-tokens": "100000h"},
			with(func(r *outcome.RateLimit) { r.ResetTokens = 24 * time.Hour })},
		{"azure hyphenated reset seconds", map[string]string{"x-rate-limit-reset-tokens": "55"},
			with(func(r *outcome.RateLimit) { r.ResetTokens = 55 * time.Second })},
		{"openai reset wins over azure spelling", map[string]string{"x-ratelimit-reset-tokens": "2s", "x-rate-limit-reset-tokens": "55"},
			with(func(r *outcome.RateLimit) { r.ResetTokens = 2 * time.Second })},
		{"azure reset malformed", map[string]string{"x-rate-limit-reset-tokens": "55s"}, u},
		{"retry-after seconds", map[string]string{"retry-after": "20"},
			with(func(r *outcome.RateLimit) { r.RetryAfter = 20 * time.Second })},
		{"retry-after-ms", map[string]string{"retry-after-ms": "1500", "retry-after": "2"},
			with(func(r *outcome.RateLimit) { r.RetryAfter = 1500 * time.Millisecond })},
		{"retry-after http date", map[string]string{"retry-after": "Wed, 21 Oct 2026 07:28:45 GMT"},
			with(func(r *outcome.RateLimit) { r.RetryAfter = 45 * time.Second })},
		{"retry-after date in the past", map[string]string{"retry-after": "Wed, 21 Oct 2026 07:00:00 GMT"}, u},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := ParseRateLimit(h, testNow); got != tt.want {
				t.Errorf("ParseRateLimit\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
