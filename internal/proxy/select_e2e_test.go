package proxy

import (
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// tripAtOnce opens a breaker on the first failure and keeps it open.
var tripAtOnce = breaker.Config{
	FailureThreshold: breaker.Threshold{Consecutive: 1, Window: time.Minute},
	Cooldown:         breaker.Cooldown{Failure: time.Hour, RateLimit: time.Hour, Timeout: time.Hour, Multiplier: 1, Max: time.Hour},
}

func TestPriorityShedding(t *testing.T) {
	failing := func() *fake { return &fake{do: fail(outcome.ServerError, 500, "boom")} }
	p1, p2, p3, p4 := failing(), failing(), failing(), &fake{do: ok(`{"ok":true}`)}
	mc := route.ModelConfig{Name: "m", Targets: []route.Target{
		{Provider: "p1", Model: "x"}, {Provider: "p2", Model: "x"}, {Provider: "p3", Model: "x"}, {Provider: "p4", Model: "x", Tier: 1},
	}}
	table, _ := route.NewTable([]route.ModelConfig{mc})
	var provs []provider.Descriptor
	for i, a := range []*fake{p1, p2, p3, p4} {
		provs = append(provs, provider.Descriptor{Name: []string{"p1", "p2", "p3", "p4"}[i], Adapter: a})
	}
	s, err := Open(routing.Options{Providers: provs, Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second},
		Routing: policy.Config{Retry: policy.Retry{Config: backoff4()}}, Policy: shared.Policy{Breaker: tripAtOnce}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	// One request walks p1..p3 (each fails once and opens) and p4 serves.
	if w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody); w.Code != 200 {
		t.Fatalf("warm-up: %d %s", w.Code, w.Body)
	}
	calls := p4.calls.Load()

	w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody, "X-LLMRouter-Priority", "low")
	if w.Code != 503 || w.Header().Get("Retry-After") == "" {
		t.Fatalf("low priority: %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if e := decodeErr(t, w.Body.Bytes()); *e.Error.Code != "service_unavailable" {
		t.Errorf("code %v", *e.Error.Code)
	}
	if p4.calls.Load() != calls {
		t.Error("a shed request reached a provider")
	}
	for _, prio := range []string{"high", "normal", ""} {
		w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody, "X-LLMRouter-Priority", prio)
		if w.Code != 200 || w.Header().Get("X-LLMRouter-Provider") != "p4" {
			t.Errorf("priority %q: %d via %q, want 200 via p4", prio, w.Code, w.Header().Get("X-LLMRouter-Provider"))
		}
	}
	if w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody, "X-LLMRouter-Priority", "urgent"); w.Code != 400 {
		t.Errorf("invalid priority: %d, want 400", w.Code)
	}
	for _, p := range s.Routes().View().Providers[:3] {
		if state := p.Up.Status(time.Now()).State; state != "open" {
			t.Errorf("%s is %s, want open", p.Name, state)
		}
	}
}

func backoff4() (c backoff.Config) {
	c = fastRetry
	c.MaxAttempts = 4
	return c
}

// TestFailingProviderWarnsItsDomain is issue 25's measurement: a and b
// share a failure domain, c does not, and a fails every request. Its
// score steers traffic away from it so well that its breaker does not
// trip (here it cannot: the threshold is out of reach, so only the rule
// under test can move traffic), but a provider whose recent attempts
// failed with no success since counts as down for its domain
// (docs/ARCHITECTURE.md, "Selection"), so once a has failed twice b ranks
// after c: c serves at least 65% (b and c split evenly without the rule).
func TestFailingProviderWarnsItsDomain(t *testing.T) {
	a := &fake{do: fail(outcome.ServerError, 500, "boom")}
	b, c := &fake{do: ok(`{"ok":true}`)}, &fake{do: ok(`{"ok":true}`)}
	never := breaker.DefaultConfig()
	never.FailureThreshold.Consecutive, never.FailureThreshold.MinRequests = 1_000_000, 1_000_000
	mc := route.ModelConfig{Name: "m"}
	var provs []provider.Descriptor
	for _, p := range []struct {
		name, domain string
		a            *fake
	}{{"a", "x", a}, {"b", "x", b}, {"c", "y", c}} {
		provs = append(provs, provider.Descriptor{Name: p.name, Adapter: p.a, Config: provider.Config{Domain: p.domain}})
		mc.Targets = append(mc.Targets, route.Target{Provider: p.name, Model: "x"})
	}
	table, _ := route.NewTable([]route.ModelConfig{mc})
	s, err := Open(routing.Options{Providers: provs, Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second},
		Routing: policy.Config{Retry: policy.Retry{Config: fastRetry}}, Policy: shared.Policy{Breaker: never}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	for i := 0; a.calls.Load() < 2; i++ { // warm-up: a has failed twice
		if i == 500 {
			t.Fatal("a was not tried twice in 500 requests")
		}
		if w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody); w.Code != 200 {
			t.Fatalf("warm-up: %d %s", w.Code, w.Body)
		}
	}
	served := map[string]int{}
	const n = 200
	for range n {
		w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody)
		if w.Code != 200 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		served[w.Header().Get("X-LLMRouter-Provider")]++
	}
	if state := s.Routes().View().Provider("a").Up.Status(time.Now()).State; state != "closed" {
		t.Fatalf("a's breaker is %s, want closed: the rule under test is the failing one", state)
	}
	t.Logf("served: c %d, b %d of %d (a failed %d times)", served["c"], served["b"], n, a.calls.Load())
	if share := float64(served["c"]) / n; share < 0.65 {
		t.Errorf("c served %.0f%%, want at least 65%%: b shares a's failure domain", 100*share)
	}
}
