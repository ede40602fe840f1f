package throttle

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRejectProbabilityMath(t *testing.T) {
	tests := []struct {
		name              string
		k                 float64
		requests, accepts int
		want              float64
	}{
		{"nothing yet", 2, 0, 0, 0},
		{"all accepted", 2, 100, 100, 0},
		{"half accepted, k=2", 2, 100, 50, 0},
		{"a quarter accepted, k=2", 2, 100, 25, 50.0 / 101},
		{"none accepted", 2, 100, 0, 100.0 / 101},
		{"k=1.1 tight", 1.1, 100, 50, 45.0 / 101},
		{"disabled", 0, 100, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := New(tt.k, 0)
			for i := 0; i < tt.requests; i++ {
				th.Done(t0, i < tt.accepts)
			}
			if got := th.RejectProbability(t0); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("p = %.6f, want %.6f", got, tt.want)
			}
		})
	}
}

func TestAllowUsesProbability(t *testing.T) {
	th := New(2, 0)
	for i := 0; i < 100; i++ {
		th.Done(t0, false)
	}
	// p = 100/101 now: u below it rejects, above it allows.
	if th.Allow(t0, 0.5) {
		t.Error("u 0.5 allowed at p ≈ 0.99")
	}
	if !th.Allow(t0, 0.9999) {
		t.Error("u 0.9999 rejected at p ≈ 0.99")
	}
}

func TestWindowForgets(t *testing.T) {
	th := New(2, 0)
	for i := 0; i < 100; i++ {
		th.Done(t0, false)
	}
	if th.RejectProbability(t0.Add(time.Minute)) == 0 {
		t.Fatal("forgot within the window")
	}
	if got := th.RejectProbability(t0.Add(Window + width)); got != 0 {
		t.Errorf("p = %.3f two minutes later, want 0", got)
	}
	// New traffic after the gap starts clean.
	th.Done(t0.Add(3*Window), true)
	if got := th.RejectProbability(t0.Add(3 * Window)); got != 0 {
		t.Errorf("p = %.3f after recovery, want 0", got)
	}
}

func BenchmarkAllowAccepted(b *testing.B) {
	th := New(2, 0)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		if th.Allow(now, 0.5) {
			th.Done(now, true)
		}
	}
}

// TestInFlightIsNotRefused: attempts allowed but not yet done do not count,
// so a cold burst is never throttled.
func TestInFlightIsNotRefused(t *testing.T) {
	th := New(2, 0)
	for i := 0; i < 1000; i++ {
		if !th.Allow(t0, 0) {
			t.Fatalf("attempt %d of a cold burst rejected", i)
		}
	}
}

// TestLocalRejectionsCount: while a provider refuses everything, local
// rejections keep the probability up (as in the book).
func TestLocalRejectionsCount(t *testing.T) {
	th := New(2, 0)
	for i := 0; i < 10; i++ {
		th.Done(t0, false)
	}
	before := th.RejectProbability(t0)
	if th.Allow(t0, 0) {
		t.Fatal("u=0 allowed at p > 0")
	}
	if after := th.RejectProbability(t0); after <= before {
		t.Errorf("p %.3f did not grow after a local rejection (%.3f)", after, before)
	}
}

// TestMinimumVolume: below the minimum volume nothing is rejected, however
// badly the provider does; at it the book's probability applies.
func TestMinimumVolume(t *testing.T) {
	th := New(2, 20)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 19 {
		th.Done(now, false)
		if p := th.RejectProbability(now); p != 0 {
			t.Fatalf("after %d failures (below 20): reject probability %v, want 0", i+1, p)
		}
		if !th.Allow(now, 0) {
			t.Fatalf("after %d failures (below 20): rejected", i+1)
		}
	}
	th.Done(now, false)
	if p := th.RejectProbability(now); p < 0.9 {
		t.Errorf("at 20 failures: reject probability %v, want (20-0)/21", p)
	}
}
