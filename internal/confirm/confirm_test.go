package confirm

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

var (
	t0    = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	quota = Key{Kind: outcome.Quota}
)

// TestConfirmSteps: verdicts stand for every, per key; an inconclusive
// check is not remembered.
func TestConfirmSteps(t *testing.T) {
	c := New(30 * time.Second)
	runs := 0
	answer := func(confirmed, conclusive bool) Check {
		return func() (bool, bool) { runs++; return confirmed, conclusive }
	}
	missA, missB := Key{outcome.TargetMissing, "a"}, Key{outcome.TargetMissing, "b"}
	for i, s := range []struct {
		at    time.Duration
		key   Key
		check Check
		want  bool
		runs  int // checks run so far
	}{
		{0, quota, answer(false, true), false, 1},
		{10 * time.Second, quota, answer(true, true), false, 1},  // the verdict stands: no check
		{29 * time.Second, quota, answer(true, true), false, 1},  // still
		{30 * time.Second, quota, answer(true, true), true, 2},   // every passed: a new check
		{31 * time.Second, quota, answer(false, true), true, 2},  // its verdict stands
		{31 * time.Second, missA, answer(true, true), true, 3},   // another key checks apart
		{32 * time.Second, missB, answer(true, false), false, 4}, // inconclusive: unconfirmed...
		{33 * time.Second, missB, answer(false, true), false, 5}, // ...and not remembered
		{34 * time.Second, missB, answer(true, true), false, 5},
		{-time.Minute, missB, answer(true, true), true, 6}, // a clock gone back checks again
	} {
		if got := c.Confirm(context.Background(), t0.Add(s.at), s.key, s.check); got != s.want || runs != s.runs {
			t.Fatalf("step %d (%v at %v): got %v after %d checks, want %v after %d", i, s.key, s.at, got, runs, s.want, s.runs)
		}
	}
	c.Forget()
	if got := c.Confirm(context.Background(), t0.Add(35*time.Second), quota, answer(false, true)); got || runs != 7 {
		t.Errorf("after Forget: got %v after %d checks, want a new check (false, 7)", got, runs)
	}
}

// TestConfirmSingleFlight: callers during a check wait for its verdict;
// one whose context ends stops waiting, unconfirmed.
func TestConfirmSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(30 * time.Second)
		release := make(chan struct{})
		var runs atomic.Int32
		check := func() (bool, bool) {
			runs.Add(1)
			<-release
			return true, true
		}
		var wg sync.WaitGroup
		got := make([]bool, 5)
		for i := range got {
			wg.Go(func() { got[i] = c.Confirm(context.Background(), t0, quota, check) })
			synctest.Wait() // the first runs the check; the others wait for it
		}
		ctx, cancel := context.WithCancel(context.Background())
		var gone bool
		wg.Go(func() { gone = c.Confirm(ctx, t0, quota, check) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		close(release)
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Errorf("checks run: %d, want 1", n)
		}
		for i, g := range got {
			if !g {
				t.Errorf("caller %d: unconfirmed, want the check's verdict", i)
			}
		}
		if gone {
			t.Error("a caller whose context ended: confirmed, want unconfirmed")
		}
	})
}

// TestConfirmPanic: a check that panics leaves no waiter hanging and no
// verdict behind.
func TestConfirmPanic(t *testing.T) {
	c := New(time.Minute)
	func() {
		defer func() { _ = recover() }()
		c.Confirm(context.Background(), t0, quota, func() (bool, bool) { panic("boom") })
	}()
	if got := c.Confirm(context.Background(), t0, quota, func() (bool, bool) { return true, true }); !got {
		t.Error("after a panicking check: unconfirmed, want a new check's verdict")
	}
}
