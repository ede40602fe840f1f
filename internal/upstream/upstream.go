package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/breaker/prober"
	"github.com/llmrouter/llmrouter/internal/bulkhead"
	"github.com/llmrouter/llmrouter/internal/confirm"
	"github.com/llmrouter/llmrouter/internal/offtargets"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/quota"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/stats"
	"github.com/llmrouter/llmrouter/internal/throttle"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// Slow start after a breaker closes: the provider's share of traffic
// grows from rampFloor to whole over rampDuration.
const (
	rampDuration = 30 * time.Second
	rampFloor    = 0.1
)

// Options are an Upstream's seams. The zero Options is valid.
type Options struct {
	// Now is the clock; nil means time.Now. Durations are measured on
	// its monotonic reading.
	Now func() time.Time
	// Rand draws uniformly from [0, 1) for adaptive throttling; nil means
	// math/rand/v2.
	Rand func() float64
	// Logger receives probe results; nil discards.
	Logger *slog.Logger
	// Freed, when not nil, is signalled whenever any bulkhead frees a slot.
	Freed *bulkhead.Signal
	// Fleet, when not nil, shares each provider's state with the other
	// processes of a fleet (shared_state).
	Fleet shared.Fleet
	// Observer counts what the runtime does; nil counts nothing.
	Observer Observer
	// Changed, when not nil, is called whenever something worth keeping
	// across a restart changed (docs/ARCHITECTURE.md, "Warm restart"): a
	// breaker transition, a rate-limit block set or extended (Retry-After,
	// an announced empty budget), a quota block set or lifted, a target
	// disabled or enabled. It must not block: it may run under the
	// breaker's lock.
	Changed func()
}

// Observer counts what a provider's runtime does (docs/ARCHITECTURE.md,
// "Metrics"). Its methods must only count: Transition runs under the
// breaker's lock, the others on the request path.
type Observer interface {
	// Refused counts an attempt refused here: Full (the bulkhead),
	// Limited (the buckets or a block) or Throttled (adaptive
	// throttling).
	Refused(r Reason)
	// Transition counts the breaker entering to.
	Transition(to breaker.State)
	// Done counts a released attempt.
	Done(r Result)
}

// uncounted is the Observer of Options without one.
type uncounted struct{}

func (uncounted) Refused(Reason)           {}
func (uncounted) Transition(breaker.State) {}
func (uncounted) Done(Result)              {}

// Reason says why Acquire refused.
type Reason uint8

const (
	// Open: the breaker is open or half-open (only its probe goes).
	Open Reason = iota + 1
	// Full: the bulkhead is at max_concurrency.
	Full
	// Limited: the buckets hold too little, or Retry-After blocks.
	Limited
	// TooLarge: the request needs more tokens than a whole minute's budget.
	TooLarge
	// Throttled: adaptive throttling refused it locally.
	Throttled
	// Quota: the provider is out of quota until its reset, a reload, an
	// operator's enable, or the next quota recheck.
	Quota
)

var reasonNames = [...]string{Open: "open", Full: "full", Limited: "limited", TooLarge: "too_large", Throttled: "throttled", Quota: "quota"}

func (r Reason) String() string { return reasonNames[r] }

// Sentinels a Refusal unwraps to, for errors.Is.
var (
	// ErrFull: the provider is at max_concurrency.
	ErrFull = errors.New("provider at max_concurrency")
	// ErrThrottled: adaptive throttling refused the attempt locally.
	ErrThrottled = errors.New("adaptive throttling")
	// ErrQuota: the provider is out of quota.
	ErrQuota = errors.New("provider out of quota")
)

// Refusal is Acquire's typed refusal. errors.Is matches breaker.ErrOpen,
// ErrFull, ratelimit.ErrLimited, ratelimit.ErrTooLarge or ErrThrottled.
type Refusal struct {
	Reason Reason
	// Wait is how long until the provider could admit again: the bucket
	// refill or Retry-After block (Limited), the next probe (Open; 0 when
	// one is due). 0 for the other reasons.
	Wait time.Duration
	err  error
}

func (r *Refusal) Error() string { return r.err.Error() }
func (r *Refusal) Unwrap() error { return r.err }

// Upstream is one provider's runtime. Build it with New (or through an
// internal/pool Pool); all methods are safe for concurrent use.
type Upstream struct {
	// desc is the provider's description in force: replaced (Renew) when
	// a reload keeps the runtime with an Equal one (a new adapter, maybe a
	// new key); pol is the policy the runtime was built with.
	desc     atomic.Pointer[provider.Descriptor]
	pol      shared.Policy
	name     string
	now      func() time.Time
	rnd      func() float64
	log      *slog.Logger
	epoch    time.Time // monotonic base of closedAt
	breaker  *breaker.Breaker
	bulk     *bulkhead.Bulkhead
	limits   *ratelimit.Limiter
	throttle *throttle.Throttle
	stats    *stats.Stats
	obs      Observer
	changed  func() // told of what a warm restart should keep
	// closedAt is when the breaker last closed after a trip, as time
	// since epoch; 0 means never tripped.
	closedAt atomic.Int64
	// lastKind is the kind of the last failure that counted; 0 none.
	// lastAt is when it happened, in Unix nanoseconds (0: not known, as
	// after a warm restart).
	lastKind atomic.Uint32
	lastAt   atomic.Int64

	// quota is the out-of-quota block (docs/ARCHITECTURE.md,
	// "Classification"): the breaker's models-list probe cannot tell
	// whether quota is back, so the block is kept apart from it.
	quota *quota.Block

	// targets are the provider's models that answered "model not found":
	// off until a reload changes them or an operator enables them.
	targets offtargets.Set

	// confirms are the checks of suspected kinds (docs/ARCHITECTURE.md,
	// "Classification"), at most one per kind (and target) per
	// breaker.cooldown.failure.
	confirms *confirm.Checks

	// shared is the fleet's view of the provider; nil without shared_state.
	shared shared.Handle
}

// New returns the runtime of the provider d (its Config's defaults
// applied, as the routing state applies them) under pol. pol.Breaker must
// pass Validate.
func New(d provider.Descriptor, pol shared.Policy, opts Options) *Upstream {
	u := &Upstream{pol: pol, name: d.Config.Name, now: opts.Now, rnd: opts.Rand, log: opts.Logger,
		throttle: throttle.New(pol.ThrottleK, pol.Breaker.FailureThreshold.MinRequests), stats: stats.New(stats.Config{})}
	u.desc.Store(&d)
	if u.now == nil {
		u.now = time.Now
	}
	if u.rnd == nil {
		u.rnd = rand.Float64
	}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	u.obs, u.changed = opts.Observer, opts.Changed
	if u.obs == nil {
		u.obs = uncounted{}
	}
	if u.changed == nil {
		u.changed = func() {}
	}
	u.epoch = u.now()
	u.breaker = breaker.New(u.name, pol.Breaker, breaker.Options{
		// Runs under the breaker's lock: a counter and an atomic only.
		OnStateChange: func(_ string, from, to breaker.State) {
			u.obs.Transition(to)
			u.changed()
			if to == breaker.Closed && from != breaker.Closed {
				u.closedAt.Store(max(1, int64(u.now().Sub(u.epoch))))
			}
		},
	})
	u.bulk = bulkhead.New(d.Config.MaxConcurrency, opts.Freed)
	u.limits = ratelimit.New(d.Config.RPM, d.Config.TPM)
	recheck := pol.QuotaRecheck
	if recheck <= 0 {
		recheck = shared.DefaultQuotaRecheck
	}
	u.quota = quota.New(recheck)
	every := pol.Breaker.Cooldown.Failure
	if every <= 0 {
		every = breaker.DefaultConfig().Cooldown.Failure
	}
	u.confirms = confirm.New(every)
	if opts.Fleet != nil {
		u.shared = opts.Fleet.For(d, u.fingerprint().Key(u.name), u.fleetPolicy(), u.applyView)
	}
	return u
}

// Name is the provider's configured name.
func (u *Upstream) Name() string { return u.name }

// Descriptor is the provider's description in force.
func (u *Upstream) Descriptor() provider.Descriptor { return *u.desc.Load() }

// Same reports whether the runtime describes the provider d under pol:
// a reload keeps it (with all it learned) then, and builds a new one
// otherwise.
func (u *Upstream) Same(d provider.Descriptor, pol shared.Policy) bool {
	return u.desc.Load().Equal(d) && u.pol == pol
}

// Renew replaces the runtime's description with d, which must be Same:
// the adapter of a reload and its secrets (a key read anew), which Redact
// hides from then on.
func (u *Upstream) Renew(d provider.Descriptor) { u.desc.Store(&d) }

// Permit is one admitted attempt. Release it exactly once.
type Permit struct {
	u        *Upstream
	ticket   breaker.Ticket
	res      ratelimit.Reservation // by value: one allocation less per attempt
	released atomic.Bool
	// quotaCheck marks the one request that checks a provider out of
	// quota.
	quotaCheck bool
	// shared: the fleet admitted the attempt in its breaker generation
	// gen, charging tokens.
	shared bool
	gen    uint64
	tokens int64
}

// Acquire admits one attempt of an estimated tokens at now, or refuses
// with a *Refusal that holds nothing.
func (u *Upstream) Acquire(now time.Time, tokens int64) (*Permit, error) {
	if sh := u.shared; sh != nil && sh.Up() {
		if p, err, decided := u.acquireShared(sh, now, tokens); decided {
			return p, err
		}
		// The shared state failed this once: this process decides alone.
	}
	var quotaCheck bool
	if u.quota.Off() {
		wait, check, lifted := u.quota.Admit(now)
		if lifted {
			u.changed()
		}
		if !check {
			return nil, &Refusal{Reason: Quota, Wait: wait, err: ErrQuota}
		}
		quotaCheck = true
	}
	p, err := u.acquire(now, tokens)
	if quotaCheck {
		if err != nil {
			u.quota.CheckDone()
		} else {
			p.quotaCheck = true
		}
	}
	return p, err
}

func (u *Upstream) acquire(now time.Time, tokens int64) (*Permit, error) {
	t, err := u.breaker.Allow(now)
	if err != nil {
		r := &Refusal{Reason: Open, err: err}
		var oe *breaker.OpenError
		if errors.As(err, &oe) {
			r.Wait = oe.RetryIn
		}
		return nil, r
	}
	if !u.bulk.TryAcquire() {
		u.breaker.Done(now, t, outcome.Canceled, 0) // give back the ticket; counts for nothing
		u.obs.Refused(Full)
		return nil, &Refusal{Reason: Full, err: ErrFull}
	}
	res, err := u.limits.Reserve(now, tokens)
	if err != nil {
		u.bulk.Release()
		u.breaker.Done(now, t, outcome.Canceled, 0)
		if le := (*ratelimit.LimitedError)(nil); errors.As(err, &le) {
			u.obs.Refused(Limited)
			return nil, &Refusal{Reason: Limited, Wait: le.Wait, err: err}
		}
		return nil, &Refusal{Reason: TooLarge, err: err}
	}
	if !u.throttle.Allow(now, u.rnd()) {
		// The provider has been refusing most of what it gets: this one
		// goes elsewhere, and nothing it took is charged.
		res.Cancel(now)
		u.bulk.Release()
		u.breaker.Done(now, t, outcome.Canceled, 0)
		u.obs.Refused(Throttled)
		return nil, &Refusal{Reason: Throttled, err: ErrThrottled}
	}
	return &Permit{u: u, ticket: t, res: res}, nil
}

// Hold takes a bulkhead permit for a call outside the attempt loop
// (count_tokens, docs/ARCHITECTURE.md "Anthropic Messages API"): it
// counts in max_concurrency as an attempt does, and nothing else
// (breaker, buckets, stats) learns of it. ok is false when the bulkhead
// is full (counted as refused, Full); otherwise release gives the permit
// back and must be called exactly once.
func (u *Upstream) Hold() (release func(), ok bool) {
	if !u.bulk.TryAcquire() {
		u.obs.Refused(Full)
		return nil, false
	}
	return u.bulk.Release, true
}

// Result is what one attempt learned about its provider.
type Result struct {
	// Kind classifies the attempt; OK is success.
	Kind outcome.Kind
	// RetryAfter is the provider's requested wait (Retry-After,
	// retry-after-ms, RetryInfo); 0 when it did not say.
	RetryAfter time.Duration
	// RateLimit is the budget the provider announced in its headers; the
	// zero value means it announced nothing.
	RateLimit outcome.RateLimit
	// Usage is the real token usage; zero means not reported (the
	// estimate stands).
	Usage outcome.Usage
	// Latency is the provider's time: to the answer, or to the first
	// content of a stream.
	Latency time.Duration
}

// Observe applies a budget the provider announced before the attempt is
// over: a stream's response headers arrive long before its end, and the
// next request must already respect them.
func (p *Permit) Observe(now time.Time, rl outcome.RateLimit) {
	rl = known(rl)
	if p.u.limits.Observe(now, rl) {
		p.u.changed()
	}
	if p.shared {
		p.u.shared.Record(shared.Record{ObserveOnly: true, RateLimit: rl})
	}
}

// known returns rl, or UnknownRateLimit for the zero value: an adapter that
// leaves RateLimit unset has announced nothing, not "no budget left".
func known(rl outcome.RateLimit) outcome.RateLimit {
	if rl == (outcome.RateLimit{}) {
		return outcome.UnknownRateLimit
	}
	return rl
}

// Release ends the attempt with its result at now: buckets, bulkhead,
// breaker, stats, throttle and metrics learn it. Calling it twice panics.
func (p *Permit) Release(now time.Time, r Result) {
	if !p.released.CompareAndSwap(false, true) {
		panic(fmt.Sprintf("upstream: permit for %s released twice", p.u.name))
	}
	u := p.u
	p.res.Reconcile(now, r.Usage.Total())
	rl := known(r.RateLimit)
	if r.RetryAfter > rl.RetryAfter {
		rl.RetryAfter = r.RetryAfter
	}
	if r.Kind != outcome.RateLimited && r.Kind != outcome.Overloaded && r.Kind != outcome.Quota {
		// Retry-After on anything else (a 200, a 500) is advice for
		// retries of that response, not a block on the provider.
		rl.RetryAfter = 0
	}
	if u.limits.Observe(now, rl) {
		u.changed()
	}
	u.bulk.Release()
	// What the health mechanisms (breaker, stats, throttle) learn. A rate
	// limit that says when to come back is a budget, not a failure: the
	// buckets and the block above hold the provider until then. Quota has
	// its own block (a probe cannot lift it); a missing target disables
	// that target only. None of them counts against the provider.
	health := r.Kind
	switch {
	case r.Kind == outcome.RateLimited && (rl.RetryAfter > 0 || rl.ResetRequests > 0 || rl.ResetTokens > 0),
		r.Kind == outcome.Quota:
		health = outcome.Canceled
	}
	var last outcome.Kind
	if r.Kind != outcome.OK && r.Kind.Counts() {
		last = r.Kind
		u.lastKind.Store(uint32(r.Kind))
		u.lastAt.Store(now.UnixNano())
	}
	if p.shared {
		// The fleet's breaker and quota block learn it; the local ones
		// follow the fleet's view (applyView).
		if r.Kind == outcome.Quota {
			u.quotaResult(now, r)
		}
		rec := shared.Record{Gen: p.gen, Health: health, LastKind: last, RateLimit: rl,
			Cooldown: u.pol.Breaker.Cooldown.For(health, r.RetryAfter, 1),
			Quota:    r.Kind == outcome.Quota, QuotaReset: r.RetryAfter, QuotaCheck: p.quotaCheck}
		if used := r.Usage.Total(); used > 0 {
			rec.TokensDelta = used - p.tokens
		}
		u.shared.Record(rec)
	} else {
		if p.quotaCheck || r.Kind == outcome.Quota {
			u.quotaResult(now, r)
		}
		u.breaker.Done(now, p.ticket, health, r.RetryAfter)
	}
	u.stats.Observe(now, health, r.Latency)
	if health.Counts() {
		u.throttle.Done(now, health == outcome.OK || health == outcome.ClientError)
	}
	u.obs.Done(r)
}

// quotaResult records a quota answer, or the end of a check: a check that
// did not meet a quota error lifts the block.
func (u *Upstream) quotaResult(now time.Time, r Result) {
	if r.Kind != outcome.Quota {
		if u.quota.Answered(r.Kind.Counts()) {
			u.changed()
			u.log.Info("quota is back: a check request was answered", "provider", u.name)
		}
		return
	}
	if u.quota.Quota(now, r.RetryAfter) {
		u.log.Warn("provider out of quota: off until its reset, a reload, an enable or the next quota check",
			"provider", u.name, "reset_in", r.RetryAfter.String(), "quota_recheck", u.quota.Recheck().String())
	}
	u.changed()
}

// Confirm says whether a kind the provider's words only suspect
// (outcome.Error.Suspect) is so: check runs the router's own minimal
// request, at most one at a time per key and one per
// breaker.cooldown.failure, whose verdict stands meanwhile; a caller
// during a check waits for it, bounded by ctx (docs/ARCHITECTURE.md,
// "Classification"). The caller applies a confirmed kind as the attempt's.
func (u *Upstream) Confirm(ctx context.Context, now time.Time, k confirm.Key, check confirm.Check) bool {
	return u.confirms.Confirm(ctx, now, k, check)
}

// DisableTarget turns model off on this provider: the provider answered
// that it does not exist. It stays off until a reload changes the
// provider or an operator enables it; it reports whether it was on.
func (u *Upstream) DisableTarget(model, message string) bool {
	if !u.targets.Disable(model, message) {
		return false
	}
	u.changed()
	if u.shared != nil && u.shared.Up() {
		u.shared.DisableTarget(model, message)
	}
	u.log.Warn("target disabled: the provider says the model does not exist; fix the config and reload, or enable it",
		"provider", u.name, "model", model, "error", u.Redact(message))
	return true
}

// TargetOff reports whether model is disabled on this provider.
func (u *Upstream) TargetOff(model string) bool { return u.targets.Off(model) }

// Enable lifts a quota block and every disabled target (an operator's
// POST /admin/providers/{name}/enable); it reports what it lifted.
func (u *Upstream) Enable() (quota bool, targets []string) {
	quota = u.quota.Lift()
	targets = u.targets.Lift()
	u.confirms.Forget()
	if u.shared != nil && u.shared.Up() {
		u.shared.Enable()
	}
	if quota || len(targets) > 0 {
		u.changed()
		u.log.Info("provider enabled by an operator", "provider", u.name, "quota_lifted", quota, "targets_enabled", len(targets))
	}
	return quota, targets
}

// offState reports the quota block and the disabled targets, for Status.
func (u *Upstream) offState(now time.Time) (quota bool, quotaLeft time.Duration, targets []string) {
	quota, quotaLeft = u.quota.Status(now)
	return quota, quotaLeft, u.targets.Models()
}

// Health is what ranking reads about the provider at now.
func (u *Upstream) Health(now time.Time) route.Health {
	st := u.stats.Ranking(now)
	h := route.Health{
		SuccessRate: st.SuccessRate,
		Latency:     st.LatencyEMA,
		Recency:     st.Recency,
		Capacity:    u.capacity(now),
		Ramp:        1,
	}
	if c := u.closedAt.Load(); c != 0 {
		if since := now.Sub(u.epoch) - time.Duration(c); since < rampDuration {
			h.Ramp = max(rampFloor, float64(since)/float64(rampDuration))
		}
	}
	return h
}

// capacity is the share of the provider's capacity left at now, in
// [0, 1]: bulkhead headroom times the fuller-used of its request and
// token budgets (1 where unknown); 0 while blocked.
func (u *Upstream) capacity(now time.Time) float64 {
	c := 1.0
	if capacity := u.bulk.Cap(); capacity > 0 {
		c = 1 - float64(u.bulk.InFlight())/float64(capacity)
	}
	l := u.limits.Snapshot(now)
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

// IsOpen reports whether the breaker is open at now and how long until
// its next probe is due.
func (u *Upstream) IsOpen(now time.Time) (bool, time.Duration) {
	st, left := u.breaker.Cooldown(now)
	return st == breaker.Open, left
}

// Admits reports whether the provider's breaker is closed and it is not
// out of quota at now: with capacity left (its health's), whether it could
// take a request, as affinity asks before keeping a conversation there
// (docs/ARCHITECTURE.md, "Affinity"). It charges nothing.
func (u *Upstream) Admits(now time.Time) bool {
	return !u.quota.Off() && u.breaker.State(now) == breaker.Closed
}

// Down reports whether the provider counts as down for its failure
// domain at now (docs/ARCHITECTURE.md, "Selection"): its breaker is open,
// or it is failing (its latest attempts failed with no success since,
// stats.FailingStreak of them within the window), even with too few
// failures to trip the breaker. In a fleet the breaker is the fleet's and
// the failures this process's own.
func (u *Upstream) Down(now time.Time) bool {
	return u.breaker.State(now) == breaker.Open || u.Failing(now)
}

// Failing reports whether the provider's latest attempts failed with no
// success since (stats.FailingStreak of them, within the window), open
// breaker or not.
func (u *Upstream) Failing(now time.Time) bool { return u.stats.Failing(now) }

// Redact replaces the provider's secrets in a provider-supplied text.
func (u *Upstream) Redact(msg string) string {
	for _, sec := range u.desc.Load().Secrets {
		if len(sec) >= 4 && strings.Contains(msg, sec) {
			msg = strings.ReplaceAll(msg, sec, "[redacted]")
		}
	}
	return msg
}

// RunProber is the provider's prober loop; its owner runs it in a
// goroutine of its own and stops it by ending ctx. Whenever the breaker's
// cooldown has passed it runs probe (one at a time, bounded by the
// provider's first_token_timeout); in a fleet, one probe for the whole
// fleet (docs/ARCHITECTURE.md, "Fleet"), whose verdict every replica
// mirrors.
func (u *Upstream) RunProber(ctx context.Context, probe func(context.Context) error) {
	fleetwide := func(ctx context.Context) error {
		if sh := u.shared; sh != nil && sh.Up() {
			res, err := sh.Probe(ctx, probe)
			switch {
			case err == nil:
				u.applyView(res.View)
				return breaker.ErrProbeElsewhere
			case res.Ran:
				return res.Err // the fleet did not hear it; this process did
			}
		}
		return probe(ctx)
	}
	prober.Run(ctx, u.breaker, fleetwide, u.desc.Load().Config.WithDefaults().FirstTokenTimeout)
}

// Gauges are a provider's gauges (docs/ARCHITECTURE.md, "Metrics").
type Gauges struct {
	Breaker                            breaker.State
	InFlight                           int
	RemainingRequests, RemainingTokens int64 // -1 unknown
	TargetsOff                         int
	OutOfQuota                         bool
}

// Gauges reads the provider's gauges at now.
func (u *Upstream) Gauges(now time.Time) Gauges {
	l := u.limits.Snapshot(now)
	return Gauges{Breaker: u.breaker.Snapshot(now).State, InFlight: u.bulk.InFlight(),
		RemainingRequests: l.RemainingRequests, RemainingTokens: l.RemainingTokens,
		TargetsOff: u.targets.Len(), OutOfQuota: u.quota.Off()}
}
