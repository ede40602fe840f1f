package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// keysServer is the router with one provider answering a, the models m
// and other, the anonymous key "anon" and the named keys given; its log
// lines go to log.
func keysServer(t testing.TB, a *fake, log *bytes.Buffer, keys ...routing.ClientKey) *Server {
	return keysServerWith(t, a, log, nil, nil, keys...)
}

// keysServerWith is keysServer with prices and a registry (nil: none).
func keysServerWith(t testing.TB, a *fake, log *bytes.Buffer, prices []pricing.Entry, reg prometheus.Registerer, keys ...routing.ClientKey) *Server {
	return keysServerAt(t, a, log, prices, reg, nil, keys...)
}

// keysServerAt is keysServerWith on the clock now (nil: time.Now).
func keysServerAt(t testing.TB, a *fake, log *bytes.Buffer, prices []pricing.Entry, reg prometheus.Registerer, now func() time.Time, keys ...routing.ClientKey) *Server {
	t.Helper()
	table, err := route.NewTable([]route.ModelConfig{
		{Name: "m", Targets: []route.Target{{Provider: "p", Model: "p-model"}}},
		{Name: "other", Targets: []route.Target{{Provider: "p", Model: "p-other"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := routing.Options{Providers: []provider.Descriptor{{Name: "p", Type: "fake", Adapter: a}}, Models: table,
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}, Routing: policy.Config{Retry: policy.Retry{Config: fastRetry}},
		ClientKeys: []string{"anon"}, NamedKeys: keys, Pricing: prices, Registerer: reg, Now: now}
	if log != nil {
		opts.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func namedKey(name, secret string, l clientkeys.Limits) routing.ClientKey {
	return routing.ClientKey{Named: clientauth.Named{Name: name, Hash: sha256.Sum256([]byte(secret))}, Limits: l}
}

// TestNamedKeys: the front door identifies named and anonymous keys,
// refuses a model outside a key's allow-list (403 model_not_allowed,
// nothing sent) and a request over the key's own RPM (429
// rate_limit_exceeded with Retry-After), and names the key in the log
// line, never its secret.
func TestNamedKeys(t *testing.T) {
	a := &fake{do: ok(`{"ok":true}`)}
	var log bytes.Buffer
	s := keysServer(t, a, &log,
		namedKey("team-a", "secret-a", clientkeys.Limits{Models: []string{"m"}, RPM: 2}),
		namedKey("team-b", "secret-b", clientkeys.Limits{}))
	h := s.Handler()
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	}
	tests := []struct {
		name, auth, model string
		status            int
		code              string
	}{
		{"unknown key", "Bearer nope", "m", 401, "invalid_api_key"},
		{"anonymous", "Bearer anon", "other", 200, ""},
		{"named, allowed", "Bearer secret-a", "m", 200, ""},
		{"named, outside its models", "Bearer secret-a", "other", 403, "model_not_allowed"},
		{"named, second in the minute", "Bearer secret-a", "m", 200, ""},
		{"named, over its rpm", "Bearer secret-a", "m", 429, "rate_limit_exceeded"},
		{"another key unaffected", "Bearer secret-b", "other", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.calls.Load()
			w := do(h, "POST", "/v1/chat/completions", "application/json", body(tt.model), "Authorization", tt.auth)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.code == "" {
				return
			}
			if e := decodeErr(t, w.Body.Bytes()); e.Error.Code == nil || *e.Error.Code != tt.code {
				t.Errorf("code %v, want %s", e.Error.Code, tt.code)
			}
			if a.calls.Load() != before {
				t.Error("a refused request reached the provider")
			}
			if tt.status == 429 {
				ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
				if err != nil || ra < 1 || ra > 30 {
					t.Errorf("Retry-After %q, want 1 to 30 seconds", w.Header().Get("Retry-After"))
				}
			}
		})
	}
	out := log.String()
	for _, want := range []string{"key=team-a", "key=team-b", `key=""`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret-") {
		t.Errorf("log shows a secret:\n%s", out)
	}
}

// TestModelNotAllowedBeforeAnything: a key's allow-list is checked on the
// requested name (patterns as the model table reads them) for every
// operation.
func TestModelNotAllowedOnEveryOperation(t *testing.T) {
	a := &fake{do: ok(`{"ok":true}`), ops: map[provider.Op]bool{provider.OpChat: true, provider.OpEmbeddings: true}}
	s := keysServer(t, a, nil, namedKey("k", "s", clientkeys.Limits{Models: []string{"o*"}}))
	h := s.Handler()
	if w := do(h, "POST", "/v1/embeddings", "application/json", `{"model":"m","input":"x"}`, "x-api-key", "s"); w.Code != 403 {
		t.Errorf("embeddings outside the allow-list: %d, want 403", w.Code)
	}
	if w := do(h, "POST", "/v1/embeddings", "application/json", `{"model":"other","input":"x"}`, "x-api-key", "s"); w.Code != 200 {
		t.Errorf("embeddings inside the allow-list (pattern): %d, want 200: %s", w.Code, w.Body)
	}
}

// usageStream is a stream of payloads that reports u once it ended.
type usageStream struct {
	fakeStream
	u outcome.Usage
}

func (s *usageStream) Usage() outcome.Usage {
	if s.i < len(s.payloads) {
		return outcome.Usage{}
	}
	return s.u
}

// TestCost: every served request is priced from the usage its provider
// reported at the serving target's price (cached input at its own rate),
// whole answers and streams alike; a whole answer says it in
// X-LLMRouter-Cost-USD; the log line, cost_usd_total and the key's
// client_spend_usd_total agree; a target without a price costs 0, is
// counted in unpriced_requests_total and warned about once.
func TestCost(t *testing.T) {
	u := outcome.Usage{PromptTokens: 1000, CachedInput: 600, CompletionTokens: 100}
	a := &fake{do: func(_ context.Context, req *provider.Request) (*provider.Response, error) {
		if req.Stream {
			return &provider.Response{Stream: &usageStream{fakeStream: fakeStream{payloads: []string{roleChunk, textChunk, stopChunk}, end: io.EOF}, u: u}}, nil
		}
		return &provider.Response{Body: []byte(`{"ok":true}`), Usage: u}, nil
	}}
	cached := 0.5
	prices := []pricing.Entry{{Model: "p-model", Input: 2, CachedInput: &cached, Output: 10}}
	reg := prometheus.NewRegistry()
	var log bytes.Buffer
	s := keysServerWith(t, a, &log, prices, reg, namedKey("team", "s", clientkeys.Limits{}))
	h := s.Handler()
	const want = (400*2 + 600*0.5 + 100*10) / 1e6 // 0.0021

	w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody, "Authorization", "Bearer s")
	if w.Code != 200 || w.Header().Get("X-LLMRouter-Cost-USD") != "0.0021" {
		t.Fatalf("whole answer: %d, X-LLMRouter-Cost-USD %q; want 200, 0.0021", w.Code, w.Header().Get("X-LLMRouter-Cost-USD"))
	}
	w = do(h, "POST", "/v1/chat/completions", "application/json", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer s")
	if w.Code != 200 || w.Header().Get("X-LLMRouter-Cost-USD") != "" {
		t.Fatalf("stream: %d, X-LLMRouter-Cost-USD %q; want 200 and no header", w.Code, w.Header().Get("X-LLMRouter-Cost-USD"))
	}
	if got := metricValue(t, reg, "llmrouter_cost_usd_total", "model", "m", "provider", "p"); !nearly(got, 2*want) {
		t.Errorf("cost_usd_total{m,p}: got %g, want %g", got, 2*want)
	}
	if n := strings.Count(log.String(), "cost_usd=0.0021"); n != 2 {
		t.Errorf("log lines with cost_usd=0.0021: %d, want 2:\n%s", n, log.String())
	}
	spend := `llmrouter_client_spend_usd_total{key="team"} 0.0042`
	if err := testutil.GatherAndCompare(reg, strings.NewReader("# HELP llmrouter_client_spend_usd_total What the requests of each client key cost, in US dollars at the configured prices (key=\"\": anonymous keys).\n# TYPE llmrouter_client_spend_usd_total counter\nllmrouter_client_spend_usd_total{key=\"\"} 0\n"+spend+"\n"), "llmrouter_client_spend_usd_total"); err != nil {
		t.Error(err)
	}

	// The model "other" targets p-other, which has no price.
	for range 3 {
		if w := do(h, "POST", "/v1/chat/completions", "application/json", `{"model":"other","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer anon"); w.Code != 200 || w.Header().Get("X-LLMRouter-Cost-USD") != "0" {
			t.Fatalf("unpriced: %d, X-LLMRouter-Cost-USD %q; want 200, 0", w.Code, w.Header().Get("X-LLMRouter-Cost-USD"))
		}
	}
	if got := metricValue(t, reg, "llmrouter_unpriced_requests_total", "provider", "p", "model", "p-other"); got != 3 {
		t.Errorf("unpriced_requests_total{p,p-other}: got %g, want 3", got)
	}
	if n := strings.Count(log.String(), "no price for a model"); n != 1 {
		t.Errorf("warnings about p-other: %d, want 1", n)
	}
}

func nearly(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// metricValue is the value of the series of the family name in reg whose
// labels are the pairs given; the test fails when there is none.
func metricValue(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// TestBudget: $5 requests on a $50 daily budget: ten are served one after
// the other, the eleventh gets 429 budget_exceeded with Retry-After to UTC
// midnight and never reaches the provider; another key is unaffected;
// client_budget_remaining_usd says 0 and client_rejections_total counts
// the refusal.
func TestBudget(t *testing.T) {
	a := &fake{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return &provider.Response{Body: []byte(`{"ok":true}`), Usage: outcome.Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
	}}
	prices := []pricing.Entry{{Model: "p-model", Input: 0, Output: 1e6}, {Model: "p-other", Input: 0, Output: 1e6}} // $1 a completion token
	reg := prometheus.NewRegistry()
	base := time.Date(2025, 6, 4, 22, 0, 0, 0, time.UTC)
	start := time.Now()
	clock := func() time.Time { return base.Add(time.Since(start)) }
	s := keysServerAt(t, a, nil, prices, reg, clock,
		namedKey("capped", "c", clientkeys.Limits{BudgetUSD: 50, BudgetPeriod: "day"}),
		namedKey("other", "o", clientkeys.Limits{BudgetUSD: 50, BudgetPeriod: "day"}))
	h := s.Handler()
	const body = `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	for i := range 10 {
		if w := do(h, "POST", "/v1/chat/completions", "application/json", body, "Authorization", "Bearer c"); w.Code != 200 || w.Header().Get("X-LLMRouter-Cost-USD") != "5" {
			t.Fatalf("request %d: %d, cost %q; want 200, 5: %s", i+1, w.Code, w.Header().Get("X-LLMRouter-Cost-USD"), w.Body)
		}
	}
	w := do(h, "POST", "/v1/chat/completions", "application/json", body, "Authorization", "Bearer c")
	if w.Code != 429 {
		t.Fatalf("request 11: %d, want 429: %s", w.Code, w.Body)
	}
	if e := decodeErr(t, w.Body.Bytes()); e.Error.Code == nil || *e.Error.Code != "budget_exceeded" || e.Error.Type != "rate_limit_error" {
		t.Errorf("request 11: %+v, want rate_limit_error budget_exceeded", e.Error)
	}
	if got := w.Header().Get("X-Should-Retry"); got != "false" {
		t.Errorf("request 11: x-should-retry %q, want false: no retry can win a spent budget", got)
	}
	if ra, _ := strconv.Atoi(w.Header().Get("Retry-After")); ra < 7199 || ra > 7200 {
		t.Errorf("Retry-After %q, want the 7200 s to midnight", w.Header().Get("Retry-After"))
	}
	if n := a.calls.Load(); n != 10 {
		t.Errorf("the provider got %d calls, want 10", n)
	}
	if w := do(h, "POST", "/v1/chat/completions", "application/json", body, "Authorization", "Bearer o"); w.Code != 200 {
		t.Errorf("another key: %d, want 200", w.Code)
	}
	if got := metricValue(t, reg, "llmrouter_client_budget_remaining_usd", "key", "capped"); got != 0 {
		t.Errorf("capped's remaining budget %g, want 0", got)
	}
	if got := metricValue(t, reg, "llmrouter_client_budget_remaining_usd", "key", "other"); got != 45 {
		t.Errorf("other's remaining budget %g, want 45", got)
	}
	if got := metricValue(t, reg, "llmrouter_client_rejections_total", "key", "capped", "reason", "budget"); got != 1 {
		t.Errorf("capped's budget rejections %g, want 1", got)
	}
	if got := metricValue(t, reg, "llmrouter_client_spend_usd_total", "key", "capped"); got != 50 {
		t.Errorf("capped's spend %g, want 50", got)
	}
}
