package proxy

import (
	"github.com/llmrouter/llmrouter/internal/routing"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/route"
)

// The router's allocations per proxied request on each path, with a real
// adapter whose HTTP client answers in memory (so the count is the
// router's and the adapter's, not a socket's or a fake server's). The
// budgets are the counts measured when they were set (docs/BENCHMARKS.md,
// "Allocation budgets") plus about 10%: a change that allocates more per
// request fails here, and whoever makes it either pays it back or raises
// the budget with the reason in the commit.
const (
	allocBudgetPlain      = 74  // measured 67
	allocBudgetStream     = 87  // 20-event stream; measured 79
	allocBudgetTranslated = 120 // Anthropic stream, 20 deltas; measured 109
)

// canned is an http.RoundTripper that answers every request with one
// status, content type and body, without a network.
type canned struct {
	ctype string
	body  string
}

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := http.Header{"Content-Type": {c.ctype}, "X-Ratelimit-Remaining-Requests": {"4999"}, "X-Ratelimit-Limit-Requests": {"5000"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(c.body)), ContentLength: int64(len(c.body)), Request: r}, nil
}

func openaiStreamBody(n int) string {
	var b strings.Builder
	b.WriteString("data: " + roleChunk + "\n\n")
	for range n {
		b.WriteString("data: " + textChunk + "\n\n")
	}
	b.WriteString("data: " + stopChunk + "\n\ndata: [DONE]\n\n")
	return b.String()
}

func anthropicStreamBody(n int) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for range n {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello \"}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}

// pathServer is the router with one provider of the path's adapter, its
// HTTP client answering rt.
func pathServer(tb testing.TB, path string) (*Server, string) {
	tb.Helper()
	pc := provider.Config{Name: "up", MaxConcurrency: 256}
	var a provider.Adapter
	var err error
	body := benchReq
	switch path {
	case "plain", "pair", "affinity":
		pc.BaseURL = "http://upstream.invalid/v1"
		a, err = openai.New(openai.Compatible, pc, "", openai.Config{}, &http.Client{Transport: canned{"application/json", benchAnswer}})
	case "stream":
		pc.BaseURL = "http://upstream.invalid/v1"
		body = benchStreamReq
		a, err = openai.New(openai.Compatible, pc, "", openai.Config{}, &http.Client{Transport: canned{"text/event-stream", openaiStreamBody(18)}})
	case "translated":
		pc.BaseURL = "http://upstream.invalid"
		body = benchStreamReq
		a, err = anthropic.New(pc, "k", anthropic.Config{}, &http.Client{Transport: canned{"text/event-stream", anthropicStreamBody(20)}})
	}
	if err != nil {
		tb.Fatal(err)
	}
	targets := []route.Target{{Provider: "up", Model: "up-model"}}
	provs := []routing.Provider{{Name: "up", Adapter: a, Config: pc}}
	var aff affinity.Config
	if path == "pair" || path == "affinity" {
		// Two providers in one tier and a conversation's second turn: with
		// affinity the conversation is looked up, kept and recorded.
		pc2 := pc
		pc2.Name = "up2"
		a2, err := openai.New(openai.Compatible, pc2, "", openai.Config{}, &http.Client{Transport: canned{"application/json", benchAnswer}})
		if err != nil {
			tb.Fatal(err)
		}
		targets = append(targets, route.Target{Provider: "up2", Model: "up-model"})
		provs = append(provs, routing.Provider{Name: "up2", Adapter: a2, Config: pc2})
		aff.Enabled = path == "affinity"
		body = benchFollowUp
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: targets}})
	s, err := Open(routing.Options{Providers: provs, Affinity: aff,
		Models: table, Limits: routing.LimitsConfig{MaxBodyBytes: 1 << 20, RequestTimeout: 30e9}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s, body
}

// statusWriter is discard that remembers the status and the bytes
// written, so a path's answer is checked without a recorder's own
// allocations.
type statusWriter struct {
	discard
	code  int
	bytes int
}

func (w *statusWriter) WriteHeader(code int) { w.code = code }
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	w.bytes += len(b)
	return len(b), nil
}

// servePath sends one request through h and checks it was answered 200
// with a body.
func servePath(tb testing.TB, h http.Handler, body string, w *statusWriter) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w.h = http.Header{}
	w.code, w.bytes = 0, 0
	h.ServeHTTP(w, r)
	if w.code != 200 || w.bytes == 0 {
		tb.Fatalf("status %d, %d bytes", w.code, w.bytes)
	}
}

func TestAllocationBudgets(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and are only meaningful in a normal build")
	}
	for _, c := range []struct {
		path   string
		budget float64
	}{{"plain", allocBudgetPlain}, {"stream", allocBudgetStream}, {"translated", allocBudgetTranslated}} {
		t.Run(c.path, func(t *testing.T) {
			s, body := pathServer(t, c.path)
			h := s.Handler()
			w := &statusWriter{}
			servePath(t, h, body, w) // warm: pools, lazily built state
			n := testing.AllocsPerRun(200, func() { servePath(t, h, body, w) })
			t.Logf("%s: %.0f allocations per request (budget %.0f)", c.path, n, c.budget)
			if n > c.budget {
				t.Errorf("%s: %.0f allocations per request, over the budget of %.0f", c.path, n, c.budget)
			}
		})
	}
}

// benchFollowUp is a conversation's second turn.
const benchFollowUp = `{"model":"m","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."},{"role":"assistant","content":"Hello there, nice to meet."},{"role":"user","content":"Again, in French."}],"temperature":0.3,"max_tokens":64}`

// BenchmarkPath reports time and allocations per request on each path,
// the router and a real adapter with an in-memory HTTP client. pair and
// affinity are plain with two providers and a conversation's second turn,
// affinity off and on: their difference is affinity's cost.
func BenchmarkPath(b *testing.B) {
	for _, path := range []string{"plain", "stream", "translated", "pair", "affinity"} {
		b.Run(path, func(b *testing.B) {
			s, body := pathServer(b, path)
			h := s.Handler()
			w := &statusWriter{}
			b.ReportAllocs()
			for b.Loop() {
				servePath(b, h, body, w)
			}
		})
	}
}
