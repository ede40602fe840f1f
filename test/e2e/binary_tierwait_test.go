package e2e

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// testBinaryTierWait: the sole tier-0 provider and a tier-1 fallback,
// routing.retry.tier_wait at its embedded default (3s), backoffs of 10ms
// to 50ms (docs/ARCHITECTURE.md, "Retries and failover"). One 429 with
// Retry-After: 2, and one 500, are waited for: tier 0 serves,
// X-LLMRouter-Degraded absent, the fallback never called. A tier-0
// provider that keeps failing still degrades within tier_wait plus its
// backoff, after at most max_attempts (3) calls in all.
func testBinaryTierWait(t *testing.T, bin string) {
	primary := newBinFake(t, "primary", openaiAPI)
	backup := newBinFake(t, "backup", anthropicAPI)
	var script atomic.Pointer[[]binFault] // this row's answers, in order; then 200s
	var calls atomic.Int32
	primary.setAPI(func(int, bool) binFault {
		n := int(calls.Add(1))
		if s := script.Load(); s != nil && n <= len(*s) {
			return (*s)[n-1]
		}
		return binFault{}
	})
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: primary, typ: "openai_compatible", tier: 0}, {fake: backup, typ: "anthropic", tier: 1}},
		routing:   "adaptive_throttle_k: 0",
	})
	defer p.stop()
	e500 := binFault{fault: oaiError(http.StatusInternalServerError, "server_error", "", "The server had an error while processing your request.")}
	for _, tt := range []struct {
		name        string
		faults      []binFault
		want        string // who serves
		calls       int    // calls of primary
		least, most time.Duration
	}{
		{"one 429 with Retry-After 2", []binFault{{fault: oaiError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
			"Rate limit reached for requests", "Retry-After", "2")}}, "primary", 2, 1900 * time.Millisecond, 3 * time.Second},
		{"one 500", []binFault{e500}, "primary", 2, 0, time.Second},
		{"keeps failing", []binFault{e500, e500, e500, e500}, "backup", 2, 0, 3*time.Second + time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			faults := tt.faults
			script.Store(&faults)
			calls.Store(0)
			before := backup.count(false, 0)
			rep, err := p.chat(false)
			if err != nil {
				t.Fatal(err)
			}
			if class, err := check(&rep, false); class != completion {
				t.Fatalf("got a %s (%v), status %d: %s", class, err, rep.status, rep.body)
			}
			who, degraded := rep.header.Get("X-LLMRouter-Provider"), rep.header.Get("X-LLMRouter-Degraded")
			if who != tt.want || (degraded == "true") != (tt.want == "backup") {
				t.Errorf("served by %q, degraded %q; want %s, degraded %v", who, degraded, tt.want, tt.want == "backup")
			}
			backupCalls := backup.count(false, 0) - before
			if got := int(calls.Load()); got != tt.calls || got+backupCalls > 3 || attempts(rep) != got+backupCalls {
				t.Errorf("primary called %d times, backup %d, attempts %d; want primary %d and at most 3 calls in all",
					got, backupCalls, attempts(rep), tt.calls)
			}
			if rep.elapsed < tt.least || rep.elapsed > tt.most {
				t.Errorf("answered after %s, want between %s and %s", rep.elapsed, tt.least, tt.most)
			}
		})
	}
}

// testBinaryContextWindows: context windows, count_tokens without the
// route, and a first-token timeout per target, on the real binary
// (docs/ARCHITECTURE.md, "Context windows", "Anthropic Messages API",
// "Streaming"):
//   - a prompt too large for the first target's window (64 tokens) goes to
//     the larger one without calling the first;
//   - a context_length_exceeded 400 moves to the larger target in one more
//     call, and never reaches the same target twice; with no larger target
//     the provider's 400 goes back;
//   - count_tokens through an Anthropic-format target whose server has no
//     such route (404) is the router's estimate, twice;
//   - two targets on one provider with first-token timeouts of 300ms and
//     3s (the provider's is 20s): a first token at 800ms fails over on the
//     first and is served on the second.
func testBinaryContextWindows(t *testing.T, bin string) {
	small := newBinFake(t, "small", openaiAPI)
	large := newBinFake(t, "large", openaiAPI)
	ant := newBinFake(t, "ant", anthropicAPI)
	reasoner := newBinFake(t, "reasoner", openaiAPI)
	small.setAPIByModel(func(model string, _ int, _ bool) binFault {
		if model == "tiny-model" {
			return binFault{fault: oaiError(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", contextMsg)}
		}
		return binFault{}
	})
	reasoner.setAPIByModel(func(string, int, bool) binFault {
		return binFault{fault: fault{kind: slowFirstToken, delay: 800 * time.Millisecond}}
	})
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: small, typ: "openai_compatible"}, {fake: large, typ: "openai_compatible"},
			{fake: ant, typ: "anthropic"}, {fake: reasoner, typ: "openai_compatible"}},
		routing: "adaptive_throttle_k: 0",
		models: []binModel{
			{name: "skip", targets: []binTarget{{provider: "small", model: "small-model", window: 64}, {provider: "large", model: "large-model", tier: 1, window: 100000}}},
			{name: "outgrow", targets: []binTarget{{provider: "small", model: "tiny-model"}, {provider: "large", model: "large-model", tier: 1}}},
			{name: "alone", targets: []binTarget{{provider: "small", model: "tiny-model"}}},
			{name: "claude-*", targets: []binTarget{{provider: "ant", model: "claude-test"}}},
			{name: "think", targets: []binTarget{{provider: "reasoner", model: "small-r", firstToken: 300 * time.Millisecond},
				{provider: "reasoner", model: "big-r", tier: 1, firstToken: 3 * time.Second}}},
		},
	})
	defer p.stop()
	long := strings.Repeat("word ", 400) // about 500 tokens as the router estimates

	t.Run("a prompt too large for the first target", func(t *testing.T) {
		status, h, body := postChatBody(t, p, `{"model":"skip","messages":[{"role":"user","content":"`+long+`"}]}`)
		if status != http.StatusOK || h.Get("X-LLMRouter-Provider") != "large" || h.Get("X-LLMRouter-Attempts") != "1" {
			t.Fatalf("got %d from %q after %s attempts: %s; want large's answer after 1", status, h.Get("X-LLMRouter-Provider"), h.Get("X-LLMRouter-Attempts"), body)
		}
		if n := small.countModel("small-model", 0); n != 0 {
			t.Errorf("the small target was called %d times, want 0", n)
		}
		// A prompt that fits goes to tier 0 as usual.
		if status, h, _ := postChatBody(t, p, `{"model":"skip","messages":[{"role":"user","content":"hi"}]}`); status != http.StatusOK || h.Get("X-LLMRouter-Provider") != "small" {
			t.Errorf("a short prompt: %d from %q, want small", status, h.Get("X-LLMRouter-Provider"))
		}
	})
	t.Run("context_length_exceeded moves to the larger target", func(t *testing.T) {
		for i := range 2 {
			before := small.countModel("tiny-model", 0)
			status, h, body := postChatBody(t, p, `{"model":"outgrow","messages":[{"role":"user","content":"hi"}]}`)
			if status != http.StatusOK || h.Get("X-LLMRouter-Provider") != "large" || h.Get("X-LLMRouter-Attempts") != "2" {
				t.Fatalf("request %d: %d from %q after %s attempts: %s; want large's answer after 2", i, status, h.Get("X-LLMRouter-Provider"), h.Get("X-LLMRouter-Attempts"), body)
			}
			if n := small.countModel("tiny-model", 0) - before; n != 1 {
				t.Errorf("request %d reached the too small target %d times, want once", i, n)
			}
		}
		status, _, body := postChatBody(t, p, `{"model":"alone","messages":[{"role":"user","content":"hi"}]}`)
		if status != http.StatusBadRequest || gjson.Get(body, "error.code").Str != "context_length_exceeded" {
			t.Errorf("with no larger target: %d %s, want the provider's 400", status, body)
		}
	})
	t.Run("count_tokens without the route", func(t *testing.T) {
		for i := range 2 {
			rep, err := sendMessages(p.client, p.api+"/v1/messages/count_tokens",
				`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"`+long+`"}]}`, "")
			if err != nil {
				t.Fatal(err)
			}
			if rep.status != http.StatusOK || gjson.GetBytes(rep.body, "input_tokens").Int() < 100 {
				t.Errorf("count %d: %d %s, want the router's estimate", i, rep.status, rep.body)
			}
		}
	})
	t.Run("a first-token timeout per target", func(t *testing.T) {
		status, h, body := postChatBody(t, p, `{"model":"think","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if status != http.StatusOK || h.Get("X-LLMRouter-Model") != "big-r" || h.Get("X-LLMRouter-Attempts") != "2" ||
			!strings.Contains(body, "[DONE]") {
			t.Fatalf("got %d from %q after %s attempts: %s; want big-r's whole stream after 2", status, h.Get("X-LLMRouter-Model"), h.Get("X-LLMRouter-Attempts"), body)
		}
		if a, b := reasoner.countModel("small-r", 0), reasoner.countModel("big-r", 0); a != 1 || b != 1 {
			t.Errorf("small-r called %d times, big-r %d, want 1 and 1", a, b)
		}
	})
}
