package openai

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
	"github.com/llmrouter/llmrouter/internal/sse"
)

// FuzzClassifyError classifies arbitrary error bodies under statuses
// 400-599, and under 0 (an error event inside a 200 stream), with an
// arbitrary Retry-After (also sent as Azure's x-rate-limit-reset-tokens).
// It must not panic and always returns a usable *outcome.Error
// (fuzzCheckError) keeping an HTTP error status as given.
func FuzzClassifyError(f *testing.F) {
	for _, seed := range []struct {
		status int
		body   string
		ra     string
	}{
		{429, `{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 6.596s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, ""},
		{429, `{"error":{"message":"Please try again in 20s.","type":"requests","code":"rate_limit_exceeded"}}`, "2"},
		{429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, ""},
		{429, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`, ""},
		{429, `{"error":{"code":"429","message":"... Please retry after 86400 seconds."}}`, ""},
		{429, `[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`, "Wed, 21 Oct 2026 07:29:00 GMT"},
		{404, `{"error":{"message":"The model 'gpt-5x' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, ""},
		{404, `{"error":{"message":"model \"llama3\" not found, try pulling it first","type":"not_found_error","param":null,"code":null}}`, ""},
		{404, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`, ""},
		{404, "404 page not found\n", ""},
		{404, `{"detail":"Not Found"}`, ""},
		{400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, ""},
		{400, `{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","param":null,"code":400}`, ""},
		{413, "\n<html><head><title>413 Request Entity Too Large</title></head></html>\n", ""},
		{503, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, "1.5"},
		{500, `{"error":"model runner has unexpectedly stopped"}`, ""},
		{0, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, ""},
		{0, `{"error":{"code":"429","message":"Rate limit is exceeded. Try again in 1m30s."}}`, ""},
		{502, "", "-1"},
		{599, strings.Repeat("é", 400) + "\xff", "1e30"},
	} {
		f.Add(seed.status, []byte(seed.body), seed.ra)
	}
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, body []byte, ra string) {
		if status != 0 {
			status = 400 + int(uint(status)%200)
		}
		h := http.Header{}
		if ra != "" {
			h["Retry-After"] = []string{ra}
			h["X-Rate-Limit-Reset-Tokens"] = []string{ra}
		}
		e := ClassifyError(status, h, body, now)
		providertest.CheckClassified(t, "ClassifyError", e, maxWait)
		if status != 0 && e.Status != status {
			t.Fatalf("Status %d, want the HTTP status %d", e.Status, status)
		}
		if status == 0 && e.Status != 0 && (e.Status < 400 || e.Status > 599) {
			t.Fatalf("Status %d read from the body, want 0 or an error status", e.Status)
		}
		// The body, quoted where a provider quotes a client's input,
		// never changes a kind.
		providertest.FuzzEchoes(t, echoes, classifyAt, string(body))
	})
}

// FuzzParseRateLimit reads arbitrary rate-limit header values. It must not
// panic; counts are -1 (unknown) or more, a limit is never 0, a remaining
// 0 stands only next to a positive limit, and waits are within [0, 24h].
func FuzzParseRateLimit(f *testing.F) {
	for _, s := range [][8]string{
		{"5000", "4998", "800000", "791200", "24ms", "6m0s", "", ""},
		{"", "", "", "", "2m59.56s", "7.66s", "", ""},
		{"60", "0", "", "", "1s", "", "", "20"},
		{"", "79", "", "61353", "", "", "", ""},
		{"", "", "-1", "-1", "", "0", "", ""},
		{"0", "0", "0", "0", "", "", "", ""},
		{"", "", "0", "1200", "", "", "55", ""},
		{"lots", "some", "", "", "soon", "10", "", "later"},
		{"", "", "-5", "-3", "", "-5s", "-1", "-1"},
		{"", "", "", "", "", "100000h", "1e30", "Wed, 21 Oct 2026 07:29:00 GMT"},
		{"1.5e3", "0.5", "9223372036854775807", "0.0", "1h1m1.5s", "", "NaN", "+Inf"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7])
	}
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, limReq, remReq, limTok, remTok, resetReq, resetTok, azureReset, retryAfter string) {
		h := http.Header{}
		for k, v := range map[string]string{
			hLimitRequests: limReq, hRemainingRequests: remReq, hLimitTokens: limTok, hRemainingTokens: remTok,
			hResetRequests: resetReq, hResetTokens: resetTok, hAzureResetTokens: azureReset, "Retry-After": retryAfter,
		} {
			if v != "" {
				h[k] = []string{v}
			}
		}
		rl := ParseRateLimit(h, now)
		for _, c := range []struct {
			name         string
			limit, count int64
		}{
			{"requests", rl.LimitRequests, rl.RemainingRequests},
			{"tokens", rl.LimitTokens, rl.RemainingTokens},
		} {
			if c.limit < -1 || c.limit == 0 || c.count < -1 {
				t.Fatalf("%s: limit %d remaining %d, want a limit of -1 or > 0 and a remaining >= -1 (%+v)", c.name, c.limit, c.count, rl)
			}
			if c.count == 0 && c.limit <= 0 {
				t.Fatalf("%s: remaining 0 next to an unknown limit, want -1 (%+v)", c.name, rl)
			}
		}
		for _, d := range []time.Duration{rl.ResetRequests, rl.ResetTokens, rl.RetryAfter} {
			if d < 0 || d > maxWait {
				t.Fatalf("wait %v out of [0, %v] (%+v)", d, maxWait, rl)
			}
		}
	})
}

// fuzzDrain reads s to its end, checking every payload with check and
// failing t when Next does not stop within calls. It returns the payloads
// (copied) and the error that ended the stream, after checking that the
// error repeats and that Close is idempotent.
func fuzzDrain(t *testing.T, s interface {
	Next() ([]byte, error)
	Close() error
	Pending() bool
}, calls int, check func([]byte)) ([][]byte, error) {
	t.Helper()
	var got [][]byte
	for range calls {
		_ = s.Pending()
		p, err := s.Next()
		if err != nil {
			if p != nil {
				t.Fatalf("Next returned payload %q with error %v", p, err)
			}
			if _, again := s.Next(); again == nil || (again == io.EOF) != (err == io.EOF) {
				t.Fatalf("Next after %v returned %v, want the same end again", err, again)
			}
			for i := range 2 {
				if cerr := s.Close(); cerr != nil {
					t.Fatalf("Close #%d after the end: %v", i+1, cerr)
				}
			}
			return got, err
		}
		check(p)
		got = append(got, bytes.Clone(p))
	}
	t.Fatalf("Next did not end after %d calls", calls)
	return nil, nil
}

// FuzzStream runs the stream reader over arbitrary SSE bytes, as if a
// provider had answered them with 200 text/event-stream. Next must not
// panic and must stop; every payload is a JSON document that the relay's
// framing (sse.AppendData) carries back whole; io.EOF comes only after
// "data: [DONE]", or at a clean end after the payloads relayed finished
// every choice they named (a model read with gjson: some choice has a
// finish reason, and every explicit choice index has one); any other end
// carries a usable *outcome.Error.
func FuzzStream(f *testing.F) {
	chunk := func(delta string) string {
		return `{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":null}],"usage":null}`
	}
	usage := `{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`
	for _, seed := range []struct {
		in   string
		hide bool
	}{
		{": keep-alive\n\nevent: ping\n\ndata:\n\ndata: " + chunk(`{"role":"assistant","content":""}`) + "\n\ndata: " + chunk(`{"content":"Hel"}`) + "\n\ndata: " + usage + "\n\ndata: [DONE]\n\n", true},
		{"data: " + chunk(`{"content":"lo \"usage\": {} error"}`) + "\r\n\r\ndata: " + usage + "\r\n\r\ndata: [DONE]\r\n\r\n", false},
		{"data: " + chunk(`{"content":"Hel"}`) + "\n\n", false},
		{"data: " + chunk(`{"content":"Hel"}`) + "\n\ndata: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n", false},
		{"data: {\"object\":\"error\",\"message\":\"out of memory\",\"type\":\"InternalServerError\",\"code\":500}\n\n", false},
		{"data: {\"error\":\"model runner has unexpectedly stopped\"}\n\n", true},
		{"data: {\"choices\":[{\"text\":\"Hel\",\"index\":0,\"finish_reason\":null}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", true},
		{"data: " + chunk(`{"content":"Hel"}`) + "\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: " + usage + "\n\n", true},
		{"data: {\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"},{\"index\":1,\"delta\":{\"tool_calls\":[{\"index\":0}]},\"finish_reason\":null}]}\n\n", false},
	} {
		f.Add([]byte(seed.in), seed.hide)
	}
	f.Fuzz(func(t *testing.T, in []byte, hide bool) {
		s := newStream(context.Background(), io.NopCloser(bytes.NewReader(in)), "calling openai chat completions", "gpt-4o-mini")
		s.hideUsage = hide
		var seen, finished map[int64]bool
		some := false
		_, err := fuzzDrain(t, s, len(in)+2, func(p []byte) {
			gjson.GetBytes(p, "choices").ForEach(func(_, c gjson.Result) bool {
				fr := c.Get("finish_reason")
				done := fr.Type == gjson.String && fr.Str != ""
				some = some || done
				if i := c.Get("index"); i.Type == gjson.Number {
					if seen == nil {
						seen, finished = map[int64]bool{}, map[int64]bool{}
					}
					seen[i.Int()] = true
					finished[i.Int()] = finished[i.Int()] || done
				}
				return true
			})
			if len(p) == 0 || !json.Valid(p) {
				t.Fatalf("payload %q is not a JSON document", p)
			}
			// A payload joined from several data lines keeps its
			// newlines; the relay's framing must carry it back whole.
			e, err := sse.NewReader(bytes.NewReader(sse.AppendData(nil, p))).Next()
			if err != nil || !bytes.Equal(e.Data, bytes.ReplaceAll(p, []byte("\r\n"), []byte("\n"))) {
				t.Fatalf("payload %q framed for the client reads back as %q, %v", p, e.Data, err)
			}
		})
		providertest.CheckEnd(t, "stream end", err, true, maxWait)
		if err == io.EOF && !bytes.Contains(in, []byte("[DONE]")) {
			if !some {
				t.Fatal("io.EOF from a stream without [DONE] and without a finish reason")
			}
			for i := range seen {
				if !finished[i] {
					t.Fatalf("io.EOF from a stream without [DONE] whose choice %d did not finish", i)
				}
			}
		}
	})
}

// FuzzEventStream runs the Responses API stream reader over arbitrary SSE
// bytes. Next must not panic and must stop; every payload is a JSON
// document; io.EOF comes only right after a terminal event
// (response.completed or response.incomplete); any other end carries a
// usable *outcome.Error.
func FuzzEventStream(f *testing.F) {
	for _, seed := range []string{
		"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":4}}}\n\n",
		"data: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
		"data: {\"type\":\"error\",\"sequence_number\":2,\"error\":{\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\",\"message\":\"quota\",\"param\":null}}\n\n",
		"data: {\"type\":\"error\",\"code\":429,\"message\":[1]}\n\n",
		"data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"x\"}}}\n\n",
		"data: {\"type\":\"response.incomplete\",\"response\":{\"usage\":\"none\"}}\n\ndata: [DONE]\n\n",
		"data: [DONE]\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := newEventStream(context.Background(), io.NopCloser(bytes.NewReader(in)), "calling openai responses", "gpt-4o-mini")
		var last []byte
		var seen, finished map[int64]bool
		some := false
		_, err := fuzzDrain(t, s, len(in)+2, func(p []byte) {
			gjson.GetBytes(p, "choices").ForEach(func(_, c gjson.Result) bool {
				fr := c.Get("finish_reason")
				done := fr.Type == gjson.String && fr.Str != ""
				some = some || done
				if i := c.Get("index"); i.Type == gjson.Number {
					if seen == nil {
						seen, finished = map[int64]bool{}, map[int64]bool{}
					}
					seen[i.Int()] = true
					finished[i.Int()] = finished[i.Int()] || done
				}
				return true
			})
			if len(p) == 0 || !json.Valid(p) {
				t.Fatalf("payload %q is not a JSON document", p)
			}
			last = p
		})
		providertest.CheckEnd(t, "stream end", err, true, maxWait)
		if err == io.EOF {
			if typ := gjson.GetBytes(last, "type").Str; typ != "response.completed" && typ != "response.incomplete" {
				t.Fatalf("io.EOF after %q, want it only after a terminal event", last)
			}
		}
	})
}
