package budget

import (
	"math"
	"sync"
	"time"
)

// Nano is an amount of US dollars in nano-dollars (1e-9 USD), the unit a
// Budget counts in: whole numbers add exactly, in memory and in Redis.
type Nano = int64

// ToNano converts US dollars to nano-dollars, rounded; negative and NaN
// amounts are 0.
func ToNano(usd float64) Nano {
	if !(usd > 0) {
		return 0
	}
	if usd >= math.MaxInt64/1e9 {
		return math.MaxInt64
	}
	return Nano(math.Round(usd * 1e9))
}

// USD converts nano-dollars to US dollars.
func USD(n Nano) float64 { return float64(n) / 1e9 }

// Verdict is a Budget's decision on one request.
type Verdict uint8

const (
	// Admitted: the spend recorded plus the reservations in flight is
	// under the budget; the request's estimate is reserved.
	Admitted Verdict = iota
	// Wait: the recorded spend is under the budget, but with the
	// reservations in flight it is not; Decision.Settled is closed at the
	// next settlement, when the request may ask again.
	Wait
	// Exceeded: the spend recorded in the period has reached the budget;
	// Decision.ResetIn says when the period ends (0 for Total).
	Exceeded
)

// Decision is Reserve's answer.
type Decision struct {
	Verdict Verdict
	// Reservation is what an admitted request holds until Settle.
	Reservation Reservation
	// Settled, with Wait, is closed at the next Settle.
	Settled <-chan struct{}
	// ResetIn, with Exceeded, is the time until the period resets; 0 for
	// a Total budget, which never does.
	ResetIn time.Duration
}

// Reservation is an admitted request's reserved estimate. The zero
// Reservation reserves nothing.
type Reservation struct {
	amount Nano
	held   bool
}

// Budget is one client key's spend cap over its period (docs/ARCHITECTURE.md,
// "Client keys and spend"). Build it with New; all methods are safe for
// concurrent use.
//
//	Reserve(est) ──► spend ≥ limit ─────────────────► Exceeded (until the period resets)
//	     │           spend + reserved ≥ limit ───────► Wait (for the next Settle)
//	     └─────────► otherwise: reserved += est ─────► Admitted
//	Settle(r, cost): reserved -= r, spend += cost; waiters wake
//
// So the budget is passed by at most the real cost of the requests in
// flight when it was reached, and Exceeded means spent, never merely
// busy. Periods roll lazily: the first call at or past the period's end
// starts the next one with nothing spent (reservations in flight stay
// reserved; what they cost counts in the period they settle in).
type Budget struct {
	limit  Nano
	period Period

	mu       sync.Mutex    // guards start, end, spend, reserved, held, wake
	start    time.Time     // the current period's start (UTC); zero for Total
	end      time.Time     // its end; zero for Total
	spend    Nano          // recorded in the current period
	reserved Nano          // estimates of the reservations in flight
	held     int           // reservations in flight
	wake     chan struct{} // closed at the next Settle; nil: nobody waits
}

// New returns a budget of limit nano-dollars (> 0) per period, with
// nothing spent.
func New(limit Nano, period Period) *Budget {
	return &Budget{limit: limit, period: period}
}

// Period is the budget's period.
func (b *Budget) Period() Period { return b.period }

// SetLimit changes the budget to limit nano-dollars (> 0) per period (a
// reload); the spend and reservations stay.
func (b *Budget) SetLimit(limit Nano) {
	b.mu.Lock()
	b.limit = limit
	w := b.wake
	b.wake = nil
	b.mu.Unlock()
	if w != nil {
		close(w) // a higher budget may admit the waiters now
	}
}

// rollLocked starts the period holding now when the current one has ended
// (or none has started yet). A clock set back never reopens an earlier
// period.
func (b *Budget) rollLocked(now time.Time) {
	if b.period == Total || (!b.end.IsZero() && now.Before(b.end)) {
		return
	}
	if start := b.period.Start(now); b.end.IsZero() || start.After(b.start) {
		b.start, b.end = start, b.period.End(start)
		b.spend = 0
	}
}

// Reserve decides a request estimated to cost estimate at now (wall
// clock: periods are UTC calendar spans).
func (b *Budget) Reserve(now time.Time, estimate Nano) Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	switch {
	case b.spend >= b.limit:
		var in time.Duration
		if !b.end.IsZero() {
			in = b.end.Sub(now)
		}
		return Decision{Verdict: Exceeded, ResetIn: in}
	case b.held > 0 && b.spend+b.reserved >= b.limit:
		if b.wake == nil {
			b.wake = make(chan struct{})
		}
		return Decision{Verdict: Wait, Settled: b.wake}
	}
	estimate = max(estimate, 0)
	b.reserved += estimate
	b.held++
	return Decision{Verdict: Admitted, Reservation: Reservation{amount: estimate, held: true}}
}

// Settle ends an admitted request's reservation at now and records what
// it really cost (0 when nothing was served); waiters wake. The zero
// Reservation records the cost alone.
func (b *Budget) Settle(now time.Time, r Reservation, cost Nano) {
	b.mu.Lock()
	b.rollLocked(now)
	if r.held {
		b.reserved -= r.amount
		b.held--
	}
	cost = max(cost, 0)
	b.spend += cost
	w := b.wake
	b.wake = nil
	b.mu.Unlock()
	if w != nil {
		close(w)
	}
}

// Snapshot is a budget at one moment.
type Snapshot struct {
	Limit, Spend, Reserved Nano
	// InFlight counts the reservations held.
	InFlight int
	// Start and End bound the current period (UTC); both zero for Total.
	Start, End time.Time
}

// Remaining is what is left of the budget, never below 0.
func (s Snapshot) Remaining() Nano { return max(s.Limit-s.Spend, 0) }

// Snapshot reports the budget at now.
func (b *Budget) Snapshot(now time.Time) Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	return Snapshot{Limit: b.limit, Spend: b.spend, Reserved: b.reserved, InFlight: b.held, Start: b.start, End: b.end}
}
