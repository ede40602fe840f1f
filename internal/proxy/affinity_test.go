package proxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

const chatAnswer = `{"id":"c","object":"chat.completion","created":1,"model":"x","choices":[{"index":0,"message":{"role":"assistant","content":"an answer"},"finish_reason":"stop"}]}`

// seeded is a deterministic draw for ranking, safe for concurrent use.
func seeded(seed uint64) func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// conversation is turn n's body of conversation c: its opening (a system
// prompt and a first user turn that names c), then n-1 exchanges.
func conversation(c, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"model":"m","messages":[{"role":"system","content":"You help with project %d."},{"role":"user","content":"Question 1 of conversation %d."}`, c%3, c)
	for i := 2; i <= n; i++ {
		fmt.Fprintf(&b, `,{"role":"assistant","content":"an answer"},{"role":"user","content":"Question %d."}`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// affinityServer is two equally healthy providers in one tier, affinity
// as given, ranking's draws seeded; its metrics go to reg.
func affinityServer(t testing.TB, on bool, reg prometheus.Registerer, a, b *fake) *Server {
	t.Helper()
	mc := route.ModelConfig{Name: "m", Targets: []route.Target{{Provider: "a", Model: "a-model"}, {Provider: "b", Model: "b-model"}}}
	table, err := route.NewTable([]route.ModelConfig{mc})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(routing.Options{
		Providers: []provider.Descriptor{{Name: "a", Adapter: a}, {Name: "b", Adapter: b}},
		Models:    table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second},
		Routing: policy.Config{Retry: policy.Retry{Config: fastRetry}, Affinity: affinity.Config{Enabled: on}}, Rand: seeded(25), Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// workload runs issue 25's: 24 conversations of 6 turns without a
// session id, their turns interleaved as concurrent users' are. before
// runs ahead of each round of turns (round = the turn number). It returns
// who served each turn, [conversation][turn-1].
func workload(t *testing.T, h http.Handler, before func(round int)) [24][6]string {
	t.Helper()
	var served [24][6]string
	for turn := 1; turn <= 6; turn++ {
		before(turn)
		for c := range 24 {
			w := do(h, "POST", "/v1/chat/completions", "application/json", conversation(c, turn))
			if w.Code != 200 {
				t.Fatalf("conversation %d turn %d: %d %s", c, turn, w.Code, w.Body)
			}
			served[c][turn-1] = w.Header().Get("X-LLMRouter-Provider")
		}
	}
	return served
}

// hits counts the follow-up turns served where their conversation's
// previous turn was: where the provider holds its prompt cache.
func hits(served [24][6]string, from int) (hit, of int) {
	for c := range served {
		for turn := max(from, 2); turn <= 6; turn++ {
			of++
			if served[c][turn-1] == served[c][turn-2] {
				hit++
			}
		}
	}
	return hit, of
}

// TestAffinityWorkload is issue 25's measurement in-process: two equally
// healthy providers, 24 conversations of 6 turns with no session id. With
// affinity at least 95% of follow-up turns land where their conversation
// was served last (where its prefix is cached), and both providers still
// carry 25-75% of the conversations; without it each turn spreads on its
// own (about half the turns move).
func TestAffinityWorkload(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("affinity %v", on), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			a, b := &fake{do: ok(chatAnswer)}, &fake{do: ok(chatAnswer)}
			s := affinityServer(t, on, reg, a, b)
			served := workload(t, s.Handler(), func(int) {})
			hit, of := hits(served, 2)
			homes := 0
			for c := range served {
				if served[c][0] == "a" {
					homes++
				}
			}
			t.Logf("affinity %v: %d of %d follow-up turns where the conversation was served last (%.0f%%); a is home to %d of 24 conversations",
				on, hit, of, 100*float64(hit)/float64(of), homes)
			if !on {
				return
			}
			if share := float64(hit) / float64(of); share < 0.95 {
				t.Errorf("%.0f%% of follow-up turns kept, want at least 95%%", 100*share)
			}
			if homes < 6 || homes > 18 {
				t.Errorf("a is home to %d of 24 conversations, want 25-75%% (6 to 18)", homes)
			}
			if got := counterValue(t, reg, "llmrouter_affinity_total", "new"); got != 24 {
				t.Errorf("affinity_total{outcome=new} %v, want 24 (each conversation's first turn)", got)
			}
			if got := counterValue(t, reg, "llmrouter_affinity_total", "kept"); int(got) != hit {
				t.Errorf("affinity_total{outcome=kept} %v, want %d", got, hit)
			}
		})
	}
}

// TestAffinityProviderDies: a provider dies after every conversation's
// third turn; every turn is still served, and each conversation that
// moved is kept on its new provider from its next turn on.
func TestAffinityProviderDies(t *testing.T) {
	var dead atomic.Bool
	dies := func(ctx context.Context, req *provider.Request) (*provider.Response, error) {
		if dead.Load() {
			return nil, &outcome.Error{Kind: outcome.ServerError, Status: 500, Message: "down"}
		}
		return ok(chatAnswer)(ctx, req)
	}
	a, b := &fake{do: dies}, &fake{do: ok(chatAnswer)}
	s := affinityServer(t, true, nil, a, b)
	served := workload(t, s.Handler(), func(round int) { dead.Store(round > 3) })
	moved := 0
	for c := range served {
		if served[c][2] != "a" {
			continue
		}
		moved++
		for turn := 4; turn <= 6; turn++ {
			if served[c][turn-1] != "b" {
				t.Errorf("conversation %d turn %d served by %q, want b (a is dead)", c, turn, served[c][turn-1])
			}
		}
	}
	if moved == 0 {
		t.Fatal("no conversation was on a when it died")
	}
	if hit, of := hits(served, 5); hit != of {
		t.Errorf("after the move, %d of %d turns where their conversation was served last, want all", hit, of)
	}
	t.Logf("%d conversations moved from a to b; every turn served", moved)
}

// TestAffinityNotOnFallbackTier: a conversation served by the fallback
// tier while the best tier was out goes back to the best tier once it
// can serve again.
func TestAffinityNotOnFallbackTier(t *testing.T) {
	primary := &fake{do: ok(chatAnswer)}
	fallback := &fake{do: ok(chatAnswer)}
	mc := route.ModelConfig{Name: "m", Targets: []route.Target{{Provider: "p", Model: "x"}, {Provider: "f", Model: "y", Tier: 1}}}
	table, _ := route.NewTable([]route.ModelConfig{mc})
	s, err := Open(routing.Options{
		Providers: []provider.Descriptor{{Name: "p", Adapter: primary}, {Name: "f", Adapter: fallback}},
		Models:    table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second},
		Routing: policy.Config{Retry: policy.Retry{Config: fastRetry}, Affinity: affinity.Config{Enabled: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	session := func() string {
		w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody, "X-LLMRouter-Session", "s-1")
		if w.Code != 200 {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		return w.Header().Get("X-LLMRouter-Provider")
	}
	// The primary's target is disabled for a while: the fallback serves.
	p := s.Routes().View().Provider("p")
	p.Up.DisableTarget("x", "test")
	if got := session(); got != "f" {
		t.Fatalf("served by %q while the primary's target is off, want f", got)
	}
	p.Up.Enable()
	if got := session(); got != "p" {
		t.Errorf("served by %q once the primary is back, want p: affinity never holds a conversation on a fallback tier", got)
	}
}

// counterValue reads a counter's series by its outcome label.
func counterValue(t testing.TB, reg *prometheus.Registry, name, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.Counter.GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{outcome=%q}", name, outcome)
	return 0
}
