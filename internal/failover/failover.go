package failover

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/hedge"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/tracing"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// Provider is one configured provider as the loop sees it: how to call it
// and its runtime.
type Provider struct {
	// Descriptor is the provider as configured (its Config's defaults
	// applied).
	provider.Descriptor
	Up *upstream.Upstream
	// NoCountTokens: the provider answered count_tokens with 404, 405 or
	// 501, it has no such route; the router estimates instead
	// (docs/ARCHITECTURE.md, "Anthropic Messages API"). A reload builds
	// new Providers, which forget it.
	NoCountTokens atomic.Bool
	// prefill are its targets that refused to continue a stream
	// (docs/ARCHITECTURE.md, "Streaming"): never asked again while this
	// Provider is in force (a reload builds it afresh).
	prefill prefillRefusals
}

// Policy is what the loop follows for one request: the routing policy in
// force, whole (its affinity and hedging off when zero; the routing state
// sets the other parts' defaults), and the failure domains' health now.
type Policy struct {
	policy.Config
	// DomainDown, when not nil, reports whether another provider of the
	// named provider's failure domain is down now (open, or failing).
	DomainDown func(provider string) bool
}

// Options are a Loop's seams.
type Options struct {
	// Now is the clock of every decision (admission, backoff, the time
	// left before the request's deadline); nil means time.Now. Waits use
	// real timers for the durations it gives.
	Now func() time.Time
	// Logger receives the debug lines of attempts, retries and waits.
	Logger *slog.Logger
	// Freed returns a channel closed when any bulkhead frees a slot.
	Freed func() <-chan struct{}
	// Rand draws uniformly from [0, 1) for ranking and backoff jitter; it
	// must be safe for concurrent use. nil means math/rand/v2.
	Rand func() float64
	// Affinity remembers where conversations were served; nil means a
	// table of affinity.DefaultCapacity whose series go to New's reg.
	Affinity *affinity.Table
	// SharedAffinity, when not nil, is the fleet's view of the
	// conversations, read and recorded through first
	// (docs/ARCHITECTURE.md, "Affinity").
	SharedAffinity affinity.Shared
}

// Loop runs requests' attempts; it is safe for concurrent use.
type Loop struct {
	now   func() time.Time
	rnd   func() float64
	log   *slog.Logger
	freed func() <-chan struct{}
	aff   *affinity.Table
	share hedge.Share // the router's recent requests and hedges
	m     *metrics
}

// New returns a Loop whose metrics (retries, waits, fallbacks, affinity)
// go to reg (nil keeps them private).
func New(opts Options, reg prometheus.Registerer) *Loop {
	l := &Loop{now: opts.Now, rnd: opts.Rand, log: opts.Logger, freed: opts.Freed, aff: opts.Affinity, m: newMetrics(reg)}
	if l.now == nil {
		l.now = time.Now
	}
	if l.rnd == nil {
		l.rnd = rand.Float64
	}
	if l.aff == nil {
		l.aff = affinity.New(0, reg)
	}
	if opts.SharedAffinity != nil {
		l.aff.Share(opts.SharedAffinity)
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.freed == nil {
		never := make(chan struct{})
		l.freed = func() <-chan struct{} { return never }
	}
	return l
}

// Failure is one failed attempt.
type Failure struct {
	Provider string
	Err      *outcome.Error
}

// Run is one request's progress through its attempts. Fill ID, Op, Model
// and MaxTokens; the loop fills the rest.
type Run struct {
	ID    string
	Op    provider.Op
	Model *route.Model
	// MaxTokens is the output limit the request set (max_tokens,
	// max_completion_tokens, max_output_tokens), 0 for none. A target's
	// max_output_tokens lowers it per attempt (docs/ARCHITECTURE.md,
	// "Output limits"): the loop charges that target's buckets the
	// lowered limit and says so at debug.
	MaxTokens int64
	// Prompt is the request's prompt estimate (tokens), 0 for unknown: a
	// target whose context_window it exceeds is skipped before any call
	// (docs/ARCHITECTURE.md, "Context windows").
	Prompt int64
	// Affinity is the request's conversation identity (its dialect's);
	// the zero ID has none.
	Affinity affinity.ID
	// Trace is the request's span (docs/ARCHITECTURE.md, "Tracing"):
	// each attempt is a span under it, refusals and waits its events.
	// The zero Request is tracing off.
	Trace tracing.Request
	// AffinityOutcome is what affinity did for the served request: kept,
	// moved or new ("" when it has no identity or affinity is off).
	AffinityOutcome string
	// Attempts counts attempts sent; Failures lists the failed ones.
	Attempts int
	Failures []Failure
	// Upstream is the time spent waiting on providers.
	Upstream time.Duration
	// LastTier is the tier of the latest attempt.
	LastTier int
	// Supported is false when no target of the model serves the op.
	Supported bool
	// Missing are the targets ("provider/model") skipped or failed because
	// their provider says the model does not exist.
	Missing []string
	// cands are the targets that serve the op, with their progress;
	// candBuf holds them for a model of up to two targets, so most
	// requests' plan allocates nothing (the Run is the request's own, in
	// its Exchange, never reused).
	cands   []candidate
	candBuf [2]candidate
	// waited is the time the latest pause took, for the retry log line.
	waited time.Duration
	// hedged: a hedge was sent (a request hedges at most once).
	hedged bool
	// holdEnd: when the request stops waiting for a better tier
	// (routing.retry.tier_wait from its first hold); zero: it has not
	// held.
	holdEnd time.Time
	// idle is routing.stream.idle_timeout: a stream attempt's gap after
	// its first content that is a stall (0: none is watched for).
	idle time.Duration
	// aff says what affinity does for the request: on (it has an
	// identity, the policy and its model allow it), and the target that
	// served the conversation last, if any.
	aff struct {
		on, had bool
		last    affinity.Target
	}
}

// Refusals are the providers' last refusals, one per candidate that was
// refused and never admitted since.
func (r *Run) Refusals() []*upstream.Refusal {
	var out []*upstream.Refusal
	for _, c := range r.cands {
		if c.refusal != nil {
			out = append(out, c.refusal)
		}
	}
	return out
}

// Result is how the attempts ended. Exactly one of Served, ClientError
// and Gone is set, or none: then nothing served the request (the Run
// says why: its failures, refusals and whether the deadline passed).
type Result struct {
	// Served is a provider's answer, to write.
	Served *Served
	// ClientError is a provider's client error, to pass through;
	// Provider names the provider.
	ClientError *outcome.Error
	Provider    string
	// Gone: the client went away.
	Gone bool
	// DeadlinePassed: the request's deadline ended the attempts.
	DeadlinePassed bool
}

// end is the Result of attempts that served nothing.
func (r *Run) end(ctx context.Context) Result {
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Result{DeadlinePassed: true}
		}
		return Result{Gone: true}
	}
	return Result{}
}

// Walk runs the attempt loop (docs/ARCHITECTURE.md, "Retries and
// failover") in five steps: plan ranks the model's targets and keeps
// those that serve the op; each round, admit asks every candidate's
// provider for a permit in rank order, attempt sends the admitted one,
// decide (a pure function of the outcome) says whether the walk ends,
// moves on at once or comes back to that candidate after a wait; when a
// round can start nothing more, pause waits for the earliest backoff or
// bucket refill, or for a bulkhead to free a slot. The last attempt is
// kept for the model's last tier (the local fallback) when that tier has
// not been tried yet. providers finds a target's provider; tokens is the
// request's token estimate (r.MaxTokens included). Every decision reads the loop's clock
// (Options.Now), the request's deadline included; only the waits use real
// timers. Walk writes nothing: it returns how the attempts ended.
func (l *Loop) Walk(ctx context.Context, r *Run, p *Policy, providers func(name string) *Provider, req *provider.Request, tokens int64) Result {
	now := l.now()
	end := deadlineOn(ctx, now)
	r.idle = p.Stream.IdleTimeout
	if p.Hedge.On() {
		l.share.Request()
	}
	l.plan(r, p, providers, req, now)
	for round := 0; ; round++ {
		if round > 0 {
			now = l.now()
		}
		var w wake
		// heldTier is the best tier held this round (decide's hold): no
		// candidate of a worse tier after it is tried before it is.
		heldTier := math.MaxInt
		for i := range r.cands {
			c := &r.cands[i]
			if r.Attempts >= p.Retry.MaxAttempts || ctx.Err() != nil {
				return r.end(ctx)
			}
			if c.tg.Tier > heldTier {
				continue // the better tier is waited for (routing.retry.tier_wait)
			}
			permit := l.admit(r, c, p, now, end.Sub(now), tokens, &w)
			if permit == nil {
				if c.held && !c.out {
					heldTier = min(heldTier, c.tg.Tier)
				}
				continue
			}
			l.note(ctx, r, c)
			var (
				sv *Served
				by = c
				fs failures
			)
			if l.hedges(r, p, c) {
				sv, by, fs = l.race(ctx, r, p, c, permit, end, tokens, &w)
			} else {
				var oe *outcome.Error
				if sv, oe = l.attempt(ctx, r, c.p, *c.tg, c.req, permit); oe != nil {
					fs.add(c, oe)
				}
			}
			if fs.n > 0 {
				now = l.now()
			}
			for _, f := range fs.f[:fs.n] {
				// A hedge's leg that failed before the other answered is
				// settled all the same.
				if res, over := l.settle(ctx, r, p, f, now, end, &w); over && sv == nil {
					return res
				}
				if f.c.held {
					heldTier = min(heldTier, f.c.tg.Tier)
				}
			}
			if sv != nil {
				l.remember(r, p, by, now)
				return Result{Served: sv}
			}
		}
		if r.Attempts >= p.Retry.MaxAttempts {
			return r.end(ctx)
		}
		if !l.pause(ctx, r, &w) {
			return r.end(ctx)
		}
	}
}

// settle applies decide to a failed attempt at now: it ends the walk
// (over, with its Result), or takes the candidate out, or sets when it may
// be tried again and whether its tier waits for it.
func (l *Loop) settle(ctx context.Context, r *Run, p *Policy, f failed, now, end time.Time, w *wake) (res Result, over bool) {
	c, oe := f.c, f.oe
	hold := r.holdLeft(p, now)
	if hold > 0 && (!r.mayTryAgain(p, c) || !c.p.Up.Admits(now)) {
		hold = 0 // no attempt left for it, its breaker opened, or a quota: move on at once
	}
	d := decide(oe.Kind, c.tries, p.Retry.Delay(c.tries, l.rnd()), announced(oe), end.Sub(now), hold)
	c.held = false
	switch d.step {
	case stepGone:
		return Result{Gone: true}, true
	case stepReturn:
		return Result{ClientError: oe, Provider: c.p.Name}, true
	case stepDisable:
		// That target is misconfigured: off until a reload or an
		// enable; the model fails over at once.
		c.p.Up.DisableTarget(c.tg.Model, oe.Message)
		r.Missing = append(r.Missing, c.p.Name+"/"+c.tg.Model)
		c.out = true
	case stepDrop:
		c.out = true
	case stepOutgrown:
		// The prompt is too long for c: for no candidate whose window is
		// no larger either; the provider's 400 goes back when none is
		// left (docs/ARCHITECTURE.md, "Context windows").
		if r.outgrow(c) {
			return Result{ClientError: oe, Provider: c.p.Name}, true
		}
	case stepRetry:
		c.notUntil = now.Add(d.wait)
		w.until(c.notUntil)
		if c.held = d.hold; d.hold {
			r.startHold(p, now)
			l.log.DebugContext(ctx, "holding the better tier", "request_id", r.ID, "provider", c.p.Name,
				"tier", c.tg.Tier, "kind", oe.Kind.String(), "wait_ms", d.wait.Milliseconds())
		}
	}
	return Result{}, false
}

// holdLeft is how much longer the request may wait for a better tier at
// now before it degrades (docs/ARCHITECTURE.md, "Retries and failover"):
// routing.retry.tier_wait from the first wait it held.
func (r *Run) holdLeft(p *Policy, now time.Time) time.Duration {
	if p.Retry.TierWait <= 0 {
		return 0
	}
	if r.holdEnd.IsZero() {
		return p.Retry.TierWait
	}
	return max(r.holdEnd.Sub(now), 0)
}

// outgrow takes c, whose provider said the prompt is too long for it, out
// of the request, and with it every candidate whose window is known and
// no larger than c's (unknown windows stay: they may be larger); it
// reports whether no candidate is left.
func (r *Run) outgrow(c *candidate) (none bool) {
	c.out = true
	none = true
	for i := range r.cands {
		o := &r.cands[i]
		if w := c.tg.ContextWindow; w > 0 && o.tg.ContextWindow > 0 && o.tg.ContextWindow <= w {
			o.out = true
		}
		none = none && o.out
	}
	return none
}

// mayTryAgain reports whether c could have another of the request's
// attempts: one is left, and the last is not kept for the fallback tier.
func (r *Run) mayTryAgain(p *Policy, c *candidate) bool {
	left := p.Retry.MaxAttempts - r.Attempts
	if left <= 0 {
		return false
	}
	lastTier := r.Model.Targets[len(r.Model.Targets)-1].Tier
	return left > 1 || c.tg.Tier == lastTier || !keepForFallback(r.cands, lastTier, r.Model.BestTier)
}

// startHold starts the request's wait for a better tier at now, unless it
// has started already.
func (r *Run) startHold(p *Policy, now time.Time) {
	if r.holdEnd.IsZero() {
		r.holdEnd = now.Add(p.Retry.TierWait)
	}
}

// deadlineOn is ctx's deadline on the loop's clock, whose reading is now
// (the request's deadline is on the real clock: the two meet here, once);
// with no deadline, the farthest time.
func deadlineOn(ctx context.Context, now time.Time) time.Time {
	deadline, ok := ctx.Deadline()
	if !ok {
		return now.Add(math.MaxInt64)
	}
	return now.Add(time.Until(deadline))
}
