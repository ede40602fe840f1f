package failover

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/hedge"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// script plays its steps in the order calls arrive, whichever provider
// they go to (ranking is random): the k-th call runs steps[k-1], the last
// step repeating. It records which provider got each call and when each
// call's context ended before its answer.
type script struct {
	mu       sync.Mutex // guards order, canceled
	order    []string
	canceled map[int]time.Time // call index → when its context ended
	steps    []step2
	stream   bool
}

// step2 is one call: after d, answer (ok) or fail with a server error.
type step2 struct {
	d  time.Duration
	ok bool
}

func (s *script) fake(name string) *fake {
	return &fake{do: func(ctx context.Context, _ int) (*provider.Response, error) {
		s.mu.Lock()
		k := len(s.order)
		s.order = append(s.order, name)
		st := s.steps[min(k, len(s.steps)-1)]
		s.mu.Unlock()
		if s.stream && st.ok {
			// The headers come at once; the first content after d.
			return &provider.Response{Stream: &lateStream{ctx: ctx, d: st.d, gone: func() { s.cancel(k) }}}, nil
		}
		t := time.NewTimer(st.d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			s.cancel(k)
			return nil, &outcome.Error{Kind: outcome.Canceled, Message: "canceled", Err: ctx.Err()}
		}
		if !st.ok {
			return nil, &outcome.Error{Kind: outcome.ServerError, Status: 500, Message: "boom"}
		}
		return answers(ctx, 0)
	}}
}

func (s *script) cancel(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.canceled == nil {
		s.canceled = map[int]time.Time{}
	}
	s.canceled[k] = time.Now()
}

func (s *script) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

func (s *script) canceledAt(k int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.canceled[k]
	return t, ok
}

// lateStream opens with a role-only chunk and has its first content after
// d; it fails as an HTTP stream does once its context ends.
type lateStream struct {
	ctx  context.Context
	d    time.Duration
	i    int
	gone func()
}

func (s *lateStream) Next() ([]byte, error) {
	s.i++
	switch s.i {
	case 1:
		return []byte(`{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`), nil
	case 2:
		t := time.NewTimer(s.d)
		defer t.Stop()
		select {
		case <-t.C:
			return []byte(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`), nil
		case <-s.ctx.Done():
			s.gone()
			return nil, &outcome.Error{Kind: outcome.Network, Message: "stream cut", Err: s.ctx.Err()}
		}
	}
	return nil, io.EOF
}
func (s *lateStream) Usage() outcome.Usage { return outcome.Usage{} }
func (s *lateStream) Close() error         { return nil }

// hedgeRig is a rig of providers named by names, all playing sc, hedging
// after 300ms.
func hedgeRig(t testing.TB, sc *script, retry backoff.Config, maxShare float64, names ...string) *rig {
	var tgts []tgt
	for _, n := range names {
		tgts = append(tgts, tgt{name: n, a: sc.fake(n)})
	}
	rg := newRig(t, retry, tgts...)
	rg.pol.Hedge = hedge.Config{After: 300 * time.Millisecond, MaxShare: maxShare}
	return rg
}

func (rg *rig) hedges(outcome string) float64 {
	return testutil.ToFloat64(rg.loop.m.hedges.WithLabelValues("m", outcome))
}

// walkStream is walk for a stream request.
func (rg *rig) walkStream(ctx context.Context, timeout time.Duration) (*Run, Result) {
	ctx, cancel := requestCtx(ctx, timeout)
	defer cancel()
	r := &Run{ID: "req", Op: provider.OpChat, Model: rg.model}
	res := rg.loop.Walk(ctx, r, &rg.pol, func(name string) *Provider { return rg.provs[name] },
		&provider.Request{Op: provider.OpChat, Body: []byte(`{}`), Stream: true}, 100)
	if res.Served != nil {
		res.Served.Done(outcome.OK)
	}
	return r, res
}

// TestHedgeWins: the first attempt has no first content after 300ms; its
// twin on the other provider answers at 310ms and commits; the first is
// cancelled at that moment and released as canceled, not as a failure.
func TestHedgeWins(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "answer", true: "stream"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc := &script{steps: []step2{{2 * time.Second, true}, {10 * time.Millisecond, true}}, stream: stream}
				rg := hedgeRig(t, sc, retryEvery, 1, "a", "b")
				start := time.Now()
				walk := rg.walk
				if stream {
					walk = rg.walkStream
				}
				r, res := walk(t.Context(), time.Minute)
				took := time.Since(start)
				calls := sc.calls()
				if len(calls) != 2 || calls[0] == calls[1] {
					t.Fatalf("calls %v, want one to each provider", calls)
				}
				first, twin := calls[0], calls[1]
				if servedBy(res) != twin || !res.Served.Hedged {
					t.Fatalf("served by %q (hedged %v), want the twin, %s, hedged", servedBy(res), res.Served != nil && res.Served.Hedged, twin)
				}
				if want := 310 * time.Millisecond; took != want {
					t.Errorf("answered after %s, want %s: the twin's first content", took, want)
				}
				if at, ok := sc.canceledAt(0); !ok || at.Sub(start) != 310*time.Millisecond {
					t.Errorf("first attempt's context ended at %s (ended %v), want at 310ms, when the twin answered", at.Sub(start), ok)
				}
				if r.Attempts != 2 || len(r.Failures) != 0 {
					t.Errorf("%d attempts, failures %v; want 2 and none", r.Attempts, r.Failures)
				}
				if got := rg.done.of(first); !slices.Equal(got, []outcome.Kind{outcome.Canceled}) {
					t.Errorf("%s released with %v, want [canceled]", first, got)
				}
				if got := rg.done.of(twin); !slices.Equal(got, []outcome.Kind{outcome.OK}) {
					t.Errorf("%s released with %v, want [ok]", twin, got)
				}
				for _, name := range calls {
					if st := rg.provs[name].Up.Status(time.Now()); st.InFlight != 0 || st.LastErrorKind != "" {
						t.Errorf("%s: %d in flight, last error %q; want 0 and none", name, st.InFlight, st.LastErrorKind)
					}
				}
				if won, lost := rg.hedges("won"), rg.hedges("lost"); won != 1 || lost != 0 {
					t.Errorf("hedges won %g lost %g, want 1 and 0", won, lost)
				}
			})
		})
	}
}

// TestHedgeLoses: the first attempt answers at 500ms, after its twin was
// sent at 300ms: the first commits and the twin is cancelled then.
func TestHedgeLoses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{steps: []step2{{500 * time.Millisecond, true}, {2 * time.Second, true}}}
		rg := hedgeRig(t, sc, retryEvery, 1, "a", "b")
		start := time.Now()
		r, res := rg.walk(t.Context(), time.Minute)
		calls := sc.calls()
		if len(calls) != 2 || servedBy(res) != calls[0] || res.Served.Hedged {
			t.Fatalf("calls %v, served by %q; want the first call's provider, not hedged", calls, servedBy(res))
		}
		if took := time.Since(start); took != 500*time.Millisecond {
			t.Errorf("answered after %s, want 500ms", took)
		}
		if at, ok := sc.canceledAt(1); !ok || at.Sub(start) != 500*time.Millisecond {
			t.Errorf("the twin's context ended at %s (%v), want at 500ms", at.Sub(start), ok)
		}
		if got := rg.done.of(calls[1]); !slices.Equal(got, []outcome.Kind{outcome.Canceled}) {
			t.Errorf("twin released with %v, want [canceled]", got)
		}
		if r.Attempts != 2 || r.LastTier != 0 {
			t.Errorf("%d attempts, want 2 (a hedge is an attempt)", r.Attempts)
		}
		if won, lost := rg.hedges("won"), rg.hedges("lost"); won != 0 || lost != 1 {
			t.Errorf("hedges won %g lost %g, want 0 and 1", won, lost)
		}
	})
}

// TestHedgeRefused: the other provider is at max_concurrency: the twin is
// refused like any attempt, so no hedge; the first answers in its time.
func TestHedgeRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{steps: []step2{{2 * time.Second, true}}}
		rg := newRig(t, retryEvery, tgt{name: "a", a: sc.fake("a")}, tgt{name: "b", a: sc.fake("b"), cfg: provider.Config{MaxConcurrency: 1}})
		rg.pol.Hedge = hedge.Config{After: 300 * time.Millisecond, MaxShare: 1}
		held, err := rg.provs["b"].Up.Acquire(time.Now(), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release(time.Now(), upstream.Result{Kind: outcome.OK})
		start := time.Now()
		r, res := rg.walk(t.Context(), time.Minute)
		if servedBy(res) != "a" || r.Attempts != 1 || time.Since(start) != 2*time.Second {
			t.Fatalf("served by %q after %d attempts and %s, want a after 1, at 2s", servedBy(res), r.Attempts, time.Since(start))
		}
		if calls := sc.calls(); len(calls) != 1 {
			t.Errorf("calls %v, want a only", calls)
		}
		if won, lost := rg.hedges("won"), rg.hedges("lost"); won+lost != 0 {
			t.Errorf("hedges won %g lost %g, want none", won, lost)
		}
		if !rg.loop.share.Take(1) { // one request counted: room for one hedge at max_share 1
			t.Error("the refused hedge was not given back to the share")
		}
	})
}

// TestHedgeShare: every first content is slow, so every request would
// hedge; at most max_share of them do.
func TestHedgeShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{steps: []step2{{time.Second, true}}}
		rg := hedgeRig(t, sc, retryEvery, 0.2, "a", "b")
		const n = 20
		for range n {
			if _, res := rg.walk(t.Context(), time.Minute); res.Served == nil {
				t.Fatal("not served")
			}
		}
		hedged := rg.hedges("won") + rg.hedges("lost")
		if hedged < 1 || hedged > 0.2*n {
			t.Errorf("%g of %d requests hedged, want at least 1 and at most %g (max_share 0.2)", hedged, n, 0.2*n)
		}
		if calls := len(sc.calls()); calls != n+int(hedged) {
			t.Errorf("%d calls, want %d: one per request and one per hedge", calls, n+int(hedged))
		}
	})
}

// TestHedgeBothFail: both attempts fail; the walk goes on to the next
// candidate at once, and does not hedge again though that one is slow
// too. With max_attempts 2, the hedge is the last attempt.
func TestHedgeBothFail(t *testing.T) {
	steps := []step2{{time.Second, false}, {time.Second, false}, {time.Second, true}}
	t.Run("next candidate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sc := &script{steps: steps}
			retry := retryEvery
			retry.MaxAttempts = 5
			rg := hedgeRig(t, sc, retry, 1, "a", "b", "c")
			start := time.Now()
			r, res := rg.walk(t.Context(), time.Minute)
			calls := sc.calls()
			if len(calls) != 3 || servedBy(res) != calls[2] || res.Served.Hedged {
				t.Fatalf("calls %v, served by %q; want three calls, the third serving unhedged", calls, servedBy(res))
			}
			if slices.Contains(calls[:2], calls[2]) {
				t.Errorf("calls %v: the third went to a provider that just failed, want the next candidate", calls)
			}
			// The twin failed at 1.3s; the next candidate was sent at once.
			if took := time.Since(start); took != 2300*time.Millisecond {
				t.Errorf("answered after %s, want 2.3s", took)
			}
			if r.Attempts != 3 || len(r.Failures) != 2 {
				t.Errorf("%d attempts, %d failures; want 3 and 2", r.Attempts, len(r.Failures))
			}
			for _, name := range calls[:2] {
				if got := rg.done.of(name); !slices.Equal(got, []outcome.Kind{outcome.ServerError}) {
					t.Errorf("%s released with %v, want [server_error]", name, got)
				}
			}
			if won, lost := rg.hedges("won"), rg.hedges("lost"); won != 0 || lost != 1 {
				t.Errorf("hedges won %g lost %g, want 0 and 1", won, lost)
			}
		})
	})
	t.Run("the hedge is the last attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sc := &script{steps: steps}
			retry := retryEvery
			retry.MaxAttempts = 2
			rg := hedgeRig(t, sc, retry, 1, "a", "b", "c")
			r, res := rg.walk(t.Context(), time.Minute)
			if res.Served != nil || r.Attempts != 2 || len(sc.calls()) != 2 {
				t.Errorf("served by %q after %d attempts, calls %v; want nothing served after 2", servedBy(res), r.Attempts, sc.calls())
			}
		})
	})
}

// TestHedgeOff: with hedging off (or one provider) a slow attempt is
// never raced.
func TestHedgeOff(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after time.Duration
		names []string
	}{{"off", 0, []string{"a", "b"}}, {"one provider", 300 * time.Millisecond, []string{"a"}}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc := &script{steps: []step2{{2 * time.Second, true}}}
				rg := hedgeRig(t, sc, retryEvery, 1, tt.names...)
				rg.pol.Hedge.After = tt.after
				if _, res := rg.walk(t.Context(), time.Minute); res.Served == nil || len(sc.calls()) != 1 {
					t.Errorf("served %v, calls %v; want served by one call", res.Served != nil, sc.calls())
				}
			})
		})
	}
}

// TestWalkFirstTokenTimeoutPerTarget: a target's first_token_timeout wins
// over its provider's (20s here): a first content at 800ms fails the
// target of 300ms over, at 300ms, and the target of 3s serves it.
func TestWalkFirstTokenTimeoutPerTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{steps: []step2{{d: 800 * time.Millisecond, ok: true}}, stream: true}
		rg := newRig(t, retryEvery, tgt{name: "small", a: sc.fake("small"), ftt: 300 * time.Millisecond},
			tgt{name: "reasoning", tier: 1, a: sc.fake("reasoning"), ftt: 3 * time.Second})
		start := time.Now()
		r, res := rg.walkStream(t.Context(), time.Minute)
		if got := servedBy(res); got != "reasoning" {
			t.Fatalf("served by %q (%s), want reasoning", got, r.FailureList())
		}
		if len(r.Failures) != 1 || r.Failures[0].Provider != "small" {
			t.Errorf("failures %s, want small's (cut by its first-token timer)", r.FailureList())
		}
		if took := time.Since(start); took != 1100*time.Millisecond {
			t.Errorf("served after %s, want 300ms + 800ms", took)
		}
	})
}
