package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

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
	done func(error) // gobreaker's second step; nil in the zero Ticket
}

// Counts are the outcomes in the current rolling window of a closed breaker
// (zero while open or half-open: gobreaker clears them at every
// transition). Client errors and cancellations never appear.
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
	// observable State, in order, WITH THE BREAKER'S LOCK HELD (sometimes
	// inside gobreaker's lock too): it must only set a gauge or bump a
	// counter, never block and never call the Breaker. Transitions into
	// HalfOpen are lazy: they are noticed when someone looks (Allow,
	// Snapshot, NextProbe, Probe, RunProber).
	OnStateChange func(name string, from, to State)
}

// buckets is how many buckets gobreaker's rolling window has.
const buckets = 10

// Sentinels handed to gobreaker's second step. nil is a success.
var (
	errFailure     = errors.New("counted failure")
	errNeutral     = errors.New("outcome not counted")
	errProbePanic  = errors.New("probe panicked")
	errUnreachable = errors.New("gobreaker refused a closed breaker")
)

// Breaker guards one provider; see the package doc for its model. Build it
// with New; the zero Breaker is not usable. All methods are safe for
// concurrent use.
type Breaker struct {
	name          string
	cfg           Config
	onStateChange func(name string, from, to State)

	// mu guards everything below and every call into cb, so that checking
	// our state and taking gobreaker's admission are one step: gobreaker
	// half-open admits whoever calls first, and that must be the prober.
	// gobreaker's callbacks (readyToTripLocked, onTransitionLocked) run
	// inside calls made under mu.
	mu        sync.Mutex
	cb        *gobreaker.TwoStepCircuitBreaker[struct{}]
	state     State         // last observed state; HalfOpen is latched when noticed
	gen       uint64        // bumped at each of gobreaker's transitions, like its own generation
	openUntil time.Time     // when the next probe is due; zero while closed
	trips     int           // consecutive trips and reopens since the last close
	tripKind  outcome.Kind  // the failure that caused the current trip
	lastKind  outcome.Kind  // the last counted failure
	probing   bool          // a probe holds gobreaker's half-open admission
	pending   failure       // the failure being reported right now, for the callbacks
	changed   chan struct{} // closed and replaced at each transition and probe end
}

// failure is a counted failure on its way into gobreaker.
type failure struct {
	kind       outcome.Kind
	retryAfter time.Duration
	at         time.Time
}

// New returns a closed Breaker for the provider name. cfg must pass
// Validate (check it when loading the config); New panics otherwise.
func New(name string, cfg Config, opts Options) *Breaker {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("breaker.New(%q): %v", name, err))
	}
	b := &Breaker{
		name:          name,
		cfg:           cfg,
		onStateChange: opts.OnStateChange,
		changed:       make(chan struct{}),
	}
	w := cfg.FailureThreshold.Window
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1, // one probe; its success closes
		// Rolling window of ten buckets; with two or more buckets gobreaker
		// never starts a new generation while closed, so only trips and
		// closes make tickets stale.
		Interval:     w,
		BucketPeriod: w / buckets,
		// gobreaker's open timeout is fixed; ours depends on the kind and
		// grows. Let gobreaker go half-open at once and keep everything
		// refused in this wrapper until openUntil.
		Timeout:       time.Nanosecond,
		ReadyToTrip:   b.readyToTripLocked,
		OnStateChange: b.onTransitionLocked,
		IsExcluded:    func(err error) bool { return err == errNeutral },
	})
	return b
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
	done, err := b.cb.Allow()
	if err != nil { // gobreaker is closed whenever we are; keep it honest anyway
		return Ticket{}, fmt.Errorf("circuit breaker for %s: %w: %w", b.name, errUnreachable, ErrOpen)
	}
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
	if t.done == nil {
		return
	}
	verdict := errFailure
	switch {
	case kind == outcome.OK:
		verdict = nil
	case !kind.Counts():
		verdict = errNeutral
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reportLocked(now, t, verdict, kind, retryAfter)
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
	t, ok := b.startProbe(time.Now())
	if !ok {
		return false, nil
	}
	finished := false
	defer func() {
		if !finished {
			b.finishProbe(ctx, t, errProbePanic)
		}
	}()
	err = probe(ctx)
	finished = true
	b.finishProbe(ctx, t, err)
	return true, err
}

// NextProbe says when a probe is next due, for loops like RunProber: wait
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
	b.cb.State() // rolls gobreaker's window, so Counts below are current
	st := b.observeLocked(now)
	c := b.cb.Counts()
	return Snapshot{
		State:            st,
		CooldownLeft:     b.leftLocked(now),
		ConsecutiveTrips: b.trips,
		LastKind:         b.lastKind,
		Generation:       b.gen,
		Counts: Counts{
			Successes:           c.TotalSuccesses,
			Failures:            c.TotalFailures,
			ConsecutiveFailures: c.ConsecutiveFailures,
		},
	}
}

func (b *Breaker) startProbe(now time.Time) (Ticket, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.observeLocked(now) != HalfOpen || b.probing {
		return Ticket{}, false
	}
	done, err := b.cb.Allow()
	if err != nil {
		// gobreaker still open: its clock has not yet passed its 1ns
		// timeout, which only a now running ahead of time.Now() allows.
		return Ticket{}, false
	}
	b.probing = true
	return Ticket{gen: b.gen, done: done}, true
}

func (b *Breaker) finishProbe(ctx context.Context, t Ticket, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.probing = false
	switch {
	case err == nil:
		b.reportLocked(now, t, nil, outcome.OK, 0)
	case errors.Is(ctx.Err(), context.Canceled):
		// The owner gave up (shutdown); that says nothing about the provider.
		b.reportLocked(now, t, errNeutral, outcome.Canceled, 0)
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
		b.reportLocked(now, t, errFailure, kind, retryAfter)
	}
	b.broadcastLocked() // a neutral probe changes no state but frees the slot
}

// reportLocked hands verdict (nil, errFailure or errNeutral) for t to
// gobreaker unless t is stale.
func (b *Breaker) reportLocked(now time.Time, t Ticket, verdict error, kind outcome.Kind, retryAfter time.Duration) {
	if t.gen != b.gen {
		return // issued before the latest trip or close
	}
	if verdict == errFailure {
		b.lastKind = kind
		b.pending = failure{kind: kind, retryAfter: retryAfter, at: now}
	}
	t.done(verdict)
}

// readyToTripLocked is gobreaker's ReadyToTrip: called on every failure of a
// closed breaker, after the failure was counted.
func (b *Breaker) readyToTripLocked(c gobreaker.Counts) bool {
	if k := b.pending.kind; k == outcome.Auth || k == outcome.Quota {
		return true // disabled until a probe succeeds
	}
	th := b.cfg.FailureThreshold
	if th.Consecutive > 0 && int64(c.ConsecutiveFailures) >= int64(th.Consecutive) {
		return true
	}
	seen := uint64(c.TotalSuccesses) + uint64(c.TotalFailures)
	return th.Ratio > 0 && seen > 0 && seen >= uint64(th.MinRequests) &&
		float64(c.TotalFailures)/float64(seen) >= th.Ratio
}

// onTransitionLocked is gobreaker's OnStateChange. Trips and reopens only
// come from a failure being reported, so b.pending describes it.
func (b *Breaker) onTransitionLocked(_ string, _, to gobreaker.State) {
	b.gen++
	switch to {
	case gobreaker.StateOpen:
		b.trips++
		b.tripKind = b.pending.kind
		b.openUntil = b.pending.at.Add(b.cfg.Cooldown.cooldown(b.pending.kind, b.pending.retryAfter, b.trips))
		b.setStateLocked(Open)
	case gobreaker.StateClosed:
		b.trips = 0
		b.openUntil = time.Time{}
		b.setStateLocked(Closed)
	}
	// gobreaker.StateHalfOpen: its 1ns timeout ended; openUntil, not it,
	// decides when the probe is due.
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

func (b *Breaker) setStateLocked(to State) {
	if b.state == to {
		return
	}
	from := b.state
	b.state = to
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
	return b.openUntil.Sub(now)
}

func (b *Breaker) openErrorLocked(now time.Time) *OpenError {
	return &OpenError{Name: b.name, State: b.state, Kind: b.tripKind, RetryIn: b.leftLocked(now)}
}
