package proxy

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
	"github.com/llmrouter/llmrouter/internal/recent"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// The router's allocations per proxied request on each path, with a real
// adapter whose HTTP client answers in memory (so the count is the
// router's and the adapter's, not a socket's or a fake server's). The
// budgets are the counts measured when they were last lowered plus 2
// (runs differ by one; they had about 10% on top until the request
// contexts were cut, issue 35): a change that allocates more per request
// fails here, and whoever makes it either pays it back or raises
// the budget with the reason in the commit.
const (
	allocBudgetPlain  = 48 // measured 46 (49 before one timer a request and the request context in the exchange; 68 before the allocation and request-context rounds of issue 35; 65 before X-LLMRouter-Cost-USD, the ninth header, grew the header map; 68 until the usage was read without a copy)
	allocBudgetStream = 58 // 20-event stream; measured 56 (59 before one timer a request and the request context in the exchange; 75 before the allocation and request-context rounds of issue 35; 78 until the SSE reader and the relay took their buffers from pools)
	// allocBudgetServed is BenchmarkPathServed's: the plain path with the
	// API listener's server and the h1 transport to a loopback upstream.
	// allocBudgetServedTraced is the served path with tracing on and
	// nothing sampled: the request's and the attempt's span, the upstream
	// traceparent and its slice, the request copy that carries the span,
	// and the API listener's context's Done channel (reqctx.Of looks through the span).
	allocBudgetServedTraced = 27 // measured 25 (29 before the API listener reused the head's storage; 40 until a span over the attempt's context passed its Watch on: the upstream exchange's watch went through context.AfterFunc)
	allocBudgetServed       = 21 // measured 19 (23 before the API listener reused the head's storage: its header map, values and URL; 26 before one timer a request and the request context in the exchange; 34 before the answer's header maps were cut: the upstream's by h1's indexed fields, the client's by fields set outside it)
	allocBudgetTranslated   = 86 // Anthropic stream, 20 deltas; measured 84 (87 before one timer a request and the request context in the exchange; 101 before the allocation and request-context rounds of issue 35; 103 until the SSE reader and the relay took their buffers from pools; 107 until the anthropic-ratelimit-* names were made once, not concatenated per answer)
)

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

// rateLimited answers every request with ctype and body, and OpenAI's
// rate-limit headers.
func rateLimited(ctype, body string) providertest.Canned {
	return providertest.Canned{ContentType: ctype, Body: body,
		Header: http.Header{"X-Ratelimit-Remaining-Requests": {"4999"}, "X-Ratelimit-Limit-Requests": {"5000"}}}
}

// pathServer is the router with one provider of the path's adapter, its
// HTTP client answering rt.
func pathServer(tb testing.TB, path string) (*Server, string) {
	return pathServerKeys(tb, path, nil)
}

// pathServerKeys is pathServer with the named client keys keys.
func pathServerKeys(tb testing.TB, path string, keys []routing.ClientKey) (*Server, string) {
	tb.Helper()
	pc := provider.Config{Name: "up", MaxConcurrency: 256}
	var a provider.Adapter
	var err error
	body := benchReq
	switch path {
	case "plain", "pair", "affinity":
		pc.BaseURL = "http://upstream.invalid/v1"
		a, err = openai.New(openai.Compatible, pc, "", openai.Config{}, &http.Client{Transport: rateLimited("application/json", benchAnswer)})
	case "stream":
		pc.BaseURL = "http://upstream.invalid/v1"
		body = benchStreamReq
		a, err = openai.New(openai.Compatible, pc, "", openai.Config{}, &http.Client{Transport: rateLimited("text/event-stream", openaiStreamBody(18))})
	case "translated":
		pc.BaseURL = "http://upstream.invalid"
		body = benchStreamReq
		a, err = anthropic.New(pc, "k", anthropic.Config{}, &http.Client{Transport: rateLimited("text/event-stream", anthropicStreamBody(20))})
	}
	if err != nil {
		tb.Fatal(err)
	}
	targets := []route.Target{{Provider: "up", Model: "up-model"}}
	provs := []provider.Descriptor{{Name: "up", Adapter: a, Config: pc}}
	var aff affinity.Config
	if path == "pair" || path == "affinity" {
		// Two providers in one tier and a conversation's second turn: with
		// affinity the conversation is looked up, kept and recorded.
		pc2 := pc
		pc2.Name = "up2"
		a2, err := openai.New(openai.Compatible, pc2, "", openai.Config{}, &http.Client{Transport: rateLimited("application/json", benchAnswer)})
		if err != nil {
			tb.Fatal(err)
		}
		targets = append(targets, route.Target{Provider: "up2", Model: "up-model"})
		provs = append(provs, provider.Descriptor{Name: "up2", Adapter: a2, Config: pc2})
		aff.Enabled = path == "affinity"
		body = benchFollowUp
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: targets}})
	s, err := Open(routing.Options{Providers: provs, Routing: policy.Config{Affinity: aff},
		Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30e9}, NamedKeys: keys})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	s.out.KeepRecent(recent.New(512)) // as the daemon runs it (the status page's ring)
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
// with a body; hdr are more header name and value pairs.
func servePath(tb testing.TB, h http.Handler, body string, w *statusWriter, hdr ...string) {
	r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
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
	for _, c := range []struct {
		name   string
		traced bool
		budget int
	}{{"served", false, allocBudgetServed}, {"served-traced", true, allocBudgetServedTraced}} {
		t.Run(c.name, func(t *testing.T) {
			var tr *tracing.Tracer
			if c.traced {
				// Nothing sampled: no span is exported, so no collector.
				tr = servedTracer(t, "http://127.0.0.1:1", 0)
			}
			do := servedPathTraced(t, tr)
			do() // warm: the upstream connection, pools
			n := testing.AllocsPerRun(200, do)
			t.Logf("%s: %.0f allocations per request (budget %d)", c.name, n, c.budget)
			if n > float64(c.budget) {
				t.Errorf("%s: %.0f allocations per request, over the budget of %d", c.name, n, c.budget)
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

// BenchmarkPathWatched is BenchmarkPath's plain and stream paths while
// the status page watches the ring: a watcher waits for a record, then
// reads and encodes what came, as the event stream does (each batch at
// most 100 records, at most 4 a second). Its difference from BenchmarkPath
// is what a subscriber costs a request (docs/ARCHITECTURE.md, "Status
// page").
func BenchmarkPathWatched(b *testing.B) {
	for _, path := range []string{"plain", "stream"} {
		b.Run(path, func(b *testing.B) {
			s, body := pathServer(b, path)
			ring := recent.New(512)
			s.out.KeepRecent(ring)
			next, stop := ring.Watch()
			done, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				var seq uint64
				var recs []recent.Request
				var buf []byte
				for {
					select {
					case <-done:
						return
					case <-next():
					}
					select {
					case <-done:
						return
					case <-time.After(250 * time.Millisecond):
					}
					recs, seq = ring.Copy(seq, 100, recs[:0])
					buf = append(buf[:0], '[')
					for i := range recs {
						buf = append(recs[i].AppendJSON(buf), ',')
					}
				}
			}()
			h := s.Handler()
			w := &statusWriter{}
			b.ReportAllocs()
			for b.Loop() {
				servePath(b, h, body, w)
			}
			b.StopTimer()
			close(done)
			<-stopped
			stop()
		})
	}
}

// BenchmarkPathKeys is BenchmarkPath's plain path without client auth,
// and with a named key that has a model allow-list, its own RPM and TPM
// and a budget (identified, allowed, charged, reserved, settled): the
// difference is what named keys cost a request (docs/BENCHMARKS.md).
func BenchmarkPathKeys(b *testing.B) {
	key := routing.ClientKey{Named: clientauth.Named{Name: "team", Hash: sha256.Sum256([]byte("sk-team-0123456789abcdef"))},
		Limits: clientkeys.Limits{Models: []string{"m"}, RPM: 1 << 40, TPM: 1 << 50, BudgetUSD: 1e8, BudgetPeriod: "month"}}
	for _, c := range []struct {
		name string
		keys []routing.ClientKey
		hdr  []string
	}{
		{"none", nil, nil},
		{"named-budget", []routing.ClientKey{key}, []string{"Authorization", "Bearer sk-team-0123456789abcdef"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, body := pathServerKeys(b, "plain", c.keys)
			h := s.Handler()
			w := &statusWriter{}
			b.ReportAllocs()
			for b.Loop() {
				servePath(b, h, body, w, c.hdr...)
			}
		})
	}
}

// BenchmarkKeyAdmission is what a named key with an allow-list, RPM/TPM
// and a budget adds to a request, alone: the credential identified, the
// model allowed, the cost estimated, the request admitted and settled.
func BenchmarkKeyAdmission(b *testing.B) {
	key := routing.ClientKey{Named: clientauth.Named{Name: "team", Hash: sha256.Sum256([]byte("sk-team-0123456789abcdef"))},
		Limits: clientkeys.Limits{Models: []string{"m"}, RPM: 1 << 40, TPM: 1 << 50, BudgetUSD: 1e8, BudgetPeriod: "month"}}
	s, body := pathServerKeys(b, "plain", []routing.ClientKey{key})
	st := s.routes.Load()
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	r.Header.Set("Authorization", "Bearer sk-team-0123456789abcdef")
	c := Call{Tokens: intake.EstimateTokens([]byte(body), 64), MaxTokens: 64}
	m := st.Models.Lookup("m")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		name, ok := st.Keys.Identify(r)
		k := st.Clients.Lookup(name)
		if !ok || !k.Allows("m") {
			b.Fatal("refused")
		}
		tk, refusal := k.Admit(ctx, s.now, c.Tokens, estimateCost(st, m, c))
		if refusal != nil {
			b.Fatal(refusal)
		}
		k.Settle(s.now(), tk, 30, 0.0001)
	}
}
