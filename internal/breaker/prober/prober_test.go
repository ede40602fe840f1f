package prober_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/breaker/prober"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

var errBoom = &outcome.Error{Kind: outcome.ServerError, Status: 500}

// tripNow opens b with five server errors.
func tripNow(t testing.TB, b *breaker.Breaker) {
	t.Helper()
	for range 5 {
		tk, err := b.Allow(time.Now())
		if err != nil {
			t.Fatalf("Allow() = %v, want admitted", err)
		}
		b.Done(time.Now(), tk, outcome.ServerError, 0)
	}
	if s := b.Snapshot(time.Now()).State; s != breaker.Open {
		t.Fatalf("state after 5 failures = %s, want open", s)
	}
}

// script is a probe that plays its steps in order and records when (since
// t0) each ran: "hang" waits for its context, "fail" errs, "ok" succeeds.
type script struct {
	t0    time.Time
	steps []string

	mu sync.Mutex // guards at
	at []time.Duration
}

func (s *script) probe(ctx context.Context) error {
	s.mu.Lock()
	i := len(s.at)
	s.at = append(s.at, time.Since(s.t0))
	s.mu.Unlock()
	switch s.steps[min(i, len(s.steps)-1)] {
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	case "fail":
		return errBoom
	}
	return nil
}

func (s *script) times() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.at...)
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New("p", breaker.DefaultConfig(), breaker.Options{})
		s := &script{t0: time.Now(), steps: []string{"hang", "fail", "ok", "ok"}}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			prober.Run(ctx, b, s.probe, 5*time.Second)
		}()

		synctest.Wait() // closed: the prober waits for a trip
		tripNow(t, b)   // at 0s: due at 30s
		time.Sleep(200 * time.Second)
		synctest.Wait()
		// 30s: hangs, times out at 35s: timeout cooldown 60s×1.5 → due 125s.
		// 125s: fails: 30s×1.5² = 67.5s → due 192.5s. 192.5s: closes.
		want := []time.Duration{30 * time.Second, 125 * time.Second, 192500 * time.Millisecond}
		if got := s.times(); !equalDurations(got, want) {
			t.Errorf("probes ran at %v, want %v", got, want)
		}
		if got := b.Snapshot(time.Now()).State; got != breaker.Closed {
			t.Errorf("state at 200s = %s, want closed", got)
		}

		tripNow(t, b) // at 200s: growth was reset, due at 230s
		time.Sleep(100 * time.Second)
		synctest.Wait()
		want = append(want, 230*time.Second)
		if got := s.times(); !equalDurations(got, want) {
			t.Errorf("probes ran at %v, want %v", got, want)
		}

		cancel()
		<-stopped
	})
}

func TestRunStopsWhileProbing(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New("p", breaker.DefaultConfig(), breaker.Options{})
		s := &script{t0: time.Now(), steps: []string{"hang"}}
		tripNow(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			prober.Run(ctx, b, s.probe, 0) // no timeout: only ctx ends the probe
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := len(s.times()); got != 1 {
			t.Fatalf("probes run = %d, want 1 (still hanging)", got)
		}
		cancel()
		<-stopped
		// A canceled probe says nothing about the provider.
		snap := b.Snapshot(time.Now())
		if snap.State != breaker.HalfOpen || snap.ConsecutiveTrips != 1 {
			t.Errorf("after shutdown mid-probe: %s, %d trips; want half_open, 1 trip", snap.State, snap.ConsecutiveTrips)
		}
	})
}

func TestRunStopsWhileWaiting(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range []struct {
		name string
		trip bool
	}{{"closed", false}, {"open", true}} {
		t.Run(tc.name, func(t *testing.T) {
			// Real time: the loop blocks on ctx, changed or a 30s timer.
			b := breaker.New("p", breaker.DefaultConfig(), breaker.Options{})
			if tc.trip {
				tripNow(t, b)
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				prober.Run(ctx, b, func(context.Context) error { return nil }, time.Second)
			}()
			cancel()
			<-stopped
		})
	}
}

func TestTwoProbersStaySingleFlight(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New("p", breaker.DefaultConfig(), breaker.Options{})
		s := &script{t0: time.Now(), steps: []string{"fail", "ok"}}
		var inFlight, maxInFlight atomic.Int32
		probe := func(ctx context.Context) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
			}
			time.Sleep(time.Second) // the other prober finds this one running
			return s.probe(ctx)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { prober.Run(ctx, b, probe, 5*time.Second) })
		}
		tripNow(t, b)
		time.Sleep(100 * time.Second)
		synctest.Wait()
		// 30s: fails at 31s → 45s → due 76s; closes at 77s.
		want := []time.Duration{31 * time.Second, 77 * time.Second}
		if got := s.times(); !equalDurations(got, want) {
			t.Errorf("probes ran at %v, want %v", got, want)
		}
		if got := maxInFlight.Load(); got != 1 {
			t.Errorf("max probes in flight = %d, want 1", got)
		}
		cancel()
		wg.Wait()
	})
}
