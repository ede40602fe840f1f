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

// add is a + b for amounts of at least 0, saturated at MaxInt64: a
// spend or a sum of reservations never wraps negative (issue 31: an
// estimate of MaxInt64 wrapped the reservations, and every request after
// it was admitted).
func add(a, b Nano) Nano {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
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
//	     │           reserved ≥ limit − spend ───────► Wait (for the next Settle)
//	     └─────────► otherwise: reserved += min(est, limit − spend − reserved) ► Admitted
//	Settle(r, cost): reserved -= r, spend += cost; waiters wake
//
// So the budget is passed by at most the real cost of the requests in
// flight when it was reached, and Exceeded means spent, never merely
// busy. A reservation is clamped to what is left of the budget (an
// estimate above it reserves the rest: the requests after it wait), so
// the reservations never sum past the limit, and spends saturate: no
// estimate or cost, however absurd, can wrap the check (issue 31). Periods roll lazily: the first call at or past the period's end
// starts the next one with nothing spent (reservations in flight stay
// reserved; what they cost counts in the period they settle in).
type Budget struct {
	period Period
	shared bool // a fleet's number exists: unsent spend is kept for it

	mu       sync.Mutex    // guards limit, start, end, spend, reserved, held, wake, unsent, sending
	limit    Nano          // the budget per period
	start    time.Time     // the current period's start (UTC); zero for Total
	end      time.Time     // its end; zero for Total
	spend    Nano          // recorded in the current period
	reserved Nano          // estimates of the reservations in flight
	held     int           // reservations in flight
	wake     chan struct{} // closed at the next Settle; nil: nobody waits
	// With a fleet (Observe): unsent is spend recorded here and not yet
	// handed to the fleet's number, sending what was handed and not yet
	// acknowledged. Both belong to the current period.
	unsent, sending Nano
}

// New returns a budget of limit nano-dollars per period, with nothing
// spent; a limit of 0 only counts the spend.
func New(limit Nano, period Period) *Budget {
	return &Budget{limit: limit, period: period}
}

// NewShared is New for a budget whose spend is also a fleet's number
// (Observe, TakeUnsent, Sent): what it records is kept as unsent until
// the fleet has it.
func NewShared(limit Nano, period Period) *Budget {
	return &Budget{limit: limit, period: period, shared: true}
}

// Period is the budget's period.
func (b *Budget) Period() Period { return b.period }

// SetLimit changes the budget to limit nano-dollars per period (0: only
// count; a reload); the spend and reservations stay.
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
		// What was not yet in the fleet's number belonged to the period
		// that ended: it no longer decides anything.
		b.spend, b.unsent, b.sending = 0, 0, 0
	}
}

// ID names the period holding now (Period.ID): the state file's and the
// fleet's name for the spend counted in it.
func (b *Budget) ID(now time.Time) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	return b.period.ID(b.start)
}

// Reserve decides a request estimated to cost estimate at now (wall
// clock: periods are UTC calendar spans). A budget whose limit is 0 only
// counts: it admits everything.
func (b *Budget) Reserve(now time.Time, estimate Nano) Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	switch {
	case b.limit <= 0:
		return Decision{Verdict: Admitted}
	case b.spend >= b.limit:
		var in time.Duration
		if !b.end.IsZero() {
			in = b.end.Sub(now)
		}
		return Decision{Verdict: Exceeded, ResetIn: in}
	case b.held > 0 && b.reserved >= b.limit-b.spend: // spend < limit: no overflow
		if b.wake == nil {
			b.wake = make(chan struct{})
		}
		return Decision{Verdict: Wait, Settled: b.wake}
	}
	// What is left is above 0 here: spend < limit, and reserved is under
	// limit − spend or nothing is held.
	estimate = min(max(estimate, 0), b.limit-b.spend-b.reserved)
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
	b.spend = add(b.spend, cost)
	if b.shared {
		b.unsent = add(b.unsent, cost)
	}
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

// Remaining is what is left of the budget, never below 0 (0 for a
// budget that only counts).
func (s Snapshot) Remaining() Nano { return max(s.Limit-s.Spend, 0) }

// Snapshot reports the budget at now.
func (b *Budget) Snapshot(now time.Time) Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	return Snapshot{Limit: b.limit, Spend: b.spend, Reserved: b.reserved, InFlight: b.held, Start: b.start, End: b.end}
}

// Observe takes the fleet's number for the period id, read at now: the
// spend becomes total plus what this process recorded and the fleet has
// not acknowledged, unless it knew more (the fleet's number only grows;
// a Redis that lost its data starts again from what it is sent). A number
// of another period changes nothing.
func (b *Budget) Observe(now time.Time, id string, total Nano) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	if id == b.period.ID(b.start) {
		b.spend = max(b.spend, add(add(max(total, 0), b.unsent), b.sending))
	}
}

// TakeUnsent hands the spend not yet in the fleet's number to the
// caller, who adds it to the fleet's number of the period id and reports
// the result to Sent; 0 when there is nothing to send.
func (b *Budget) TakeUnsent(now time.Time) (id string, amount Nano) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	amount = b.unsent
	b.unsent = 0
	b.sending = add(b.sending, amount)
	return b.period.ID(b.start), amount
}

// Sent reports what became of a TakeUnsent: added (total is then the
// fleet's number after it, which the spend takes), or failed (the amount
// is unsent again). An answer about a period that ended changes nothing.
func (b *Budget) Sent(id string, amount, total Nano, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id != b.period.ID(b.start) {
		return
	}
	b.sending = max(b.sending-amount, 0)
	if !ok {
		b.unsent = add(b.unsent, amount)
		return
	}
	b.spend = max(b.spend, add(add(max(total, 0), b.unsent), b.sending))
}

// Saved is a budget's state in the state file.
type Saved struct {
	// Period names the period the spend was counted in (Period.ID).
	Period string `json:"period"`
	// Spend is what was recorded in it, in nano-dollars; Unsent the part
	// a fleet's number had not acknowledged (sent again on restore).
	Spend  Nano `json:"spend_nano"`
	Unsent Nano `json:"unsent_nano,omitempty"`
}

// Export is the budget's state at now.
func (b *Budget) Export(now time.Time) Saved {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	return Saved{Period: b.period.ID(b.start), Spend: b.spend, Unsent: add(b.unsent, b.sending)}
}

// Restore loads a state exported by any process before now: only when
// its period is still the current one (a day that ended starts at 0); it
// reports whether it did.
func (b *Budget) Restore(now time.Time, in Saved) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rollLocked(now)
	if in.Period != b.period.ID(b.start) || in.Spend < 0 {
		return false
	}
	b.spend = max(b.spend, in.Spend)
	if b.shared {
		b.unsent = add(b.unsent, max(in.Unsent, 0))
	}
	return true
}
