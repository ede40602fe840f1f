package ratelimit

import (
	"math"
	"time"
)

// Persisted is a Limiter's state for the state file (docs/ARCHITECTURE.md,
// "Warm restart"), JSON-serialisable. Every instant is wall-clock: a
// monotonic reading means nothing to another process. Reservations in
// flight are not part of it: their charges stay in the levels as they
// were when saved.
type Persisted struct {
	Requests PersistedBudget `json:"requests"`
	Tokens   PersistedBudget `json:"tokens"`
	// BlockedUntil is the Retry-After block's end; zero when none.
	BlockedUntil time.Time `json:"blocked_until,omitzero"`
}

// PersistedBudget is one budget (requests or tokens).
type PersistedBudget struct {
	// Configured is the ceiling in force when saved (rpm or tpm; 0 none).
	// A Limiter configured otherwise does not take the saved ceiling
	// bucket: its level counted against another ceiling.
	Configured int64 `json:"configured,omitempty"`
	// Announced is the provider's latest announced limit; 0 never.
	Announced int64 `json:"announced,omitempty"`
	// LearnedPerSec is the refill rate learned from an announced reset,
	// units per second; 0 none.
	LearnedPerSec float64 `json:"learned_per_sec,omitempty"`
	// Ceiling and Provider are the two buckets; nil when off.
	Ceiling  *PersistedBucket `json:"ceiling,omitempty"`
	Provider *PersistedBucket `json:"provider,omitempty"`
	// Last, LastAt and LastReset are the last announced remaining, when
	// it was applied and until when counts only fall (stale detection);
	// omitted once LastReset has passed.
	Last      int64     `json:"last,omitempty"`
	LastAt    time.Time `json:"last_at,omitzero"`
	LastReset time.Time `json:"last_reset,omitzero"`
	// BlockedUntil is the end of a block for an announced remaining 0;
	// zero when none.
	BlockedUntil time.Time `json:"blocked_until,omitzero"`
}

// PersistedBucket is one token bucket: Level units at the instant At,
// refilling at PerSec up to Capacity.
type PersistedBucket struct {
	Capacity float64   `json:"capacity"`
	PerSec   float64   `json:"per_sec"`
	Level    float64   `json:"level"`
	At       time.Time `json:"at"`
}

// Export returns the limiter's state at now (time.Now(): monotonic) for
// Restore, possibly in another process. Blocks that have ended by now are
// left out.
func (l *Limiter) Export(now time.Time) Persisted {
	l.mu.Lock()
	defer l.mu.Unlock()
	now = later(now, l.last)
	return Persisted{
		Requests:     l.req.export(now),
		Tokens:       l.tok.export(now),
		BlockedUntil: wallDeadline(now, l.blockedUntil),
	}
}

// Restore loads p, exported at any time before now (possibly by another
// process), into a Limiter that has not been used yet. Deadlines still
// ahead of now become deadlines on now's clock; those already past are
// dropped. Bucket levels refill for the time between their saved instant
// and now, as if the router had never stopped (a wall clock set back
// counts as no time). The saved ceiling bucket is taken only when the
// configured ceiling is the same. Values this version cannot use
// (negative or non-finite capacities and rates) are skipped.
func (l *Limiter) Restore(now time.Time, p Persisted) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now = l.nowLocked(now)
	l.req.restore(now, p.Requests)
	l.tok.restore(now, p.Tokens)
	if until := monoDeadline(now, p.BlockedUntil); !until.IsZero() {
		l.blockedUntil = later(l.blockedUntil, until)
	}
}

func (d *dim) export(now time.Time) PersistedBudget {
	p := PersistedBudget{
		Configured:    d.configured,
		Announced:     d.announced,
		LearnedPerSec: d.learned,
		Ceiling:       d.ceil.export(now),
		Provider:      d.prov.export(now),
		BlockedUntil:  wallDeadline(now, d.blockedUntil),
	}
	if !d.lastAt.IsZero() && now.Before(d.lastReset) {
		p.Last = d.last
		p.LastAt = wallOf(now, d.lastAt)
		p.LastReset = wallOf(now, d.lastReset)
	}
	return p
}

func (d *dim) restore(now time.Time, p PersistedBudget) {
	if p.Announced > 0 {
		d.announced = p.Announced
	}
	if usable(p.LearnedPerSec) {
		d.learned = p.LearnedPerSec
	}
	if c := p.Ceiling; d.ceil.on() && c != nil && c.Capacity == d.ceil.capacity && finite(c.Level) {
		d.ceil.level = min(max(c.Level, -d.ceil.capacity), d.ceil.capacity)
		d.ceil.at = monoInstant(now, c.At)
	}
	if c := p.Provider; c != nil && usable(c.Capacity) && usable(c.PerSec) && finite(c.Level) {
		d.prov.set(monoInstant(now, c.At), c.Capacity, c.PerSec, max(c.Level, -c.Capacity))
	}
	d.gen++
	if reset := monoDeadline(now, p.LastReset); !reset.IsZero() && !p.LastAt.IsZero() {
		d.last, d.lastAt, d.lastReset = p.Last, monoInstant(now, p.LastAt), reset
	}
	if until := monoDeadline(now, p.BlockedUntil); !until.IsZero() {
		d.blockedUntil = later(d.blockedUntil, until)
	}
}

// export returns the bucket brought up to now, or nil when it is off.
func (b *bucket) export(now time.Time) *PersistedBucket {
	if !b.on() {
		return nil
	}
	return &PersistedBucket{Capacity: b.capacity, PerSec: b.rate, Level: b.levelAt(now), At: now.Round(0)}
}

// usable reports whether v is a positive finite number.
func usable(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// wallOf turns the monotonic instant t, read at now, into a wall-clock
// instant another process can read.
func wallOf(now, t time.Time) time.Time { return now.Round(0).Add(t.Sub(now)) }

// wallDeadline is wallOf for a deadline: zero when it is not ahead of now.
func wallDeadline(now, d time.Time) time.Time {
	if !now.Before(d) {
		return time.Time{}
	}
	return wallOf(now, d)
}

// monoDeadline turns the wall-clock deadline w into one on now's clock;
// zero when w is zero or not ahead of now.
func monoDeadline(now, w time.Time) time.Time {
	if w.IsZero() {
		return time.Time{}
	}
	left := w.Sub(now.Round(0))
	if left <= 0 {
		return time.Time{}
	}
	return now.Add(left)
}

// monoInstant turns the past wall-clock instant w into one on now's clock;
// a w ahead of now (the wall clock was set back) is now.
func monoInstant(now, w time.Time) time.Time {
	return now.Add(min(w.Sub(now.Round(0)), 0))
}
