package throttle

import (
	"math"
	"time"
)

// Persisted is a Throttle's window for the state file
// (docs/ARCHITECTURE.md, "Warm restart"), JSON-serialisable.
type Persisted struct {
	// Buckets are the window's non-empty buckets, oldest first.
	Buckets []PersistedBucket `json:"buckets,omitempty"`
}

// PersistedBucket is one bucket of the window: what happened from Start
// (wall clock) for one bucket width.
type PersistedBucket struct {
	Start    time.Time `json:"start"`
	Requests float64   `json:"requests"`
	Accepts  float64   `json:"accepts"`
}

// Export returns the window as of now (time.Now(): monotonic); empty for a
// disabled throttle.
func (t *Throttle) Export(now time.Time) Persisted {
	var p Persisted
	if t.k <= 0 {
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.base.IsZero() {
		return p
	}
	i := t.rotateLocked(now)
	n := t.slot[i]
	for e := n - buckets + 1; e <= n; e++ {
		j := int(((e % buckets) + buckets) % buckets)
		if t.slot[j] != e || (t.requests[j] == 0 && t.accepts[j] == 0) {
			continue
		}
		start := t.base.Add(time.Duration(e) * width)
		p.Buckets = append(p.Buckets, PersistedBucket{
			Start:    now.Round(0).Add(start.Sub(now)),
			Requests: t.requests[j],
			Accepts:  t.accepts[j],
		})
	}
	return p
}

// Restore replaces the window with p, exported at any time before now
// (possibly by another process), aged by the time in between: each bucket
// lands in the bucket of now's window that holds its start, so it leaves
// the window at most one bucket width early; buckets that left the window
// while the router was down are dropped, and so are counts this version
// cannot use (negative or not finite).
func (t *Throttle) Restore(now time.Time, p Persisted) {
	if t.k <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.slot, t.requests, t.accepts = [buckets]int64{}, [buckets]float64{}, [buckets]float64{}
	t.totalReq, t.totalAcc = 0, 0
	// now is the start of the bucket numbered buckets: the live ones are
	// 1 … buckets, and an empty slot's number 0 is outside the window.
	t.base = now.Add(-Window)
	for _, b := range p.Buckets {
		if !count(b.Requests) || !count(b.Accepts) {
			continue
		}
		age := max(now.Round(0).Sub(b.Start), 0)
		if age >= Window {
			continue
		}
		e := int64((Window - age) / width)
		if e <= 0 {
			continue
		}
		j := int(e % buckets)
		t.slot[j] = e
		t.requests[j] += b.Requests
		t.accepts[j] += b.Accepts
		t.totalReq += b.Requests
		t.totalAcc += b.Accepts
	}
}

// count reports whether v is a usable count: finite and not negative.
func count(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }
