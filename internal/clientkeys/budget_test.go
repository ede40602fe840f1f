package clientkeys

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestBudgetUnderConcurrency: eight clients sending $5 requests against a
// $50 budget, each request reserving estimate: at least 10 are served
// (a reservation alone never refuses), never more than the budget plus
// the requests in flight when it was reached (17), and every refusal is
// budget_exceeded with the time to midnight.
func TestBudgetUnderConcurrency(t *testing.T) {
	for _, estimate := range []float64{0.01, 5, 500} {
		s := NewSet(prometheus.NewRegistry(), nil, nil)
		k := s.Update([]Spec{{Name: "k", Limits: Limits{BudgetUSD: 50, BudgetPeriod: "day"}}}).Lookup("k")
		base := time.Date(2025, 6, 4, 22, 0, 0, 0, time.UTC)
		start := time.Now()
		clock := func() time.Time { return base.Add(time.Since(start)) }
		var served, refused atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					tk, r := k.Admit(context.Background(), clock, 0, estimate)
					if r != nil {
						if r.Reason != Budget || r.Wait <= 0 || r.Wait > 2*time.Hour {
							t.Errorf("refusal %+v, want Budget with the time to midnight", r)
						}
						refused.Add(1)
						return
					}
					time.Sleep(time.Millisecond)
					served.Add(1)
					k.Settle(clock(), tk, 0, 5)
				}
			})
		}
		wg.Wait()
		if n := served.Load(); n < 10 || n > 17 {
			t.Errorf("estimate $%g: served %d, want 10 to 17", estimate, n)
		}
		if estimate >= 50 && served.Load() != 10 {
			t.Errorf("estimate $%g (over the budget: one at a time): served %d, want exactly 10", estimate, served.Load())
		}
		if got := testutil.ToFloat64(s.m.rejections.WithLabelValues("k", "budget")); got != float64(refused.Load()) || got != 8 {
			t.Errorf("budget rejections %g, refused %d; want 8 each", got, refused.Load())
		}
		t.Logf("estimate $%g: served %d", estimate, served.Load())
	}
}

// TestBudgetWaitEndsWithTheContext: a request waiting for reservations
// gives up when its context ends, holding nothing.
func TestBudgetWaitEndsWithTheContext(t *testing.T) {
	s := NewSet(nil, nil, nil)
	k := s.Update([]Spec{{Name: "k", Limits: Limits{BudgetUSD: 1, RPM: 10}}}).Lookup("k")
	first, r := k.Admit(context.Background(), nil, 1, 5)
	if r != nil {
		t.Fatal(r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, r := k.Admit(ctx, nil, 1, 5); r == nil || r.Reason != Deadline {
		t.Fatalf("got %+v, want Deadline", r)
	}
	k.Settle(time.Now(), first, 1, 0.5)
	if snap := k.bud.Snapshot(time.Now()); snap.Reserved != 0 || snap.InFlight != 0 {
		t.Errorf("after the wait and the settlement: %+v, want nothing reserved", snap)
	}
	if s := k.lim.Snapshot(time.Now()); s.RemainingRequests < 8 {
		t.Errorf("requests left %d, want the waiter's given back (9 of 10, refilling)", s.RemainingRequests)
	}
}
