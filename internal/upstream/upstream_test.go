package upstream

import (
	"errors"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newGuard(maxConc int, rpm, tpm int64) *Upstream {
	return New(provider.Descriptor{Name: "p", Config: provider.Config{Name: "p", MaxConcurrency: maxConc, RPM: rpm, TPM: tpm}},
		shared.Policy{Breaker: breaker.DefaultConfig()}, Options{})
}

func TestAcquireRollsBackOnRefusal(t *testing.T) {
	t.Run("bulkhead full gives back nothing charged", func(t *testing.T) {
		g := newGuard(1, 10, 0)
		p, err := g.Acquire(t0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Acquire(t0, 1); !errors.Is(err, ErrFull) {
			t.Fatalf("second acquire: %v, want ErrFull", err)
		}
		if got := g.Status(t0).RemainingRequests; got != 9 {
			t.Errorf("remaining requests = %d, want 9 (the refused acquire charged nothing)", got)
		}
		p.Release(t0, Result{Kind: outcome.OK})
		if got := g.Status(t0).InFlight; got != 0 {
			t.Errorf("in flight = %d, want 0", got)
		}
	})
	t.Run("bucket refusal releases the bulkhead", func(t *testing.T) {
		g := newGuard(5, 1, 0)
		p, _ := g.Acquire(t0, 1)
		p.Release(t0, Result{Kind: outcome.OK})
		_, err := g.Acquire(t0, 1)
		var le *ratelimit.LimitedError
		if !errors.As(err, &le) || le.Wait <= 0 {
			t.Fatalf("got %v, want a LimitedError with a wait", err)
		}
		if got := g.Status(t0).InFlight; got != 0 {
			t.Errorf("in flight after refusal = %d, want 0", got)
		}
	})
	t.Run("too large for the whole token budget", func(t *testing.T) {
		g := newGuard(5, 0, 1000)
		if _, err := g.Acquire(t0, 5000); !errors.Is(err, ratelimit.ErrTooLarge) {
			t.Fatalf("got %v, want ErrTooLarge", err)
		}
		if g.Status(t0).InFlight != 0 {
			t.Error("too-large request holds a bulkhead slot")
		}
	})
}

func TestReleaseTwicePanics(t *testing.T) {
	g := newGuard(1, 0, 0)
	p, _ := g.Acquire(t0, 1)
	p.Release(t0, Result{})
	defer func() {
		if recover() == nil {
			t.Error("second Release did not panic")
		}
	}()
	p.Release(t0, Result{})
}

func TestRetryAfterBlocksUntilThenReopens(t *testing.T) {
	g := newGuard(10, 0, 0)
	p, _ := g.Acquire(t0, 1)
	p.Release(t0, Result{Kind: outcome.RateLimited, RetryAfter: 2 * time.Second})
	for _, at := range []time.Duration{0, time.Second, 1999 * time.Millisecond} {
		if _, err := g.Acquire(t0.Add(at), 1); !errors.Is(err, ratelimit.ErrLimited) {
			t.Errorf("at +%s: %v, want limited", at, err)
		}
	}
	p, err := g.Acquire(t0.Add(2*time.Second), 1)
	if err != nil {
		t.Fatalf("at +2s: %v, want admitted (not the 120s breaker cooldown)", err)
	}
	p.Release(t0.Add(2*time.Second), Result{Kind: outcome.OK})
}

func TestAnnouncedEmptyBudgetBlocksBefore429(t *testing.T) {
	g := newGuard(10, 0, 0)
	p, _ := g.Acquire(t0, 1)
	rl := outcome.UnknownRateLimit
	rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests = 100, 0, time.Second
	p.Release(t0, Result{Kind: outcome.OK, RateLimit: rl})
	if _, err := g.Acquire(t0.Add(500*time.Millisecond), 1); !errors.Is(err, ratelimit.ErrLimited) {
		t.Fatalf("at +500ms: %v, want limited", err)
	}
	if _, err := g.Acquire(t0.Add(time.Second), 1); err != nil {
		t.Fatalf("at +1s: %v, want admitted", err)
	}
}

func TestRetryAfterOnSuccessDoesNotBlock(t *testing.T) {
	g := newGuard(10, 0, 0)
	p, _ := g.Acquire(t0, 1)
	p.Release(t0, Result{Kind: outcome.OK, RetryAfter: time.Minute})
	if _, err := g.Acquire(t0, 1); err != nil {
		t.Fatalf("got %v, want admitted", err)
	}
}

func TestBreakerTripRefusesAndRecordsKind(t *testing.T) {
	g := newGuard(10, 0, 0)
	for i := 0; i < 5; i++ {
		p, err := g.Acquire(t0, 1)
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		p.Release(t0, Result{Kind: outcome.ServerError})
	}
	_, err := g.Acquire(t0, 1)
	var oe *breaker.OpenError
	if !errors.As(err, &oe) || oe.RetryIn != 30*time.Second {
		t.Fatalf("got %v, want open with 30s left", err)
	}
	s := g.Status(t0)
	if s.State != "open" || s.LastErrorKind != "server_error" || s.InFlight != 0 {
		t.Errorf("snapshot %+v", s)
	}
	if ago := g.Status(t0.Add(3 * time.Second)).LastErrorAgoSeconds; ago != 3 {
		t.Errorf("last error %vs ago at +3s, want 3", ago)
	}
	if ago := newGuard(10, 0, 0).Status(t0).LastErrorAgoSeconds; ago != -1 {
		t.Errorf("no error yet: %vs ago, want -1", ago)
	}
}

func TestClientErrorsNeverCount(t *testing.T) {
	g := newGuard(10, 0, 0)
	for i := 0; i < 50; i++ {
		p, _ := g.Acquire(t0, 1)
		p.Release(t0, Result{Kind: outcome.ClientError})
	}
	if _, err := g.Acquire(t0, 1); err != nil {
		t.Fatalf("client errors opened the breaker: %v", err)
	}
	if g.Status(t0).LastErrorKind != "" {
		t.Error("client error recorded as the provider's last error")
	}
}

// BenchmarkAcquireRelease is one attempt's admission and release on a
// healthy provider: breaker, bulkhead and both buckets.
func BenchmarkAcquireRelease(b *testing.B) {
	g := newGuard(1<<20, 0, 0)
	now := t0
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := g.Acquire(now, 500)
			if err != nil {
				b.Error(err)
				return
			}
			p.Release(now, Result{Kind: outcome.OK, Usage: outcome.Usage{PromptTokens: 100, CompletionTokens: 300}})
		}
	})
}

// TestDown: a provider counts as down for its failure domain while its
// breaker is open or while it is failing, with too few failures to trip.
func TestDown(t *testing.T) {
	attempt := func(u *Upstream, at time.Time, r Result) {
		t.Helper()
		p, err := u.Acquire(at, 1)
		if err != nil {
			t.Fatal(err)
		}
		p.Release(at, r)
	}
	boom := Result{Kind: outcome.ServerError}
	t.Run("healthy", func(t *testing.T) {
		u := newGuard(0, 0, 0)
		attempt(u, t0, Result{Kind: outcome.OK})
		if u.Down(t0) {
			t.Error("down after a success")
		}
	})
	t.Run("one failure is not down", func(t *testing.T) {
		u := newGuard(0, 0, 0)
		attempt(u, t0, boom)
		if u.Down(t0) {
			t.Error("down after one failure")
		}
	})
	t.Run("failing, breaker closed", func(t *testing.T) {
		u := newGuard(0, 0, 0)
		attempt(u, t0, boom)
		attempt(u, t0, boom)
		if open, _ := u.IsOpen(t0); open || !u.Down(t0) {
			t.Errorf("open %v, down %v: want closed and down", open, u.Down(t0))
		}
		attempt(u, t0, Result{Kind: outcome.OK})
		if u.Down(t0) {
			t.Error("still down after a success")
		}
	})
	t.Run("rate limits with a reset are a budget, not failures", func(t *testing.T) {
		u := newGuard(0, 0, 0)
		for i := range 2 {
			now := t0.Add(time.Duration(i) * time.Minute)
			attempt(u, now, Result{Kind: outcome.RateLimited, RetryAfter: time.Second})
		}
		if u.Down(t0.Add(time.Minute)) {
			t.Error("down after rate limits that named their reset")
		}
	})
	t.Run("open", func(t *testing.T) {
		u := New(provider.Descriptor{Name: "p", Config: provider.Config{Name: "p"}},
			shared.Policy{Breaker: breaker.Config{FailureThreshold: breaker.Threshold{Consecutive: 1, Window: time.Minute},
				Cooldown: breaker.Cooldown{Failure: time.Hour, RateLimit: time.Hour, Timeout: time.Hour, Multiplier: 1, Max: time.Hour}}}, Options{})
		attempt(u, t0, Result{Kind: outcome.Auth})
		if open, _ := u.IsOpen(t0); !open || !u.Down(t0) {
			t.Errorf("open %v, down %v: want both", open, u.Down(t0))
		}
	})
}
