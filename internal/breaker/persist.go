package breaker

import (
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Persisted is a Breaker's state for the state file (docs/ARCHITECTURE.md,
// "Warm restart"), JSON-serialisable. Its deadline is a wall-clock instant:
// a monotonic reading means nothing to another process. The closed
// spell's window is not kept: a restarted breaker that was closed starts
// with an empty window.
type Persisted struct {
	// State is "closed", "half_open" or "open".
	State string `json:"state"`
	// OpenUntil is when the next probe was due, wall clock; zero when
	// closed. It may be in the past (half-open, or a probe overdue).
	OpenUntil time.Time `json:"open_until,omitzero"`
	// Trips counts consecutive trips and reopens since the last close: the
	// next cooldown is grown ×multiplier^Trips. 0 when closed.
	Trips int `json:"trips,omitempty"`
	// TripKind is the kind that caused the current trip; "" when closed.
	TripKind string `json:"trip_kind,omitempty"`
	// LastKind is the kind of the last counted failure; "" none yet.
	LastKind string `json:"last_kind,omitempty"`
}

// Export returns the breaker's state at now (time.Now(): monotonic) for
// Restore, possibly in another process. Looking at the breaker applies a
// due Open → HalfOpen transition, as Snapshot does.
func (b *Breaker) Export(now time.Time) Persisted {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.observeLocked(now)
	p := Persisted{State: st.String(), Trips: b.trips, LastKind: kindName(b.lastKind)}
	if st != Closed {
		p.TripKind = kindName(b.tripKind)
		p.OpenUntil = wallOf(now, b.openUntil)
	}
	return p
}

// Restore loads p, exported at any time before now (possibly by another
// process), into a Breaker that has not been used yet. An open or
// half-open p restores as open: with the time left until its probe when
// that is still ahead of now (capped at cooldown.max, so a wall clock
// set back cannot stretch it), else with the probe due at once (the
// cooldown passed while the router was down; a probe still decides). The
// transition goes through OnStateChange like any trip, so gauges and
// transition counters see it. The trips count carries over: the next
// reopen grows the cooldown from it. A closed p (or one this version
// cannot read) leaves the breaker closed with an empty window; only its
// LastKind is kept.
func (b *Breaker) Restore(now time.Time, p Persisted) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastKind = kindOf(p.LastKind, outcome.OK)
	if p.State != Open.String() && p.State != HalfOpen.String() {
		return
	}
	b.trips = max(p.Trips, 1)
	b.tripKind = kindOf(p.TripKind, outcome.Unknown)
	b.openUntil, b.openFor = now, 0
	if left := untilWall(now, p.OpenUntil); left > 0 {
		b.openUntil = now.Add(min(left, b.cfg.Cooldown.Max))
	}
	b.win = nil
	b.setStateLocked(Open)
}

// wallOf turns the monotonic deadline d, read at now, into a wall-clock
// instant another process can read: now's wall reading plus the time left.
func wallOf(now, d time.Time) time.Time {
	return now.Round(0).Add(d.Sub(now))
}

// untilWall is how long after now the wall-clock instant w is; <= 0 when
// it has passed (or w is zero).
func untilWall(now, w time.Time) time.Duration {
	if w.IsZero() {
		return 0
	}
	return w.Sub(now.Round(0))
}

// kindName is k's name; "" for OK (none).
func kindName(k outcome.Kind) string {
	if k == outcome.OK {
		return ""
	}
	return k.String()
}

// kindOf is the kind named name; def when name is "" or unknown.
func kindOf(name string, def outcome.Kind) outcome.Kind {
	for _, k := range outcome.Kinds() {
		if name != "" && k.String() == name {
			return k
		}
	}
	return def
}
