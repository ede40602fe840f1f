// Package proxytest is what the front doors' path benchmarks and
// allocation budgets share (docs/BENCHMARKS.md): a router of one provider
// whose adapter answers in memory, a ResponseWriter that keeps nothing,
// and the budget check.
package proxytest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// Handler serves the dialects through a router whose one model, "m",
// goes to targetModel at one provider, "up", built by adapter; the
// router closes at the test's end.
func Handler(tb testing.TB, adapter func(provider.Config) (provider.Adapter, error), targetModel string, ds ...*proxy.Dialect) http.Handler {
	tb.Helper()
	pc := provider.Config{Name: "up", MaxConcurrency: 256}
	a, err := adapter(pc)
	if err != nil {
		tb.Fatal(err)
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "up", Model: targetModel}}}})
	s, err := proxy.Open(routing.Options{Providers: []provider.Descriptor{{Name: "up", Adapter: a, Config: pc}},
		Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30e9}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s.Handler(ds...)
}

// Sink is a ResponseWriter that keeps the status and counts the bytes.
type Sink struct {
	h     http.Header
	code  int
	bytes int
}

func (w *Sink) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

func (w *Sink) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *Sink) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	w.bytes += len(b)
	return len(b), nil
}

func (w *Sink) Flush() {}

// Serve sends one POST of body to route through h into w, and fails
// unless it was answered 200 with a body.
func Serve(tb testing.TB, h http.Handler, route, body string, w *Sink) {
	r := httptest.NewRequest("POST", route, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w.h, w.code, w.bytes = http.Header{}, 0, 0
	h.ServeHTTP(w, r)
	if w.code != 200 || w.bytes == 0 {
		tb.Fatalf("%s: status %d, %d bytes", route, w.code, w.bytes)
	}
}

// Budgets checks each path's allocations per request against its budget:
// serve returns the function that serves one request of the path named.
// Every path needs a budget.
func Budgets(t *testing.T, paths []string, budgets map[string]float64, serve func(t testing.TB, name string) func()) {
	for _, name := range paths {
		t.Run(name, func(t *testing.T) {
			one := serve(t, name)
			one()
			n := testing.AllocsPerRun(200, one)
			budget, ok := budgets[name]
			t.Logf("%s: %.0f allocations per request (budget %.0f)", name, n, budget)
			if !ok {
				t.Errorf("%s has no budget", name)
			} else if n > budget {
				t.Errorf("%s: %.0f allocations per request, over the budget of %.0f", name, n, budget)
			}
		})
	}
}
