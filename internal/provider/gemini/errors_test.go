package gemini

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

const perDayBody = `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[
	{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`

// TestPerDayQuotaReset checks the wait until the next midnight in
// America/Los_Angeles, across both DST regimes and a transition day.
func TestPerDayQuotaReset(t *testing.T) {
	if _, err := time.LoadLocation("America/Los_Angeles"); err != nil {
		t.Skipf("no tzdata on this host: %v", err)
	}
	tests := []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		{"summer (PDT)", time.Date(2026, 7, 15, 18, 30, 0, 0, time.UTC), 12*time.Hour + 30*time.Minute},
		{"winter (PST)", time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC), 22 * time.Hour},
		{"just after midnight", time.Date(2026, 1, 15, 8, 0, 1, 0, time.UTC), 24*time.Hour - time.Second},
		{"evening before DST ends", time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC), time.Hour},
		{"day DST ends (25h day)", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), 20 * time.Hour},
		{"day DST starts (23h day)", time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC), 22 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ClassifyError(http.StatusTooManyRequests, nil, []byte(perDayBody), tt.now)
			if e.Kind != outcome.Quota || e.RetryAfter != tt.want {
				t.Errorf("got %s RetryAfter %v, want quota RetryAfter %v", e.Kind, e.RetryAfter, tt.want)
			}
		})
	}
}

func TestClassifyError(t *testing.T) {
	long := strings.Repeat("é", 600)
	tests := []struct {
		name       string
		status     int
		h          http.Header
		body       string
		kind       outcome.Kind
		wantStatus int
		retryAfter time.Duration
		message    string
	}{
		{
			name: "stream error event takes the body's code", status: 0,
			body: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
			kind: outcome.Overloaded, wantStatus: 503, message: "The model is overloaded.",
		},
		{
			name: "stream error event rate limited", status: 0,
			body: `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"9s"}]}}`,
			kind: outcome.RateLimited, wantStatus: 429, retryAfter: 9 * time.Second,
		},
		{
			name: "status word without a code", status: 0,
			body: `{"error":{"message":"x","status":"INTERNAL"}}`, kind: outcome.ServerError,
		},
		{
			name: "nothing known", status: 0, body: `{"error":{"message":"?"}}`, kind: outcome.Unknown,
		},
		{
			name: "redirect the client did not follow", status: 302, body: ``, kind: outcome.ServerError, wantStatus: 302,
			message: "gemini answered status 302",
		},
		{
			name: "absurd RetryInfo is capped", status: 429,
			body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"9999999s"}]}}`,
			kind: outcome.RateLimited, wantStatus: 429, retryAfter: maxRetryDelay,
			message: "gemini answered RESOURCE_EXHAUSTED (status 429)",
		},
		{
			name: "bad RetryInfo falls back to headers", status: 429, h: http.Header{"Retry-After": {"4"}},
			body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"soon"}]}}`,
			kind: outcome.RateLimited, wantStatus: 429, retryAfter: 4 * time.Second,
		},
		{
			name: "unknown 4xx by status", status: 413, body: `{"error":{"code":413,"message":"too big","status":"???"}}`,
			kind: outcome.ClientError, wantStatus: 413,
		},
		{
			name: "expired key", status: 400,
			body: `{"error":{"code":400,"message":"API key expired. Please renew the API key.","status":"INVALID_ARGUMENT"}}`,
			kind: outcome.Auth, wantStatus: 400,
		},
		{
			name: "unknown model keeps status and message", status: 404,
			body: `{"error":{"code":404,"message":"models/gemini-1.0-pro is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.","status":"NOT_FOUND"}}`,
			kind: outcome.ClientError, wantStatus: 404,
			message: "models/gemini-1.0-pro is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
		},
		{
			name: "unknown model in a stream error event", status: 0,
			body: `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta, or is not supported for streamGenerateContent.","status":"NOT_FOUND"}}`,
			kind: outcome.ClientError, wantStatus: 404,
		},
		{
			name: "other not found is the client's", status: 404,
			body: `{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}`,
			kind: outcome.ClientError, wantStatus: 404, message: "Requested entity was not found.",
		},
		{
			name: "deadline exceeded is the provider's", status: 504,
			body: `{"error":{"code":504,"message":"Deadline expired before operation could complete.","status":"DEADLINE_EXCEEDED"}}`,
			kind: outcome.ServerError, wantStatus: 504,
		},
		{
			name: "per-day quota, real shape", status: 429,
			body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.","status":"RESOURCE_EXHAUSTED","details":[
				{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"50"}]},
				{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},
				{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"38s"}]}}`,
			// testNow is 11:30 PDT: the quota comes back at midnight Pacific, not in 38s.
			kind: outcome.Quota, wantStatus: 429, retryAfter: 12*time.Hour + 30*time.Minute,
		},
		{
			name: "long garbage is bounded", status: 500, body: "  " + long + "\xff  ",
			kind: outcome.ServerError, wantStatus: 500,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ClassifyError(tt.status, tt.h, []byte(tt.body), testNow)
			if e.Kind != tt.kind {
				t.Errorf("got kind %s, want %s (%v)", e.Kind, tt.kind, e)
			}
			if e.Status != tt.wantStatus {
				t.Errorf("got status %d, want %d", e.Status, tt.wantStatus)
			}
			if e.RetryAfter != tt.retryAfter {
				t.Errorf("got RetryAfter %v, want %v", e.RetryAfter, tt.retryAfter)
			}
			if tt.message != "" && e.Message != tt.message {
				t.Errorf("got message %q, want %q", e.Message, tt.message)
			}
			if !utf8.ValidString(e.Message) || len(e.Message) > maxMessage+len("…") || e.Message == "" {
				t.Errorf("got message of %d bytes (valid UTF-8: %v), want 1..%d valid bytes", len(e.Message), utf8.ValidString(e.Message), maxMessage)
			}
		})
	}
}

// TestClassifyErrorRateLimit: Gemini announces no budget in headers, so an
// error's RateLimit says nothing, as a success's does; a Retry-After header
// is the error's RetryAfter.
func TestClassifyErrorRateLimit(t *testing.T) {
	h := http.Header{"Retry-After": {"4"}, "X-Ratelimit-Remaining-Requests": {"0"}}
	e := ClassifyError(http.StatusTooManyRequests, h, []byte(`{"error":{"code":429,"message":"Resource exhausted.","status":"RESOURCE_EXHAUSTED"}}`), testNow)
	if e.Kind != outcome.RateLimited || e.RetryAfter != 4*time.Second || e.RateLimit != outcome.UnknownRateLimit {
		t.Errorf("got %v RetryAfter %v RateLimit %+v, want rate_limited 4s and UnknownRateLimit", e.Kind, e.RetryAfter, e.RateLimit)
	}
	if e := ClassifyError(0, nil, []byte("garbage"), testNow); e.RateLimit != outcome.UnknownRateLimit {
		t.Errorf("unparseable body: RateLimit %+v, want UnknownRateLimit", e.RateLimit)
	}
}
