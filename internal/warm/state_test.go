package warm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/admin"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/statefile"
	"github.com/llmrouter/llmrouter/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		version error // errors.Is ErrVersion wanted
		bad     bool  // another error wanted
		check   func(State) bool
	}{
		{name: "version 1", data: `{"version":1,"providers":{"p":{"stats":{"version":1},"requests_limit":60}}}`,
			check: func(s State) bool { return s.Providers["p"].RequestsLimit == 60 && s.Providers["p"].Fingerprint == nil }},
		{name: "version 2", data: `{"version":2,"saved_at":"2026-08-21T12:00:00Z","writer":"h pid 1","providers":{"p":{"stats":{"version":1},"fingerprint":{"type":"openai"},"breaker":{"state":"open"}}}}`,
			check: func(s State) bool { return s.Providers["p"].Breaker.State == "open" && s.Writer == "h pid 1" }},
		// A newer router may lay out anything differently: refused as
		// newer, not misread or called corrupt.
		{name: "a newer version", data: `{"version":3,"providers":["p"]}`, version: ErrVersion},
		{name: "no version", data: `{"providers":{}}`, version: ErrVersion},
		{name: "not JSON", data: `{"version":2,`, bad: true},
		{name: "a version 2 whose layout is wrong", data: `{"version":2,"providers":{"p":{"breaker":7}}}`, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Decode([]byte(tt.data))
			switch {
			case tt.version != nil && !errors.Is(err, tt.version):
				t.Errorf("Decode() = %v, want %v", err, tt.version)
			case tt.bad && (err == nil || errors.Is(err, ErrVersion)):
				t.Errorf("Decode() = %v, want a decoding error", err)
			case tt.check != nil && (err != nil || !tt.check(st)):
				t.Errorf("Decode() = %+v, %v", st, err)
			}
		})
	}
}

// stateServer is a server with providers p and q, each the target of
// model m as "x", and p also of model n as "y".
func stateServer(t *testing.T, qURL string) *proxy.Server {
	t.Helper()
	table, err := route.NewTable([]route.ModelConfig{
		{Name: "m", Targets: []route.Target{{Provider: "p", Model: "x"}, {Provider: "q", Model: "x"}}},
		{Name: "n", Targets: []route.Target{{Provider: "p", Model: "y"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := proxy.Open(routing.Options{
		Providers: []provider.Descriptor{
			{Name: "p", Type: "openai_compatible", Adapter: &fake{do: ok(`{}`)}, Config: provider.Config{BaseURL: "http://p.example/v1"}},
			{Name: "q", Type: "openai_compatible", Adapter: &fake{do: ok(`{}`)}, Config: provider.Config{BaseURL: qURL}},
		},
		Models: table,
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestRestore: a provider whose base_url changed starts fresh and is
// reported with why; the other takes its state, but only the disabled
// targets that are still its targets.
func TestRestore(t *testing.T) {
	now := time.Now()
	a := stateServer(t, "http://q.example/v1")
	for _, p := range a.Routes().View().Providers {
		for _, m := range []string{"x", "y", "z"} {
			p.Up.DisableTarget(m, "no such model")
		}
	}
	data, err := json.Marshal(Export(a.Routes(), now))
	if err != nil {
		t.Fatal(err)
	}
	in, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if in.Version != version || !in.SavedAt.Equal(now.Round(0)) {
		t.Errorf("exported version %d saved at %s, want %d at %s", in.Version, in.SavedAt, version, now.Round(0))
	}

	b := stateServer(t, "http://q-fixed.example/v1")
	r, err := Restore(b.Routes(), now, in)
	if err != nil {
		t.Fatal(err)
	}
	var ce *upstream.ChangedError
	if !slices.Equal(r.Providers, []string{"p"}) || len(r.Fresh) != 1 || !errors.As(r.Fresh["q"], &ce) || !slices.Equal(ce.Keys, []string{"base_url"}) {
		t.Errorf("restored %v, fresh %v; want p restored, q fresh because its base_url changed", r.Providers, r.Fresh)
	}
	for _, ps := range admin.Providers(b.Routes()) {
		want := map[string][]string{"p": {"x", "y"}, "q": {}}[ps.Name]
		if !slices.Equal(ps.DisabledTargets, want) {
			t.Errorf("%s: disabled targets %v, want %v", ps.Name, ps.DisabledTargets, want)
		}
	}
}

// BenchmarkStateSave measures one save of a busy router's state: n
// providers, each with stats over its whole window, announced budgets, a
// block, an open breaker, a throttle window and a disabled target. It
// reports the file's size; the time per op includes the fsync and rename.
func BenchmarkStateSave(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var ps []provider.Descriptor
			var targets []route.Target
			for i := range n {
				name := fmt.Sprintf("p%d", i)
				ps = append(ps, provider.Descriptor{Name: name, Type: "openai_compatible", Adapter: &fake{do: ok(`{}`)},
					Config: provider.Config{BaseURL: "http://" + name + ".example/v1"}})
				targets = append(targets, route.Target{Provider: name, Model: "x"})
			}
			table, err := route.NewTable([]route.ModelConfig{{Name: "m", Targets: targets}})
			if err != nil {
				b.Fatal(err)
			}
			s, err := proxy.Open(routing.Options{Providers: ps, Models: table, Policy: shared.Policy{ThrottleK: 2},
				Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			now := time.Now()
			rl := outcome.UnknownRateLimit
			rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests = 500, 400, 12*time.Second
			rl.LimitTokens, rl.RemainingTokens, rl.ResetTokens = 200000, 150000, 8*time.Second
			for _, p := range s.Routes().View().Providers {
				for i := range 600 { // one every 200ms over the last two minutes
					at := now.Add(time.Duration(i-600) * 200 * time.Millisecond)
					pm, err := p.Up.Acquire(at, 100)
					if err != nil {
						continue
					}
					kind := outcome.OK
					if i%7 == 0 {
						kind = outcome.ServerError
					}
					pm.Release(at, upstream.Result{Kind: kind, RateLimit: rl, Latency: time.Duration(50+i%400) * time.Millisecond})
				}
				for range 5 {
					if pm, err := p.Up.Acquire(now, 1); err == nil {
						pm.Release(now, upstream.Result{Kind: outcome.ServerError, RetryAfter: 0})
					}
				}
				p.Up.DisableTarget("gone", "The model `gone` does not exist")
			}
			path := filepath.Join(b.TempDir(), "state.json")
			b.ResetTimer()
			for b.Loop() {
				if err := statefile.Save(path, Export(s.Routes(), time.Now())); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size()), "bytes/file")
		})
	}
}

func TestStateSurvivesRestart(t *testing.T) {
	build := func() *proxy.Server {
		sim := &fake{do: ok(`{"ok":true}`)}
		table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "p", Model: "x"}}}})
		s, err := proxy.Open(routing.Options{Providers: []provider.Descriptor{{Name: "p", Adapter: sim}}, Models: table,
			Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 5 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	a := build()
	for i := 0; i < 7; i++ {
		if w := do(a.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody); w.Code != 200 {
			t.Fatal(w.Code)
		}
	}
	now := time.Now()
	path := filepath.Join(t.TempDir(), "state.json")
	if err := statefile.Save(path, Export(a.Routes(), now)); err != nil {
		t.Fatal(err)
	}
	b := build()
	var st State
	if err := statefile.Load(path, &st); err != nil {
		t.Fatal(err)
	}
	if r, err := Restore(b.Routes(), now, st); err != nil || len(r.Providers) != 1 || len(r.Fresh) != 0 {
		t.Fatalf("restored %+v, %v; want provider p", r, err)
	}
	if got := admin.Providers(b.Routes())[0].Stats.Requests; got != 7 {
		t.Errorf("restored server reports %d requests in the window, want 7", got)
	}
	if r, err := Restore(b.Routes(), now, State{Version: 99}); !errors.Is(err, ErrVersion) || len(r.Providers) != 0 {
		t.Errorf("a state of a newer version: restored %+v, %v; want ErrVersion", r, err)
	}
}
