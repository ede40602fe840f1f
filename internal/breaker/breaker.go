package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/llmrouter/llmrouter/internal/breaker/prober"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// State is where a Breaker stands. Its numeric value is the
// llmrouter_breaker_state gauge value (docs/ARCHITECTURE.md, "Metrics"):
// 0 closed, 1 half-open, 2 open. The zero value is Closed.
type State uint8

const (
	Closed   State = iota // requests flow; outcomes are counted
	HalfOpen              // cooldown over: one probe at a time decides; requests are refused
	Open                  // cooling down: everything is refused
)

var stateNames = [...]string{Closed: "closed", HalfOpen: "half_open", Open: "open"}

// String returns "closed", "half_open" or "open".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// MarshalText makes a State read as its name in JSON (/admin/providers).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ErrOpen matches (errors.Is) every refusal by a breaker that is not closed.
var ErrOpen = errors.New("circuit breaker open")

// OpenError is Allow's refusal. errors.Is(err, ErrOpen) holds for it.
type OpenError struct {
	Name  string       // the provider
	State State        // Open or HalfOpen
	Kind  outcome.Kind // the failure kind that tripped (or last reopened) the breaker
	// RetryIn is how long until the next probe is due: the basis of a 503's
	// Retry-After (round up to whole seconds). 0 when half-open: a probe is
	// due or running and may close the breaker at any moment.
	RetryIn time.Duration
}

func (e *OpenError) Error() string {
	if e.State == HalfOpen {
		return fmt.Sprintf("circuit breaker for %s is half_open after %s: waiting for a probe", e.Name, e.Kind)
	}
	return fmt.Sprintf("circuit breaker for %s is %s after %s: next probe in %s", e.Name, e.State, e.Kind, e.RetryIn)
}

// Is makes errors.Is(err, ErrOpen) true.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Ticket is one admission. Hand it back to Done exactly once when the
// request's outcome is known (for a stream: when the stream ends). It
// remembers the generation it was issued in, so an outcome from before a
// trip or a close changes nothing. The zero Ticket is ignored by Done.
type Ticket struct {
	gen  uint64
	done func(error) // the window's second step (gobreaker); nil in the zero Ticket
}

// Counts are the outcomes in the current rolling window of a closed breaker
// (zero while open or half-open: a trip retires the window and a close
// starts an empty one). Client errors and cancellations never appear.
type Counts struct {
	Successes           uint32
	Failures            uint32
	ConsecutiveFailures uint32 // the current run, kept inside the window
}

// Snapshot is a Breaker as seen at one instant, for /admin/providers and
// gauges.
type Snapshot struct {
	State State
	// CooldownLeft is how long until the next probe is due; 0 unless Open.
	CooldownLeft time.Duration
	// ConsecutiveTrips counts trips and reopens since the last close; the
	// current cooldown was grown ×multiplier^(ConsecutiveTrips-1). 0 after
	// a close.
	ConsecutiveTrips int
	// LastKind is the kind of the last counted failure (probes included);
	// outcome.OK means none yet. It survives a close.
	LastKind outcome.Kind
	// Generation changes at every transition; compare it only for equality.
	Generation uint64
	Counts     Counts
}

// Options are the Breaker's seams. The zero Options is valid.
type Options struct {
	// OnStateChange, when not nil, is called at every transition of the
	// observable State, in order, WITH THE BREAKER'S LOCK HELD: it must only
	// set a gauge or bump a counter, never block and never call the
	// Breaker. Transitions into HalfOpen are lazy: they are noticed when
	// someone looks (Allow, Snapshot, NextProbe, Probe).
	OnStateChange func(name string, from, to State)
}

// buckets is how many buckets the rolling window has.
const buckets = 10

// errFailure is handed to the window's second step for a counted failure;
// nil is a success.
var errFailure = errors.New("counted failure")

// A Breaker is what internal/breaker/prober's loop drives.
var _ prober.Target = (*Breaker)(nil)

// errProbePanic stands for a probe that panicked.
var errProbePanic = errors.New("probe panicked")

// Breaker guards one provider; see the package doc for its model. Build it
// with New; the zero Breaker is not usable. All methods are safe for
// concurrent use.
type Breaker struct {
	name          string
	cfg           Config
	onStateChange func(name string, from, to State)

	mu        sync.Mutex // guards everything below, and every call into win
	state     State      // HalfOpen is latched when noticed
	gen       uint64     // bumped at every transition; tickets carry it
	win       *window    // the closed spell's outcomes; nil while open or half-open
	openUntil time.Time  // when the next probe is due; zero while closed
	// openFor is the cooldown the latest trip started (0 when the open
	// time came from elsewhere: a restore, the fleet): the most that can
	// be left of it, whatever now a caller read before the trip.
	openFor  time.Duration
	trips    int           // consecutive trips and reopens since the last close
	tripKind outcome.Kind  // the failure that caused the current trip
	lastKind outcome.Kind  // the last counted failure
	probing  bool          // a probe is running
	changed  chan struct{} // closed and replaced at each transition and probe end
}

// window counts the outcomes of one closed spell in gobreaker's rolling
// window and applies the trip rules (Threshold.trips) to them. A trip
// retires it: tripped is set and the Breaker drops it; the next close
// starts a new one. Only the Breaker that owns it calls it, under its mu.
type window struct {
	cb      *gobreaker.TwoStepCircuitBreaker[struct{}]
	tripped bool // set by cb's OnStateChange when a trip rule fired
}

// newWindow returns an empty window whose buckets start at time.Now().
func newWindow(name string, th Threshold) *window {
	w := &window{}
	w.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name: name,
		// Ten buckets; with two or more gobreaker never starts a new
		// generation while closed, so the window rolls instead of
		// emptying, and an outcome counts in its admission's bucket.
		Interval:     th.Window,
		BucketPeriod: th.Window / buckets,
		ReadyToTrip:  th.trips,
		// A tripped window is retired, never consulted again: gobreaker's
		// open state is where it ends, not a cooldown. Cooldowns, half-open
		// and probes are the Breaker's (see the package doc).
		Timeout: math.MaxInt64,
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				w.tripped = true
			}
		},
	})
	return w
}

// New returns a closed Breaker for the provider name. cfg must pass
// Validate (check it when loading the config); New panics otherwise.
func New(name string, cfg Config, opts Options) *Breaker {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("breaker.New(%q): %v", name, err))
	}
	return &Breaker{
		name:          name,
		cfg:           cfg,
		onStateChange: opts.OnStateChange,
		win:           newWindow(name, cfg.FailureThreshold),
		changed:       make(chan struct{}),
	}
}

// Allow admits a real request at now (time.Now(): monotonic) when the
// breaker is closed. Otherwise it returns an *OpenError saying when the next
// probe is due; real requests are never the probe, so they stay refused
// while half-open too.
func (b *Breaker) Allow(now time.Time) (Ticket, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.observeLocked(now) != Closed {
		return Ticket{}, b.openErrorLocked(now)
	}
	// A closed window never refuses: its open state is the trip, which
	// retires it before anyone can ask again.
	done, _ := b.win.cb.Allow()
	return Ticket{gen: b.gen, done: done}, nil
}

// Done reports the outcome of the request t admitted; now is when the
// outcome became known (a trip's cooldown starts then), not when the request
// began. kind OK is a success; a kind that does not count (ClientError,
// Canceled) changes nothing; any other kind is a failure, and Auth and Quota
// trip at once. retryAfter is the provider's own wait (0: none); it sets the
// cooldown of a RateLimited trip. A t issued before the latest trip or close
// is ignored. Call Done exactly once per admitted Ticket.
func (b *Breaker) Done(now time.Time, t Ticket, kind outcome.Kind, retryAfter time.Duration) {
	if t.done == nil || !kind.Counts() {
		return // nothing to count; the window forgets an unreported admission
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.gen != b.gen {
		return // issued before the latest trip or close
	}
	if kind == outcome.OK {
		t.done(nil)
		return
	}
	b.lastKind = kind
	if kind == outcome.Auth || kind == outcome.Quota {
		b.tripLocked(now, kind, retryAfter) // disabled until a probe succeeds
		return
	}
	t.done(errFailure)
	if b.win.tripped {
		b.tripLocked(now, kind, retryAfter)
	}
}

// Probe runs probe if one is due: the breaker is half-open (its cooldown is
// over) and no other probe is running. ran is false, and probe is not
// called, otherwise. A nil error closes the breaker. An error reopens it
// with the grown cooldown, its kind taken from outcome.KindOf (a 4xx counts
// here: the probe endpoint is ours, so it means the provider is unusable as
// configured; ctx's deadline counts as Timeout), unless ctx was canceled, in
// which case the probe says nothing and the next one is due at once. A
// panicking probe counts as a failure and the panic goes on.
//
// Probe reads time.Now(), like gobreaker; test it inside testing/synctest.
func (b *Breaker) Probe(ctx context.Context, probe func(context.Context) error) (ran bool, err error) {
	if !b.startProbe(time.Now()) {
		return false, nil
	}
	finished := false
	defer func() {
		if !finished {
			b.finishProbe(ctx, errProbePanic)
		}
	}()
	err = probe(ctx)
	finished = true
	b.finishProbe(ctx, err)
	return true, err
}

// NextProbe says when a probe is next due, for loops like prober.Run: wait
// is 0 when one is due now, > 0 while cooling down, and < 0 when none will
// be due until something changes (closed, or a probe is running). changed
// is closed at the next transition or probe end; wait on it as well, so a
// trip, a close or a finished probe wakes the loop.
func (b *Breaker) NextProbe(now time.Time) (wait time.Duration, changed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.observeLocked(now) {
	case Open:
		return b.openUntil.Sub(now), b.changed
	case HalfOpen:
		if !b.probing {
			return 0, b.changed
		}
	}
	return -1, b.changed
}

// Snapshot returns the breaker as seen at now.
func (b *Breaker) Snapshot(now time.Time) Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{
		State:            b.observeLocked(now),
		CooldownLeft:     b.leftLocked(now),
		ConsecutiveTrips: b.trips,
		LastKind:         b.lastKind,
		Generation:       b.gen,
	}
	if b.win != nil {
		b.win.cb.State() // rolls the window, so the counts below are current
		c := b.win.cb.Counts()
		s.Counts = Counts{
			Successes:           c.TotalSuccesses,
			Failures:            c.TotalFailures,
			ConsecutiveFailures: c.ConsecutiveFailures,
		}
	}
	return s
}

// State is the breaker's state at now: Snapshot's State, for a caller
// that needs nothing else (cheaper: no window counts).
func (b *Breaker) State(now time.Time) State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.observeLocked(now)
}

// Cooldown is the breaker's state at now and, while it is open, the
// cooldown left (Snapshot's State and CooldownLeft): for a caller on a
// request's path, without the window counts Snapshot rolls (which read
// the clock again, under gobreaker's lock).
func (b *Breaker) Cooldown(now time.Time) (State, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.observeLocked(now), b.leftLocked(now)
}

// startProbe claims the probe slot if a probe is due at now. While the slot
// is held nothing but finishProbe moves the breaker: real requests are
// refused and their stale outcomes dropped.
func (b *Breaker) startProbe(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.observeLocked(now) != HalfOpen || b.probing {
		return false
	}
	b.probing = true
	return true
}

// finishProbe applies the probe's outcome and frees the slot.
func (b *Breaker) finishProbe(ctx context.Context, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.probing = false
	defer b.broadcastLocked() // a neutral probe changes no state but frees the slot
	switch {
	case err == nil:
		b.trips = 0
		b.openUntil = time.Time{}
		b.win = newWindow(b.name, b.cfg.FailureThreshold)
		b.setStateLocked(Closed)
	case errors.Is(ctx.Err(), context.Canceled):
		// The owner gave up (shutdown); that says nothing about the provider.
	case errors.Is(err, ErrProbeElsewhere):
		// Another replica probed; its verdict was applied with Sync.
	default:
		kind := outcome.KindOf(err)
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			kind = outcome.Timeout
		case kind == outcome.OK || kind == outcome.Canceled:
			kind = outcome.Unknown
		}
		var retryAfter time.Duration
		if oe := (*outcome.Error)(nil); errors.As(err, &oe) {
			retryAfter = oe.RetryAfter
		}
		b.lastKind = kind
		b.tripLocked(now, kind, retryAfter)
	}
}

// tripLocked opens the breaker (from closed: a trip; from half-open: a
// reopen) for the cooldown of the trips-th consecutive trip caused by kind,
// counted from now, and retires the window.
func (b *Breaker) tripLocked(now time.Time, kind outcome.Kind, retryAfter time.Duration) {
	b.trips++
	b.tripKind = kind
	b.openFor = b.cfg.Cooldown.cooldown(kind, retryAfter, b.trips)
	b.openUntil = now.Add(b.openFor)
	b.win = nil
	b.setStateLocked(Open)
}

// observeLocked applies the lazy Open → HalfOpen transition and returns the
// state at now. HalfOpen is latched: an earlier now from a slower caller
// does not reopen the breaker.
func (b *Breaker) observeLocked(now time.Time) State {
	if b.state == Open && !now.Before(b.openUntil) {
		b.setStateLocked(HalfOpen)
	}
	return b.state
}

// setStateLocked moves to a new state and a new generation, so tickets
// issued before are ignored, and tells whoever watches.
func (b *Breaker) setStateLocked(to State) {
	if b.state == to {
		return
	}
	from := b.state
	b.state = to
	b.gen++
	b.broadcastLocked()
	if b.onStateChange != nil {
		b.onStateChange(b.name, from, to)
	}
}

func (b *Breaker) broadcastLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *Breaker) leftLocked(now time.Time) time.Duration {
	if b.state != Open {
		return 0
	}
	left := b.openUntil.Sub(now)
	if b.openFor > 0 && left > b.openFor {
		// now was read before the trip that set openUntil (a request
		// admitted while a probe failed): what is left is at most the
		// cooldown, and a client told Retry-After must not be told more.
		left = b.openFor
	}
	return left
}

func (b *Breaker) openErrorLocked(now time.Time) *OpenError {
	return &OpenError{Name: b.name, State: b.state, Kind: b.tripKind, RetryIn: b.leftLocked(now)}
}
