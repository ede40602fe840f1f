package quota

import (
	"sync"
	"sync/atomic"
	"time"
)

// Block is one provider's out-of-quota block. Build it with New; all
// methods are safe for concurrent use.
type Block struct {
	recheck time.Duration

	mu       sync.Mutex // guards on, until, next, checking
	on       bool
	until    time.Time // the reset the provider named; zero when it did not
	next     time.Time // when one real request may check
	checking bool      // that request is in flight

	off atomic.Bool // mirrors on, for lock-free reads
}

// New returns a Block that is not on, whose checks come recheck apart
// (breaker.quota_recheck; > 0).
func New(recheck time.Duration) *Block { return &Block{recheck: recheck} }

// Recheck is how long after a quota answer one request checks again.
func (b *Block) Recheck() time.Duration { return b.recheck }

// Off reports, without locking, whether the block is on.
func (b *Block) Off() bool { return b.off.Load() }

// Admit decides an attempt at now: past the reset the provider named, the
// block is lifted (lifted true) and the attempt goes; at the recheck time
// one attempt (at a time) goes to check (check true: report its answer to
// Answered or Quota, or give the turn back with CheckDone); otherwise it
// waits until the next check or the reset, whichever comes first. A Block
// that is not on admits everything without a check.
func (b *Block) Admit(now time.Time) (wait time.Duration, check, lifted bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.on {
		return 0, true, false
	}
	if !b.until.IsZero() && !now.Before(b.until) {
		b.liftLocked()
		return 0, true, true
	}
	if !b.checking && !now.Before(b.next) {
		b.checking = true
		return 0, true, false
	}
	wait = b.next.Sub(now)
	if !b.until.IsZero() {
		wait = min(wait, b.until.Sub(now))
	}
	return max(wait, 0), false, false
}

// CheckDone ends a check that was not sent.
func (b *Block) CheckDone() {
	b.mu.Lock()
	b.checking = false
	b.mu.Unlock()
}

// Answered ends a check the provider answered with something other than
// quota: an answer that counts (outcome.Kind.Counts) lifts the block, and
// Answered reports that it did.
func (b *Block) Answered(counts bool) (lifted bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.checking && counts {
		b.liftLocked()
		return true
	}
	b.checking = false
	return false
}

// Quota records a quota answer at now: the block is on, the next check one
// recheck later, until the provider's reset (0: it named none). first
// reports that the block was not on before.
func (b *Block) Quota(now time.Time, reset time.Duration) (first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first = !b.on
	b.on, b.checking = true, false
	b.next = now.Add(b.recheck)
	if reset > 0 {
		b.until = now.Add(reset)
	} else {
		b.until = time.Time{}
	}
	b.off.Store(true)
	return first
}

// Lift ends the block (an operator's enable); it reports whether it was
// on.
func (b *Block) Lift() (was bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	was = b.on
	b.liftLocked()
	return was
}

func (b *Block) liftLocked() {
	b.on, b.until, b.next, b.checking = false, time.Time{}, time.Time{}, false
	b.off.Store(false)
}

// Mirror makes the block show a state decided elsewhere (the fleet's) at
// now: on, with its next check left from now, or not on. It reports
// whether that lifted a block that was on.
func (b *Block) Mirror(now time.Time, on bool, left time.Duration) (lifted bool) {
	if on == b.off.Load() && !on {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if on {
		b.on, b.until = true, time.Time{}
		b.next = now.Add(left)
		b.off.Store(true)
		return false
	}
	if b.on {
		b.liftLocked()
		return true
	}
	return false
}

// Status reports whether the block is on at now and how long until it
// could lift (the next check or the reset, whichever comes first).
func (b *Block) Status(now time.Time) (on bool, left time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.on {
		return false, 0
	}
	left = max(b.next.Sub(now), 0)
	if !b.until.IsZero() {
		left = min(left, max(b.until.Sub(now), 0))
	}
	return true, left
}

// Persisted is a Block that is on, for the state file; its instants are
// wall-clock: a monotonic reading means nothing to another process.
type Persisted struct {
	// Until is the reset the provider named; zero when it named none.
	Until time.Time `json:"until,omitzero"`
	// NextCheck is when one real request may check whether quota is back.
	NextCheck time.Time `json:"next_check"`
}

// Export returns the block at now (time.Now(): monotonic) for Restore,
// possibly in another process; nil when it is not on.
func (b *Block) Export(now time.Time) *Persisted {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.on {
		return nil
	}
	p := &Persisted{NextCheck: wallOf(now, b.next)}
	if !b.until.IsZero() {
		p.Until = wallOf(now, b.until)
	}
	return p
}

// Restore loads p, exported at any time before now, into a Block that
// has not been used yet. A named reset that passed while the router was
// down leaves the block off; a check that fell due is due at once; none
// is further off than one recheck (a wall clock set back).
func (b *Block) Restore(now time.Time, p Persisted) {
	until := monoDeadline(now, p.Until)
	if !p.Until.IsZero() && until.IsZero() {
		return
	}
	next := monoDeadline(now, p.NextCheck)
	if next.IsZero() {
		next = now
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.on, b.until, b.next, b.checking = true, until, minTime(next, now.Add(b.recheck)), false
	b.off.Store(true)
}

// wallOf turns the monotonic instant t, read at now, into a wall-clock
// instant another process can read.
func wallOf(now, t time.Time) time.Time { return now.Round(0).Add(t.Sub(now)) }

// monoDeadline turns the wall-clock deadline w into one on now's clock;
// zero when w is zero or not ahead of now.
func monoDeadline(now, w time.Time) time.Time {
	if w.IsZero() {
		return time.Time{}
	}
	if left := w.Sub(now.Round(0)); left > 0 {
		return now.Add(left)
	}
	return time.Time{}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
