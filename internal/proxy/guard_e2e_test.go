package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// fakeClock is a settable clock for admission decisions.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d)
}

// fakeUpstream is an OpenAI-compatible provider whose answers a test
// scripts; it counts the requests that reached it and their concurrency.
type fakeUpstream struct {
	*httptest.Server
	hits, inFlight, maxInFlight atomic.Int32
	answer                      atomic.Pointer[func(w http.ResponseWriter)]
}

func newUpstream(t testing.TB) *fakeUpstream {
	u := &fakeUpstream{}
	u.setAnswer(func(w http.ResponseWriter) { io.WriteString(w, benchAnswer) })
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		n := u.inFlight.Add(1)
		defer u.inFlight.Add(-1)
		for {
			m := u.maxInFlight.Load()
			if n <= m || u.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		(*u.answer.Load())(w)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *fakeUpstream) setAnswer(f func(w http.ResponseWriter)) { u.answer.Store(&f) }

// routerOver builds a router whose model "m" targets the given upstreams
// through the openai_compatible adapter, the first in tier 0 and the rest
// in tier 1, so the order is fixed: a first, b when a cannot.
func routerOver(t testing.TB, clock *fakeClock, maxConc int, ups ...*fakeUpstream) http.Handler {
	t.Helper()
	mc := route.ModelConfig{Name: "m"}
	var provs []provider.Descriptor
	for i, u := range ups {
		name := string(rune('a' + i))
		pc := provider.Config{Name: name, BaseURL: u.URL + "/v1", MaxConcurrency: maxConc}
		a, err := openai.New(openai.Compatible, pc, "", openai.Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		provs = append(provs, provider.Descriptor{Name: name, Type: "openai_compatible", Adapter: a, Config: pc})
		mc.Targets = append(mc.Targets, route.Target{Provider: name, Model: "x", Tier: min(i, 1)})
	}
	table, _ := route.NewTable([]route.ModelConfig{mc})
	opts := routing.Options{Providers: provs, Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}, Routing: policy.Config{Retry: policy.Retry{Config: fastRetry}}}
	if clock != nil {
		opts.Now = clock.Now
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Handler()
}

func servedBy(t testing.TB, h http.Handler) string {
	t.Helper()
	w := do(h, "POST", "/v1/chat/completions", "application/json", chatBody)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	return w.Header().Get("X-LLMRouter-Provider")
}

func TestRetryAfterKeepsTrafficAwayExactlyThatLong(t *testing.T) {
	clock := &fakeClock{}
	clock.Set(0)
	a, b := newUpstream(t), newUpstream(t)
	a.setAnswer(func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
	})
	h := routerOver(t, clock, 10, a, b)
	if got := servedBy(t, h); got != "b" {
		t.Fatalf("first request served by %s, want b after a's 429", got)
	}
	a.setAnswer(func(w http.ResponseWriter) { io.WriteString(w, benchAnswer) })
	for _, at := range []time.Duration{0, time.Second, 1999 * time.Millisecond} {
		clock.Set(at)
		if got := servedBy(t, h); got != "b" {
			t.Errorf("at +%s served by %s, want b", at, got)
		}
	}
	if n := a.hits.Load(); n != 1 {
		t.Errorf("a saw %d requests during its Retry-After, want only the first", n)
	}
	clock.Set(2 * time.Second)
	if got := servedBy(t, h); got != "a" {
		t.Errorf("at +2s served by %s, want a again (not after the 120s breaker default)", got)
	}
}

func TestAnnouncedEmptyBudgetStopsTrafficBefore429(t *testing.T) {
	clock := &fakeClock{}
	clock.Set(0)
	a, b := newUpstream(t), newUpstream(t)
	a.setAnswer(func(w http.ResponseWriter) {
		w.Header().Set("x-ratelimit-limit-requests", "100")
		w.Header().Set("x-ratelimit-remaining-requests", "0")
		w.Header().Set("x-ratelimit-reset-requests", "1s")
		io.WriteString(w, benchAnswer)
	})
	h := routerOver(t, clock, 10, a, b)
	if got := servedBy(t, h); got != "a" {
		t.Fatalf("first request served by %s, want a", got)
	}
	a.setAnswer(func(w http.ResponseWriter) { io.WriteString(w, benchAnswer) })
	clock.Set(500 * time.Millisecond)
	if got := servedBy(t, h); got != "b" {
		t.Errorf("at +500ms served by %s, want b: a announced no budget left", got)
	}
	if n := a.hits.Load(); n != 1 {
		t.Errorf("a saw %d requests, want 1", n)
	}
	clock.Set(time.Second)
	if got := servedBy(t, h); got != "a" {
		t.Errorf("at +1s served by %s, want a", got)
	}
}

func TestMaxConcurrencyIsNeverExceeded(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 64)
	a, b := newUpstream(t), newUpstream(t)
	slow := func(w http.ResponseWriter) { arrived <- struct{}{}; <-release; io.WriteString(w, benchAnswer) }
	a.setAnswer(slow)
	b.setAnswer(slow)
	h := routerOver(t, nil, 2, a, b)
	srv := httptest.NewServer(h)
	defer srv.Close()
	const n = 12
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	// Wait until both providers hold their two slots, then let them go.
	for i := 0; i < 4; i++ {
		<-arrived
	}
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("a request got %d, want 200 (requests wait for a free slot)", c)
		}
	}
	if m := a.maxInFlight.Load(); m > 2 {
		t.Errorf("a saw %d concurrent requests, max_concurrency is 2", m)
	}
	if m := b.maxInFlight.Load(); m > 2 {
		t.Errorf("b saw %d concurrent requests, max_concurrency is 2", m)
	}
	if a.hits.Load()+b.hits.Load() != n {
		t.Errorf("upstreams saw %d requests, want %d", a.hits.Load()+b.hits.Load(), n)
	}
}
