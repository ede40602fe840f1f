package guard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/bulkhead"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
)

// ErrFull is returned by Acquire when the provider's bulkhead is full.
var ErrFull = errors.New("provider at max_concurrency")

// Config is one provider's guard settings.
type Config struct {
	// MaxConcurrency caps attempts in flight; <= 0 means no cap.
	MaxConcurrency int
	// RPM and TPM are ceilings; 0 means learn from the provider's headers.
	RPM, TPM int64
	// Breaker configures the circuit breaker.
	Breaker breaker.Config
}

// Guard admits attempts to one provider.
type Guard struct {
	name    string
	cfg     Config
	breaker *breaker.Breaker
	bulk    *bulkhead.Bulkhead
	limits  *ratelimit.Limiter
	// lastKind is the kind of the last failure that counted; 0 none.
	lastKind atomic.Uint32
}

// New returns a Guard. sig, when not nil, is shared by every guard whose
// capacity a waiting request may wait for; opts are the breaker's seams.
func New(name string, cfg Config, sig *bulkhead.Signal, opts breaker.Options) *Guard {
	return &Guard{
		name:    name,
		cfg:     cfg,
		breaker: breaker.New(name, cfg.Breaker, opts),
		bulk:    bulkhead.New(cfg.MaxConcurrency, sig),
		limits:  ratelimit.New(cfg.RPM, cfg.TPM),
	}
}

// Config returns the configuration the guard was built with.
func (g *Guard) Config() Config { return g.cfg }

// Permit is one admitted attempt. Release it exactly once.
type Permit struct {
	g        *Guard
	ticket   breaker.Ticket
	res      *ratelimit.Reservation
	released atomic.Bool
}

// Acquire admits one attempt of an estimated tokens at now, or says why
// not: a *breaker.OpenError (errors.Is(err, breaker.ErrOpen)), ErrFull, a
// *ratelimit.LimitedError (errors.Is(err, ratelimit.ErrLimited)) with the
// wait, or ratelimit.ErrTooLarge. A refusal holds nothing.
func (g *Guard) Acquire(now time.Time, tokens int64) (*Permit, error) {
	t, err := g.breaker.Allow(now)
	if err != nil {
		return nil, err
	}
	if !g.bulk.TryAcquire() {
		g.breaker.Done(now, t, outcome.Canceled, 0) // give back the ticket; counts for nothing
		return nil, ErrFull
	}
	res, err := g.limits.Reserve(now, tokens)
	if err != nil {
		g.bulk.Release()
		g.breaker.Done(now, t, outcome.Canceled, 0)
		return nil, err
	}
	return &Permit{g: g, ticket: t, res: res}, nil
}

// Result is what one attempt learned about its provider.
type Result struct {
	// Kind classifies the attempt; OK is success.
	Kind outcome.Kind
	// RetryAfter is the provider's requested wait (Retry-After,
	// retry-after-ms, RetryInfo); 0 when it did not say.
	RetryAfter time.Duration
	// RateLimit is the budget the provider announced in its headers.
	RateLimit outcome.RateLimit
	// Usage is the real token usage; zero means not reported (the
	// estimate stands).
	Usage outcome.Usage
	// NotSent marks an attempt that never reached the provider: its
	// bucket charge is given back.
	NotSent bool
}

// Observe applies a budget the provider announced before the attempt is
// over: a stream's response headers arrive long before its end, and the
// next request must already respect them. Release then needs no RateLimit.
func (p *Permit) Observe(now time.Time, rl outcome.RateLimit) {
	p.g.limits.Observe(now, known(rl))
}

// known returns rl, or UnknownRateLimit for the zero value: an adapter that
// leaves RateLimit unset has announced nothing, not "no budget left".
func known(rl outcome.RateLimit) outcome.RateLimit {
	if rl == (outcome.RateLimit{}) {
		return outcome.UnknownRateLimit
	}
	return rl
}

// Release ends the attempt with its result at now. Calling it twice panics.
func (p *Permit) Release(now time.Time, r Result) {
	if !p.released.CompareAndSwap(false, true) {
		panic(fmt.Sprintf("guard: permit for %s released twice", p.g.name))
	}
	g := p.g
	if r.NotSent {
		p.res.Cancel(now)
	} else {
		p.res.Reconcile(now, r.Usage.Total())
	}
	rl := known(r.RateLimit)
	if r.RetryAfter > rl.RetryAfter {
		rl.RetryAfter = r.RetryAfter
	}
	if r.Kind != outcome.RateLimited && r.Kind != outcome.Overloaded && r.Kind != outcome.Quota {
		// Retry-After on anything else (a 200, a 500) is advice for
		// retries of that response, not a block on the provider.
		rl.RetryAfter = 0
	}
	g.limits.Observe(now, rl)
	g.bulk.Release()
	g.breaker.Done(now, p.ticket, r.Kind, r.RetryAfter)
	if r.Kind != outcome.OK && r.Kind.Counts() {
		g.lastKind.Store(uint32(r.Kind))
	}
}

// RunProber runs the breaker's prober loop until ctx ends: whenever the
// breaker's cooldown has passed, one probe (at a time) calls probe, bounded
// by timeout. A nil probe succeeds at once (an adapter without a free
// endpoint is trusted again after its cooldown).
func (g *Guard) RunProber(ctx context.Context, probe func(context.Context) error, timeout time.Duration) {
	if probe == nil {
		probe = func(context.Context) error { return nil }
	}
	g.breaker.RunProber(ctx, probe, timeout)
}

// Snapshot is a guard's state at one instant, for /admin/providers.
type Snapshot struct {
	Breaker  breaker.Snapshot
	InFlight int
	MaxConc  int
	Limits   ratelimit.Snapshot
	LastKind outcome.Kind
}

// Snapshot reports the guard's state at now.
func (g *Guard) Snapshot(now time.Time) Snapshot {
	return Snapshot{
		Breaker:  g.breaker.Snapshot(now),
		InFlight: g.bulk.InFlight(),
		MaxConc:  g.bulk.Cap(),
		Limits:   g.limits.Snapshot(now),
		LastKind: outcome.Kind(g.lastKind.Load()),
	}
}

// Capacity is the share of the provider's capacity left at now, in [0, 1]:
// bulkhead headroom times the fuller-used of its request and token
// budgets (1 where unknown). It is what spreading weighs by.
func (g *Guard) Capacity(now time.Time) float64 {
	c := 1.0
	if capacity := g.bulk.Cap(); capacity > 0 {
		c = 1 - float64(g.bulk.InFlight())/float64(capacity)
	}
	l := g.limits.Snapshot(now)
	if l.BlockedFor > 0 {
		return 0
	}
	for _, p := range [...][2]int64{{l.RemainingRequests, l.RequestsLimit}, {l.RemainingTokens, l.TokensLimit}} {
		if p[0] >= 0 && p[1] > 0 {
			c *= min(1, float64(p[0])/float64(p[1]))
		}
	}
	return max(c, 0)
}

// Open reports whether the breaker is open at now and how long until its
// next probe is due.
func (g *Guard) Open(now time.Time) (bool, time.Duration) {
	b := g.breaker.Snapshot(now)
	return b.State == breaker.Open, b.CooldownLeft
}

// Learn applies a rate-limit announcement that did not come with an
// attempt (a restored state file).
func (g *Guard) Learn(now time.Time, rl outcome.RateLimit) { g.limits.Observe(now, rl) }
