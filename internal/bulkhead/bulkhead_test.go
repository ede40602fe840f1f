package bulkhead

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSteps(t *testing.T) {
	type step struct {
		op       string // "acquire" or "release"
		want     bool   // acquire's result
		inFlight int    // after the step
	}
	tests := []struct {
		name     string
		capacity int
		steps    []step
	}{
		{"cap 1", 1, []step{
			{"acquire", true, 1}, {"acquire", false, 1}, {"release", false, 0}, {"acquire", true, 1},
		}},
		{"cap 2", 2, []step{
			{"acquire", true, 1}, {"acquire", true, 2}, {"acquire", false, 2},
			{"release", false, 1}, {"acquire", true, 2}, {"release", false, 1}, {"release", false, 0},
		}},
		{"cap 0 is unlimited", 0, []step{
			{"acquire", true, 1}, {"acquire", true, 2}, {"acquire", true, 3}, {"release", false, 2},
		}},
		{"negative cap is unlimited", -5, []step{
			{"acquire", true, 1}, {"acquire", true, 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.capacity, nil)
			if got := b.Cap(); got != tt.capacity {
				t.Fatalf("Cap() = %d, want %d", got, tt.capacity)
			}
			for i, s := range tt.steps {
				switch s.op {
				case "acquire":
					if got := b.TryAcquire(); got != s.want {
						t.Fatalf("step %d: TryAcquire() = %v, want %v", i, got, s.want)
					}
				case "release":
					b.Release()
				}
				if got := b.InFlight(); got != s.inFlight {
					t.Fatalf("step %d: InFlight() = %d, want %d", i, got, s.inFlight)
				}
			}
		})
	}
}

func TestUnbalancedReleasePanics(t *testing.T) {
	tests := []struct {
		name     string
		acquires int // balanced pairs before the extra release
	}{
		{"fresh", 0},
		{"after balanced pairs", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(4, NewSignal())
			for range tt.acquires {
				b.TryAcquire()
			}
			for range tt.acquires {
				b.Release()
			}
			defer func() {
				if recover() == nil {
					t.Fatalf("got no panic, want one on an unbalanced release")
				}
				if got := b.InFlight(); got != 0 {
					t.Errorf("InFlight() after the panic = %d, want 0", got)
				}
			}()
			b.Release()
		})
	}
}

func TestCapacityNeverExceeded(t *testing.T) {
	const (
		capacity   = 7
		goroutines = 100
		rounds     = 200
	)
	b := New(capacity, NewSignal())
	var holders, peak, granted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				if !b.TryAcquire() {
					continue
				}
				granted.Add(1)
				h := holders.Add(1)
				for {
					p := peak.Load()
					if h <= p || peak.CompareAndSwap(p, h) {
						break
					}
				}
				if n := b.InFlight(); n > capacity {
					t.Errorf("InFlight() = %d, want at most %d", n, capacity)
				}
				holders.Add(-1)
				b.Release()
			}
		})
	}
	wg.Wait()
	if got := peak.Load(); got > capacity {
		t.Errorf("peak holders = %d, want at most %d", got, capacity)
	}
	if got := granted.Load(); got == 0 {
		t.Errorf("granted = 0, want some permits granted")
	}
	if got := b.InFlight(); got != 0 {
		t.Errorf("InFlight() at the end = %d, want 0", got)
	}
}

func TestSignal(t *testing.T) {
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	t.Run("release on any sharing bulkhead closes it", func(t *testing.T) {
		sig := NewSignal()
		a, b := New(1, sig), New(1, sig)
		a.TryAcquire()
		b.TryAcquire()
		c := sig.C()
		if closed(c) {
			t.Fatalf("got closed before any release, want open")
		}
		if c2 := sig.C(); c2 != c {
			t.Errorf("got a different channel in the same round, want the same")
		}
		b.Release()
		if !closed(c) {
			t.Fatalf("got open after a release of another bulkhead, want closed")
		}
		c3 := sig.C()
		if closed(c3) {
			t.Errorf("got the next round closed already, want a fresh open channel")
		}
		a.Release()
		if !closed(c3) {
			t.Errorf("got the next round open after a release, want closed")
		}
	})
	t.Run("release without a waiter arms nothing", func(t *testing.T) {
		sig := NewSignal()
		b := New(1, sig)
		b.TryAcquire()
		b.Release()
		if closed(sig.C()) {
			t.Errorf("got a channel closed by a release before it was handed out, want open")
		}
	})
	t.Run("nil signal", func(t *testing.T) {
		var sig *Signal
		if c := sig.C(); c != nil {
			t.Errorf("got %v, want a nil channel", c)
		}
		b := New(1, nil)
		b.TryAcquire()
		b.Release() // must not panic
	})
}

// Waiters following the documented pattern all get through: a lost wake-up
// would leave goroutines blocked forever, which synctest reports as a
// deadlock.
func TestSignalWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const waiters = 20
		sig := NewSignal()
		full := New(1, sig)  // every waiter wants this one
		other := New(1, sig) // a release here wakes them too
		full.TryAcquire()
		other.TryAcquire()

		var served atomic.Int64
		var wg sync.WaitGroup
		for range waiters {
			wg.Go(func() {
				for {
					c := sig.C()
					if full.TryAcquire() {
						break
					}
					<-c
				}
				served.Add(1)
				full.Release()
			})
		}
		synctest.Wait() // all waiting
		if got := served.Load(); got != 0 {
			t.Fatalf("served before any release = %d, want 0", got)
		}
		other.Release() // wakes everyone; nobody gets the full one yet
		synctest.Wait()
		if got := served.Load(); got != 0 {
			t.Fatalf("served after a release elsewhere = %d, want 0", got)
		}
		full.Release()
		wg.Wait()
		if got := served.Load(); got != waiters {
			t.Errorf("served = %d, want %d", got, waiters)
		}
	})
}

func BenchmarkTryAcquireRelease(b *testing.B) {
	for _, bc := range []struct {
		name string
		sig  *Signal
	}{
		{"no signal", nil},
		{"signal without waiters", NewSignal()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bh := New(1<<30, bc.sig)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if bh.TryAcquire() {
						bh.Release()
					}
				}
			})
		})
	}
}

// Contended: capacity 1, so under -cpu 2 most attempts are refused.
func BenchmarkTryAcquireContended(b *testing.B) {
	bh := New(1, NewSignal())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if bh.TryAcquire() {
				bh.Release()
			}
		}
	})
}
