package bulkhead

import "sync/atomic"

// Bulkhead is a non-blocking counting semaphore for one provider. Use New;
// the zero value is an unlimited bulkhead without a Signal.
type Bulkhead struct {
	inFlight atomic.Int64 // permits held now
	capacity int64        // <= 0: no limit
	sig      *Signal      // nil: nobody is told about releases
}

// New returns a bulkhead admitting at most capacity attempts at once;
// capacity <= 0 means no limit (TryAcquire always succeeds, InFlight still
// counts). sig, which may be nil, is told of every Release; share one Signal
// among all bulkheads so a waiter wakes on a release anywhere.
func New(capacity int, sig *Signal) *Bulkhead {
	return &Bulkhead{capacity: int64(capacity), sig: sig}
}

// TryAcquire takes a permit if one is free and reports whether it did. It
// never blocks. Every true must be followed by exactly one Release.
func (b *Bulkhead) TryAcquire() bool {
	if b.capacity <= 0 {
		b.inFlight.Add(1)
		return true
	}
	for {
		n := b.inFlight.Load()
		if n >= b.capacity {
			return false
		}
		if b.inFlight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release gives back a permit taken by TryAcquire and wakes the waiters of
// the Signal, if any. It panics when no permit is held: an unbalanced release
// is a bug that would otherwise lift the cap for good.
func (b *Bulkhead) Release() {
	for {
		n := b.inFlight.Load()
		if n <= 0 {
			panic("bulkhead: release without a matching acquire")
		}
		if b.inFlight.CompareAndSwap(n, n-1) {
			break
		}
	}
	// After the decrement, so a waiter that took C() before seeing the
	// bulkhead full is woken (see the package doc).
	b.sig.notify()
}

// InFlight returns the number of permits held now.
func (b *Bulkhead) InFlight() int { return int(b.inFlight.Load()) }

// Cap returns the capacity given to New; 0 or less means no limit.
func (b *Bulkhead) Cap() int { return int(b.capacity) }

// Signal tells waiters that some bulkhead sharing it released a permit.
// Use NewSignal; the zero value is ready to use too. A nil *Signal never
// signals.
type Signal struct {
	cur atomic.Pointer[wake] // the round handed out by C; nil: nobody asked since the last release
}

// wake is one round of waiting: its channel is closed once.
type wake struct{ c chan struct{} }

// NewSignal returns a Signal to share among bulkheads.
func NewSignal() *Signal { return &Signal{} }

// C returns a channel that is closed at the next Release of any bulkhead
// sharing s. Every caller in the same round gets the same channel; after it
// is closed the next C arms a fresh one. Take C before the TryAcquire that
// decides to wait, never after. A nil Signal returns a nil channel, which
// never fires.
func (s *Signal) C() <-chan struct{} {
	if s == nil {
		return nil
	}
	for {
		if w := s.cur.Load(); w != nil {
			return w.c
		}
		w := &wake{c: make(chan struct{})}
		if s.cur.CompareAndSwap(nil, w) {
			return w.c
		}
	}
}

// notify closes the current round's channel, if anyone asked for one.
func (s *Signal) notify() {
	if s == nil || s.cur.Load() == nil {
		return // nobody waiting: the common case costs one load
	}
	if w := s.cur.Swap(nil); w != nil {
		close(w.c)
	}
}
