package routing

import (
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/route"
)

func sim(t testing.TB, name string, cfg provider.Config) provider.Descriptor {
	t.Helper()
	cfg.Name = name
	a, err := simulated.New(cfg, simulated.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return provider.Descriptor{Name: name, Type: "simulated", Adapter: a, Config: cfg}
}

func options(t testing.TB, provs ...provider.Descriptor) Options {
	t.Helper()
	mc := route.ModelConfig{Name: "m"}
	for i, p := range provs {
		mc.Targets = append(mc.Targets, route.Target{Provider: p.Name, Model: "x", Tier: i})
	}
	table, err := route.NewTable([]route.ModelConfig{mc})
	if err != nil {
		t.Fatal(err)
	}
	return Options{Providers: provs, Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: time.Minute}}
}

// TestUpdateKeepsRuntimes: a reload keeps the runtime (breaker, buckets,
// stats) of a provider whose settings did not change and starts a fresh
// one for a changed provider; the state before the reload is told to
// OnUpdate with its replacement.
func TestUpdateKeepsRuntimes(t *testing.T) {
	rt, err := New(options(t, sim(t, "a", provider.Config{}), sim(t, "b", provider.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st0 := rt.Load()
	var told [][2]*State
	rt.OnUpdate(func(prev, next *State) { told = append(told, [2]*State{prev, next}) })
	if len(told) != 1 || told[0][0] != nil || told[0][1] != st0 {
		t.Fatalf("OnUpdate's first call: got %v, want (nil, the state in force)", told)
	}
	if err := rt.Update(options(t, sim(t, "a", provider.Config{}), sim(t, "b", provider.Config{MaxConcurrency: 7}))); err != nil {
		t.Fatal(err)
	}
	st1 := rt.Load()
	if st1 == st0 {
		t.Fatal("Update left the old state in force")
	}
	if st1.Provider("a").Up != st0.Provider("a").Up {
		t.Error("an unchanged provider got a fresh runtime")
	}
	if st1.Provider("b").Up == st0.Provider("b").Up {
		t.Error("a changed provider kept its runtime")
	}
	if len(told) != 2 || told[1][0] != st0 || told[1][1] != st1 {
		t.Errorf("OnUpdate: got %v, want (old, new)", told)
	}
	// Requests in flight keep the state they started with.
	if st0.Provider("b").Config.MaxConcurrency == 7 {
		t.Error("the old state was changed in place")
	}
}

// TestUpdateDefaults: the routing policy's and the limits' zero parts take
// their defaults in the state in force.
func TestUpdateDefaults(t *testing.T) {
	rt, err := New(options(t, sim(t, "a", provider.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st := rt.Load()
	if want := (policy.Config{}).WithDefaults(); st.Routing != want {
		t.Errorf("routing policy %+v, want the defaults %+v", st.Routing, want)
	}
	if st.Limits.MaxConnections != limits.DefaultMaxConnections || st.Limits.BodyBufferBytes != limits.DefaultBodyBufferBytes {
		t.Errorf("limits %+v, want the defaults filled", st.Limits)
	}
	if rt.View().Weights != st.Routing.Weights {
		t.Errorf("the view's weights %+v, want the policy's", rt.View().Weights)
	}
}

// TestUpdateRefuses: a state that cannot be served is refused, naming
// what is wrong, and the state in force stays.
func TestUpdateRefuses(t *testing.T) {
	rt, err := New(options(t, sim(t, "a", provider.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	before := rt.Load()
	for _, tc := range []struct {
		name string
		opts func() Options
		want string
	}{
		{name: "no model table", opts: func() Options { o := options(t, sim(t, "a", provider.Config{})); o.Models = nil; return o }, want: "no model table"},
		{name: "duplicate provider", opts: func() Options {
			o := options(t, sim(t, "a", provider.Config{}))
			o.Providers = append(o.Providers, o.Providers[0])
			return o
		}, want: `duplicate provider "a"`},
		{name: "no adapter", opts: func() Options {
			o := options(t, sim(t, "a", provider.Config{}))
			o.Providers[0].Adapter = nil
			return o
		}, want: "has no adapter"},
		{name: "unknown provider in a model", opts: func() Options {
			o := options(t, sim(t, "a", provider.Config{}), sim(t, "b", provider.Config{}))
			o.Providers = o.Providers[:1]
			return o
		}, want: `targets unknown provider "b"`},
		{name: "invalid policy", opts: func() Options {
			o := options(t, sim(t, "a", provider.Config{}))
			o.Routing.ShedOpenFraction = 2
			return o
		}, want: "routing.shed_open_fraction"},
		{name: "invalid limits", opts: func() Options {
			o := options(t, sim(t, "a", provider.Config{}))
			o.Limits.MaxBodyBytes = -1
			return o
		}, want: "limits.max_body_bytes"},
		{name: "invalid key name", opts: func() Options {
			o := options(t, sim(t, "a", provider.Config{}))
			o.NamedKeys = []ClientKey{{}}
			return o
		}, want: "auth.keys[0].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rt.Update(tc.opts())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if rt.Load() != before {
				t.Error("a refused Update changed the state in force")
			}
		})
	}
}

// TestClose: Close may be called twice, and an Update after it is refused.
func TestClose(t *testing.T) {
	rt, err := New(options(t, sim(t, "a", provider.Config{})))
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	rt.Close()
	if err := rt.Update(options(t, sim(t, "a", provider.Config{}))); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Update after Close: got %v, want closed", err)
	}
}

// TestOpenShare: no provider open is share 0, whatever the count.
func TestOpenShare(t *testing.T) {
	rt, err := New(options(t, sim(t, "a", provider.Config{}), sim(t, "b", provider.Config{Domain: "d"}), sim(t, "c", provider.Config{Domain: "d"})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	v := rt.View()
	if share, soonest := v.OpenShare(); share != 0 || soonest != 0 {
		t.Errorf("OpenShare: got %v %v, want 0 0", share, soonest)
	}
	if !rt.Load().Domains {
		t.Error("Domains: some provider names a domain")
	}
	down := rt.Load().DomainDown(rt.Now())
	for _, name := range []string{"a", "b", "c"} {
		if down(name) {
			t.Errorf("DomainDown(%s) with nothing down", name)
		}
	}
}
