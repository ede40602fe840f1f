package breaker

import (
	"errors"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// ErrProbeElsewhere is what a probe function returns when the probe's
// verdict was reached elsewhere (another replica of a fleet held the
// fleet's probe lock) and already applied with Sync: the probe changes
// nothing and frees the slot (docs/ARCHITECTURE.md, "Fleet").
var ErrProbeElsewhere = errors.New("probe decided elsewhere")

// Mirror is a breaker state decided elsewhere: the fleet's shared view of
// the provider.
type Mirror struct {
	// State is Closed or Open; an Open mirror with Left 0 is half-open.
	State State
	// Left is how long until the next probe is due (Open only).
	Left time.Duration
	// Trips counts consecutive trips (the cooldown growth).
	Trips int
	// Kind is the failure that tripped it.
	Kind outcome.Kind
}

// Sync makes the breaker show m at now. The breaker then mirrors a state
// decided elsewhere: transitions are reported through OnStateChange as
// usual (gauges, the slow-start ramp), a close starts an empty window, and
// an open breaker's prober wakes for the new probe time. Outcomes admitted
// before a transition are ignored, as after any transition.
func (b *Breaker) Sync(now time.Time, m Mirror) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.State == Closed {
		if b.state != Closed {
			b.trips = 0
			b.openUntil = time.Time{}
			b.win = newWindow(b.name, b.cfg.FailureThreshold)
			b.setStateLocked(Closed)
		}
		return
	}
	until := now.Add(max(m.Left, 0))
	b.openFor = 0 // the fleet's time, not a trip of this process
	b.trips, b.tripKind = m.Trips, m.Kind
	if m.Kind != outcome.OK {
		b.lastKind = m.Kind
	}
	b.win = nil
	switch {
	case b.state == Closed, b.state == HalfOpen && m.Left > 0:
		b.openUntil = until
		b.setStateLocked(Open)
	case b.state == Open && !until.Equal(b.openUntil):
		b.openUntil = until
		b.broadcastLocked() // the prober waits for the new time
	}
	b.observeLocked(now)
}

// For is how long the trips-th consecutive trip caused by kind keeps the
// breaker open; retryAfter is the provider's own wait (0: none). A fleet's
// shared breaker grows its cooldowns by the same rule.
func (c Cooldown) For(kind outcome.Kind, retryAfter time.Duration, trips int) time.Duration {
	return c.cooldown(kind, retryAfter, max(trips, 1))
}
