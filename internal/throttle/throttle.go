package throttle

import (
	"sync"
	"time"
)

const (
	// Window is the rolling window of the counts.
	Window  = 2 * time.Minute
	buckets = 12
	width   = Window / buckets
)

// Throttle is one provider's adaptive throttle. The zero value is not
// usable; use New.
type Throttle struct {
	k   float64
	min float64 // requests the window must hold before any rejection

	mu       sync.Mutex // guards the ring and totals
	slot     [buckets]int64
	requests [buckets]float64
	accepts  [buckets]float64
	totalReq float64
	totalAcc float64
	base     time.Time // the ring's time origin (first use)
}

// New returns a throttle with multiplier k (routing.adaptive_throttle_k)
// that rejects nothing until its window holds minRequests requests;
// k <= 0 disables throttling.
func New(k float64, minRequests int) *Throttle { return &Throttle{k: k, min: float64(minRequests)} }

// rotateLocked drops buckets that fell out of the window at now and
// returns the index of now's bucket.
func (t *Throttle) rotateLocked(now time.Time) int {
	if t.base.IsZero() {
		t.base = now
	}
	n := int64(now.Sub(t.base) / width)
	if n < 0 {
		n = 0
	}
	i := int(n % buckets)
	if t.slot[i] != n {
		t.totalReq -= t.requests[i]
		t.totalAcc -= t.accepts[i]
		t.requests[i], t.accepts[i], t.slot[i] = 0, 0, n
	}
	// Buckets more than a window old are cleared as they are reached;
	// totals only count live buckets because every write goes through
	// this rotation.
	for j := range buckets {
		if t.slot[j] <= n-buckets && (t.requests[j] != 0 || t.accepts[j] != 0) {
			t.totalReq -= t.requests[j]
			t.totalAcc -= t.accepts[j]
			t.requests[j], t.accepts[j] = 0, 0
		}
	}
	return i
}

// probabilityLocked is the rejection probability of the window as it is.
func (t *Throttle) probabilityLocked() float64 {
	if t.totalReq < t.min {
		return 0
	}
	return max(0, (t.totalReq-t.k*t.totalAcc)/(t.totalReq+1))
}

// K is the multiplier the throttle was built with.
func (t *Throttle) K() float64 { return t.k }

// RejectProbability is the chance a new attempt is rejected at now.
func (t *Throttle) RejectProbability(now time.Time) float64 {
	if t.k <= 0 {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rotateLocked(now)
	return t.probabilityLocked()
}

// Allow decides one attempt at now with u uniform in [0, 1) and reports
// whether to send it. A rejected attempt counts as a request at once (it
// should move on to the next candidate); a sent one is counted by Done
// when its outcome is known, so requests still in flight never look
// refused (a cold burst of slow answers is not throttled).
func (t *Throttle) Allow(now time.Time, u float64) bool {
	if t.k <= 0 {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.rotateLocked(now)
	if u >= t.probabilityLocked() {
		return true
	}
	t.requests[i]++
	t.totalReq++
	return false
}

// Done records the outcome of a sent attempt at now: one request, and
// one accept when the provider accepted it (it answered, or refused the
// request itself as a client error; overload, rate limits, server errors
// and timeouts are not accepts).
func (t *Throttle) Done(now time.Time, accepted bool) {
	if t.k <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i := t.rotateLocked(now)
	t.requests[i]++
	t.totalReq++
	if accepted {
		t.accepts[i]++
		t.totalAcc++
	}
}
