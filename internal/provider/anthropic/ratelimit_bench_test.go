package anthropic

import (
	"net/http"
	"testing"
	"time"
)

// BenchmarkParseRateLimit reads the budget off the headers Anthropic
// sends with every answer.
func BenchmarkParseRateLimit(b *testing.B) {
	h := http.Header{}
	for _, axis := range []string{"requests", "input-tokens", "output-tokens", "tokens"} {
		h.Set("anthropic-ratelimit-"+axis+"-limit", "4000")
		h.Set("anthropic-ratelimit-"+axis+"-remaining", "3999")
		h.Set("anthropic-ratelimit-"+axis+"-reset", "2026-12-07T14:00:01Z")
	}
	now := time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		ParseRateLimit(h, now)
	}
}
