package confirm

import (
	"context"
	"sync"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Key is what one check confirms: a kind, and for TargetMissing the
// target's model ("" for a provider-wide kind).
type Key struct {
	Kind  outcome.Kind
	Model string
}

// Check runs the router's own minimal request and says whether it met the
// suspected kind (confirmed) and whether it came to a verdict at all
// (conclusive: false when the request that ran it went away).
type Check func() (confirmed, conclusive bool)

// Checks are one provider's confirmations. Build it with New; all methods
// are safe for concurrent use.
type Checks struct {
	every time.Duration

	mu      sync.Mutex // guards last, running
	last    map[Key]verdict
	running map[Key]*flight
}

type verdict struct {
	at        time.Time
	confirmed bool
}

// flight is a check in flight; done is closed once confirmed is set.
type flight struct {
	done      chan struct{}
	confirmed bool
}

// New returns Checks whose verdicts stand for every (> 0): at most one
// check per key starts in that time.
func New(every time.Duration) *Checks {
	return &Checks{every: every, last: map[Key]verdict{}, running: map[Key]*flight{}}
}

// Confirm says whether the suspicion k is confirmed at now: by the verdict
// of a check younger than every, else by the check in flight (waited for,
// bounded by ctx: false when ctx ends first), else by running check now.
func (c *Checks) Confirm(ctx context.Context, now time.Time, k Key, check Check) bool {
	c.mu.Lock()
	if v, ok := c.last[k]; ok && now.Sub(v.at) < c.every && !now.Before(v.at) {
		c.mu.Unlock()
		return v.confirmed
	}
	if f, ok := c.running[k]; ok {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.confirmed
		case <-ctx.Done():
			return false
		}
	}
	f := &flight{done: make(chan struct{})}
	c.running[k] = f
	c.mu.Unlock()

	confirmed, conclusive := false, false
	defer func() {
		// A check that panicked ends as unconfirmed and unremembered, so
		// its waiters are not left hanging.
		c.mu.Lock()
		delete(c.running, k)
		if conclusive {
			c.last[k] = verdict{at: now, confirmed: confirmed}
		}
		f.confirmed = confirmed
		c.mu.Unlock()
		close(f.done)
	}()
	confirmed, conclusive = check()
	confirmed = confirmed && conclusive
	return confirmed
}

// Forget drops every verdict (an operator's enable, which asks the router
// to believe the provider again).
func (c *Checks) Forget() {
	c.mu.Lock()
	clear(c.last)
	c.mu.Unlock()
}
