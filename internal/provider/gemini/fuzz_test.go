package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// fuzzMaxWait is the longest wait an error may carry: a RetryInfo delay
// or Retry-After is capped at 24h, and a per-day quota waits until the
// next midnight in America/Los_Angeles, which is 25h away at the start of
// the day daylight saving time ends.
const fuzzMaxWait = 25 * time.Hour

// fuzzTime maps a fuzzed number of seconds to a time between 1970 and
// about 2106.
func fuzzTime(sec uint32) time.Time { return time.Unix(int64(sec), 0).UTC() }

// FuzzClassifyError classifies arbitrary error bodies under statuses
// 400-599, and under 0 (an error event inside a 200 stream), with an
// arbitrary Retry-After and clock. It must not panic and always returns a
// usable *outcome.Error (fuzzCheckError) keeping an HTTP error status as
// given; and the body quoted in the step table's answers (echoes) where
// Google quotes client input leaves each one's kind as it is with nothing
// there.
func FuzzClassifyError(f *testing.F) {
	const now = 1784140200 // 2026-07-15 18:30 UTC, 11:30 PDT
	for _, seed := range []struct {
		status int
		body   string
		ra     string
	}{
		{429, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`, ""},
		{429, `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"9s"}]}}`, "3"},
		{429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"9999999s"}]}}`, ""},
		{429, `{"error":{"code":429,"message":"Quota exceeded for metric: generate_content_free_tier_requests, limit: 0","status":"RESOURCE_EXHAUSTED"}}`, ""},
		{400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`, ""},
		{400, `{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified","status":"INVALID_ARGUMENT"}}`, ""},
		{404, `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta","status":"NOT_FOUND"}}`, ""},
		{403, `{"error":{"code":403,"message":"Permission denied","status":"PERMISSION_DENIED"}}`, ""},
		{503, `[{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]`, "Wed, 15 Jul 2026 18:31:00 GMT"},
		{0, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`, ""},
		{0, `{"error":{"message":"?"}}`, ""},
		{413, `{"error":{"code":413,"message":"too big","status":"???"}}`, ""},
		{502, "<html><body>502 Bad Gateway</body></html>", ""},
		{500, "  " + strings.Repeat("é", 600) + "\xff  ", "1e30"},
	} {
		f.Add(seed.status, []byte(seed.body), seed.ra, uint32(now))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, ra string, sec uint32) {
		if status != 0 {
			status = 400 + int(uint(status)%200)
		}
		h := http.Header{}
		if ra != "" {
			h["Retry-After"] = []string{ra}
		}
		e := ClassifyError(status, h, body, fuzzTime(sec))
		providertest.CheckClassified(t, "ClassifyError", e, fuzzMaxWait)
		if status != 0 && e.Status != status {
			t.Fatalf("Status %d, want %d", e.Status, status)
		}
		// The body, quoted where Google quotes a client's input, never
		// changes a kind.
		providertest.FuzzEchoes(t, echoes, classifyAt, string(body))
	})
}

// FuzzStream runs the streamGenerateContent translator over arbitrary SSE
// bytes, as if Gemini had answered them with 200 text/event-stream. Next
// must not panic and must stop; every payload is a one-line JSON
// chat.completion.chunk; io.EOF comes only after a finish reason (or a
// blocked prompt); any other end carries a usable *outcome.Error, and
// repeats.
func FuzzStream(f *testing.F) {
	ev := func(data string) string { return "data: " + data + "\r\n\r\n" }
	head := `"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`
	for _, seed := range []struct {
		in    string
		usage bool
	}{
		{ev(`{"candidates":[{"content":{"parts":[{"text":"**Planning**","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10,"thoughtsTokenCount":3},`+head) +
			ev(`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],`+head) +
			": keep-alive comment\r\n\r\n" +
			ev(`{"candidates":[{"content":{"parts":[{"text":"lo \"x\"\n"}],"role":"model"},"index":0}],`+head) +
			ev(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"CiQB0e2K"},{"functionCall":{"name":"get_time","args":{}}}],"role":"model"},"index":0}],`+head) +
			ev(`{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":18,"thoughtsTokenCount":3,"cachedContentTokenCount":4},`+head), true},
		{ev(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0},{"content":{"parts":[{"text":"b"}]},"index":1,"finishReason":"MAX_TOKENS"}]}`) +
			ev(`{"candidates":[{"content":{"parts":[{"text":"c"}]},"finishReason":"SAFETY"}]}`), false},
		{ev(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":7}}`), true},
		{ev(`{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}`) + ev(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), false},
		{ev(`{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]}`), false},
		{ev(`{"candidates":[{"index":99}]}`) + "data: {\"candidates\":\n\n", false},
	} {
		f.Add([]byte(seed.in), seed.usage)
	}
	now := fuzzTime(1784140200)
	f.Fuzz(func(t *testing.T, in []byte, includeUsage bool) {
		s := newStream(context.Background(), &http.Response{Body: io.NopCloser(bytes.NewReader(in))}, "gemini-2.5-flash", includeUsage, now)
		var err error
		for calls := 0; ; calls++ {
			if calls > len(in)+2 {
				t.Fatalf("Next did not end after %d calls", calls)
			}
			_ = s.Pending()
			var p []byte
			if p, err = s.Next(); err != nil {
				if p != nil {
					t.Fatalf("Next returned payload %q with error %v", p, err)
				}
				break
			}
			providertest.CheckChunk(t, p)
		}
		if _, again := s.Next(); (again == io.EOF) != (err == io.EOF) || again == nil {
			t.Fatalf("Next after %v returned %v, want the same end", err, again)
		}
		for i := range 2 {
			if cerr := s.Close(); cerr != nil {
				t.Fatalf("Close #%d: %v", i+1, cerr)
			}
		}
		if err == io.EOF {
			if !bytes.Contains(in, []byte("finishReason")) && !bytes.Contains(in, []byte("blockReason")) {
				t.Fatal("io.EOF from a stream without a finish reason")
			}
			return
		}
		providertest.CheckEnd(t, "stream end", err, false, fuzzMaxWait)
	})
}

// FuzzTranslateCompletion translates arbitrary 200 bodies as
// generateContent answers. It must not panic, and either returns one valid
// chat.completion JSON document with at least one choice, or an error
// carrying a usable *outcome.Error.
func FuzzTranslateCompletion(f *testing.F) {
	for _, seed := range []string{
		`{
  "candidates": [
    {
      "content": {"parts": [{"text": "Hello there"}, {"text": ", friend."}], "role": "model"},
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 4, "totalTokenCount": 12},
  "modelVersion": "gemini-2.5-flash",
  "responseId": "resp-1"
}`,
		`{"candidates":[{"content":{"parts":[{"text":"Let me check."},{"functionCall":{"id":"fc-9","name":"f","args":{"a":1}}}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":12,"cachedContentTokenCount":20,"thoughtsTokenCount":7}}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"g","args":{ "b" : [1, 2] }}}]},"finishReason":"MALFORMED_FUNCTION_CALL"},{"index":1,"finishReason":"SAFETY"}]}`,
		`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9}}`,
		`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`,
		`{}`,
		`<html>502</html>`,
	} {
		f.Add([]byte(seed))
	}
	now := fuzzTime(1784140200)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, err := translateCompletion(data, "gemini-2.5-flash", now)
		if err != nil {
			if out != nil {
				t.Fatalf("translateCompletion returned %q with error %v", out, err)
			}
			providertest.CheckEnd(t, "translateCompletion", err, false, fuzzMaxWait)
			return
		}
		if !json.Valid(out) {
			t.Fatalf("translateCompletion(%q) = %q, not valid JSON", data, out)
		}
		doc := gjson.ParseBytes(out)
		if doc.Get("object").Str != "chat.completion" || doc.Get("choices.#").Int() < 1 || !doc.Get("choices.0.message").IsObject() {
			t.Fatalf("translateCompletion(%q) = %q, not a chat.completion with a choice", data, out)
		}
	})
}
