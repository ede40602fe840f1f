package failover

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/relay"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// Causes the loop gives when it ends an attempt itself; adapters turn them
// into outcome.Timeout through context.Cause.
var (
	errAttemptTimeout    = &outcome.Error{Kind: outcome.Timeout, Message: "attempt timed out (provider timeout)"}
	errFirstTokenTimeout = &outcome.Error{Kind: outcome.Timeout, Message: "no first token within first_token_timeout"}
)

// Provider is one configured provider as the loop sees it: how to call it
// and its runtime.
type Provider struct {
	Name    string
	Adapter provider.Adapter
	// Config holds the attempt timeouts (defaults applied).
	Config provider.Config
	Up     *upstream.Upstream
}

// Policy is what the loop follows for one request.
type Policy struct {
	Retry   backoff.Config
	Weights route.Weights
	// DomainDown, when not nil, reports whether another provider of the
	// named provider's failure domain is open now.
	DomainDown func(provider string) bool
}

// Options are a Loop's seams.
type Options struct {
	// Now is the clock for admission decisions; nil means time.Now.
	Now func() time.Time
	// Logger receives the debug lines of attempts, retries and waits.
	Logger *slog.Logger
	// Freed returns a channel closed when any bulkhead frees a slot.
	Freed func() <-chan struct{}
}

// Loop runs requests' attempts; it is safe for concurrent use.
type Loop struct {
	now   func() time.Time
	log   *slog.Logger
	freed func() <-chan struct{}
	m     *metrics
}

// New returns a Loop whose metrics (retries, waits, fallbacks) go to reg
// (nil keeps them private).
func New(opts Options, reg prometheus.Registerer) *Loop {
	l := &Loop{now: opts.Now, log: opts.Logger, freed: opts.Freed, m: newMetrics(reg)}
	if l.now == nil {
		l.now = time.Now
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

// Run is one request's progress through its attempts. Fill ID, Op and
// Model; the loop fills the rest.
type Run struct {
	ID    string
	Op    provider.Op
	Model *route.Model
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
	// cands are the targets that serve the op, with their progress.
	cands []candidate
	// waited is the time the latest pause took, for the retry log line.
	waited time.Duration
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

// candidate is one target's progress within a request.
type candidate struct {
	tg       route.Target
	p        *Provider
	req      *provider.Request // what this target is sent: the request or its Alt
	tries    int
	out      bool              // never again for this request
	notUntil time.Time         // backoff: not before then
	refusal  *upstream.Refusal // the provider's last refusal, if any
}

// Walk runs the attempt loop (docs/ARCHITECTURE.md, "Retries and
// failover"): the model's targets in rank order; a failed attempt moves to
// the next candidate at once; when every candidate has been tried or
// refused, retryable ones are tried again after their backoff, while
// attempts remain and the deadline allows. The last attempt is kept for the
// model's last tier (the local fallback) when that tier has not been tried
// yet. providers finds a target's provider; tokens is the request's token
// estimate. Walk writes nothing: it returns how the attempts ended.
func (l *Loop) Walk(ctx context.Context, r *Run, p Policy, providers func(name string) *Provider, req *provider.Request, tokens int64) Result {
	m := r.Model
	now := l.now()
	var orderBuf [16]int
	order := p.Weights.Rank(m, func(i int) route.Health {
		name := m.Targets[i].Provider
		h := providers(name).Up.Health(now)
		h.DomainDown = p.DomainDown != nil && p.DomainDown(name)
		return h
	}, openUnit, orderBuf[:0])
	cands := make([]candidate, 0, len(order))
	lastTier := m.Targets[len(m.Targets)-1].Tier
	for _, i := range order {
		tg := m.Targets[i]
		pr := providers(tg.Provider)
		treq := req
		if !provider.Serves(pr.Adapter, req.Op, tg.Model) {
			if treq = req.Alt; treq == nil || !provider.Serves(pr.Adapter, treq.Op, tg.Model) {
				continue
			}
		}
		r.Supported = true
		if pr.Up.TargetOff(tg.Model) {
			r.Missing = append(r.Missing, pr.Name+"/"+tg.Model) // not for any request until enabled or reloaded
			continue
		}
		cands = append(cands, candidate{tg: tg, p: pr, req: treq})
	}
	r.cands = cands
	maxAttempts := p.Retry.MaxAttempts
	for {
		now := l.now()
		deadline, _ := ctx.Deadline()
		left := time.Until(deadline) // real time: the deadline is the request's
		var soonest time.Time        // earliest moment a candidate may be admitted again
		// freed fires when any bulkhead releases a slot. It is armed at the
		// first full provider of a round and that admission is tried once
		// more, so a release between the refusal and the wait is not lost
		// (arming it up front would cost every request an allocation).
		var freed <-chan struct{}
		for i := range cands {
			c := &cands[i]
			if r.Attempts >= maxAttempts || ctx.Err() != nil {
				return r.end(ctx)
			}
			if c.out {
				continue
			}
			if r.Attempts == maxAttempts-1 && c.tg.Tier != lastTier && keepForFallback(cands, lastTier, r.Model.BestTier) {
				continue // keep the last attempt for the fallback tier
			}
			if now.Before(c.notUntil) {
				soonest = earliest(soonest, c.notUntil)
				continue
			}
			permit, err := c.p.Up.Acquire(now, tokens)
			if errors.Is(err, upstream.ErrFull) && freed == nil {
				freed = l.freed()
				permit, err = c.p.Up.Acquire(now, tokens)
			}
			if err != nil {
				r := err.(*upstream.Refusal)
				c.refusal = r
				switch r.Reason {
				case upstream.Full: // wait for a free slot below
				case upstream.Limited:
					if r.Wait > left {
						c.out = true // it cannot take us before the deadline
					} else {
						soonest = earliest(soonest, now.Add(r.Wait))
					}
				default:
					// Breaker open (only a successful probe reopens it: not
					// a wait a request can use), too large for its budget,
					// or throttled: not for this request.
					c.out = true
				}
				continue
			}
			c.refusal = nil
			c.tries++
			if r.Attempts > 0 {
				// Every retry and failover is visible at info: what failed,
				// where the request goes next, and how long it waited.
				prev := r.Failures[len(r.Failures)-1]
				what := "failing over"
				if prev.Provider == c.p.Name {
					what = "retrying"
				}
				l.log.Info(what, "request_id", r.ID, "attempt", r.Attempts+1, "from", prev.Provider,
					"to", c.p.Name, "kind", prev.Err.Kind.String(), "wait_ms", r.waited.Milliseconds())
				r.waited = 0
				l.m.retries.WithLabelValues(c.p.Name).Inc()
				if r.LastTier != c.tg.Tier {
					l.m.fallback(r.LastTier, c.tg.Tier)
				}
			}
			r.LastTier = c.tg.Tier
			sv, oe := l.attempt(ctx, r, c.p, c.tg, c.req, permit)
			if sv != nil {
				return Result{Served: sv}
			}
			switch oe.Kind {
			case outcome.Canceled:
				return Result{Gone: true}
			case outcome.ClientError:
				return Result{ClientError: oe, Provider: c.p.Name}
			}
			now = l.now()
			switch {
			case oe.Kind == outcome.TargetMissing:
				// That target is misconfigured: off until a reload or an
				// enable; the model fails over at once.
				c.p.Up.DisableTarget(c.tg.Model, oe.Message)
				r.Missing = append(r.Missing, c.p.Name+"/"+c.tg.Model)
				c.out = true
			case !oe.Kind.Retryable(), oe.Kind == outcome.Unknown && c.tries >= 2:
				c.out = true // auth, quota: another provider may serve; unknown: retried once
			default:
				wait := p.Retry.Delay(c.tries, rand.Float64())
				wait = max(wait, oe.RetryAfter)
				c.notUntil = now.Add(wait)
				if wait > time.Until(deadline) {
					c.out = true // a wait longer than what is left skips the provider
				} else {
					soonest = earliest(soonest, c.notUntil)
				}
			}
		}
		if r.Attempts >= maxAttempts {
			return r.end(ctx)
		}
		// Nothing more can start now: wait for the earliest backoff or
		// bucket refill, or for any bulkhead to free a slot.
		anyFull, anyLeft := false, false
		for i := range cands {
			if !cands[i].out {
				anyLeft = true
				if r := cands[i].refusal; r != nil && r.Reason == upstream.Full {
					anyFull = true
				}
			}
		}
		if !anyLeft || (soonest.IsZero() && !anyFull) {
			return r.end(ctx)
		}
		if !anyFull {
			freed = nil
		}
		if !l.pause(ctx, r, soonest, freed) {
			return r.end(ctx)
		}
	}
}

// pause waits until at (when not zero), freed fires (a bulkhead slot was
// released; nil: not waiting for one), or ctx ends; false means ctx ended.
func (l *Loop) pause(ctx context.Context, r *Run, at time.Time, freed <-chan struct{}) bool {
	var timer <-chan time.Time
	if !at.IsZero() {
		d := at.Sub(l.now())
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
		l.log.Debug("backing off", "request_id", r.ID, "wait_ms", d.Milliseconds())
	}
	start := time.Now()
	defer func() {
		r.waited = time.Since(start)
		l.m.backoff.Observe(r.waited.Seconds())
	}()
	select {
	case <-ctx.Done():
		return false
	case <-timer:
	case <-freed:
	}
	return true
}

// keepForFallback reports whether the last attempt must be kept for the
// model's last tier (the local fallback): it has a candidate still usable
// and none of its candidates has been tried yet.
func keepForFallback(cands []candidate, lastTier, bestTier int) bool {
	if lastTier == bestTier {
		return false
	}
	usable := false
	for i := range cands {
		if cands[i].tg.Tier != lastTier {
			continue
		}
		if cands[i].tries > 0 {
			return false
		}
		usable = usable || !cands[i].out
	}
	return usable
}

// openUnit draws a uniform number in (0, 1] for ranking.
func openUnit() float64 { return 1 - rand.Float64() }

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// Served is a provider's answer, admitted and not yet written. Call Done
// once it is (for a stream: with how the stream ended). It also carries
// the attempt's context and timer, so one allocation holds the attempt.
type Served struct {
	Provider *Provider
	Target   route.Target
	// Req is the request the attempt sent: the request Walk was given,
	// or its Alt.
	Req  *provider.Request
	Resp *provider.Response
	// Held are a stream's preamble chunks read before the commit point.
	Held [][]byte

	l            *Loop
	permit       *upstream.Permit // a stream's, released by Done; nil once released
	cancel       context.CancelCauseFunc
	timer        *time.Timer
	cause        atomic.Pointer[outcome.Error] // what the timer's firing means
	firstContent time.Duration
}

// Done ends the attempt: a stream's permit is released with its end (a
// non-stream answer's was released at once) and the attempt's context
// ends.
func (sv *Served) Done(end outcome.Kind) {
	if sv.permit != nil {
		sv.Resp.Stream.Close()
		sv.end()
		// A breaker that tripped during the stream ignores its outcome
		// (the permit's ticket is from before).
		sv.permit.Release(sv.l.now(), upstream.Result{Kind: end, RateLimit: outcome.UnknownRateLimit,
			Usage: sv.Resp.Stream.Usage(), Latency: sv.firstContent})
		sv.permit = nil
	}
}

// end stops the attempt's timer and context.
func (sv *Served) end() {
	sv.timer.Stop()
	sv.cancel(nil)
}

// attempt sends req to one target under permit. On success it returns the
// answer to write; otherwise the classified failure, with the permit
// released.
func (l *Loop) attempt(ctx context.Context, r *Run, up *Provider, tg route.Target, req *provider.Request, permit *upstream.Permit) (*Served, *outcome.Error) {
	r.Attempts++
	req.Model = tg.Model
	// One context and one timer bound the attempt: first the first-token
	// deadline (streams), then the attempt timeout. The timer's cause
	// says which one fired.
	sv := &Served{Provider: up, Target: tg, Req: req, l: l}
	var actx context.Context
	actx, sv.cancel = context.WithCancelCause(ctx)
	sv.cause.Store(errAttemptTimeout)
	limit := up.Config.Timeout
	if req.Stream && up.Config.FirstTokenTimeout < limit {
		sv.cause.Store(errFirstTokenTimeout)
		limit = up.Config.FirstTokenTimeout
	}
	sv.timer = time.AfterFunc(limit, func() { sv.cancel(sv.cause.Load()) })
	t0 := time.Now()
	resp, err := up.Adapter.Do(actx, req)
	if err == nil && resp.Stream != nil {
		// The headers came before the stream: their budget applies now,
		// not when the stream ends.
		permit.Observe(l.now(), resp.RateLimit)
		sv.Held, err = relay.Preamble(resp.Stream)
		if err != nil {
			resp.Stream.Close()
		}
	}
	r.Upstream += time.Since(t0)
	if err != nil {
		sv.end()
		oe := classify(ctx, up, err)
		permit.Release(l.now(), upstream.Result{Kind: oe.Kind, RetryAfter: oe.RetryAfter, RateLimit: oe.RateLimit, Latency: time.Since(t0)})
		l.log.Debug("attempt failed", "request_id", r.ID, "attempt", r.Attempts, "provider", up.Name,
			"status", oe.Status, "kind", oe.Kind.String(), "error", oe.Message)
		r.Failures = append(r.Failures, Failure{Provider: up.Name, Err: oe})
		return nil, oe
	}
	sv.Resp = resp
	if resp.Stream == nil {
		sv.end()
		permit.Release(l.now(), upstream.Result{Kind: outcome.OK, RateLimit: resp.RateLimit, Usage: resp.Usage, Latency: time.Since(t0)})
		return sv, nil
	}
	if sv.cause.Load() == errFirstTokenTimeout && sv.timer.Stop() {
		// First content arrived: the rest of the attempt timeout applies.
		sv.cause.Store(errAttemptTimeout)
		sv.timer.Reset(max(up.Config.Timeout-time.Since(t0), 0))
	}
	sv.firstContent = time.Since(t0)
	sv.permit = permit
	return sv, nil
}

// classify returns err's *outcome.Error. Canceled while the request itself
// is alive can only be the proxy's own doing: it is a network failure of
// the attempt, not the client leaving.
func classify(ctx context.Context, up *Provider, err error) *outcome.Error {
	var oe *outcome.Error
	if !errors.As(err, &oe) {
		oe = &outcome.Error{Kind: outcome.KindOf(err), Message: err.Error(), Err: err}
	}
	if oe.Kind == outcome.Canceled && ctx.Err() == nil {
		oe = &outcome.Error{Kind: outcome.Network, Message: oe.Message, Err: err}
	}
	if red := up.Up.Redact(oe.Message); red != oe.Message {
		cp := *oe
		cp.Message = red
		oe = &cp
	}
	if oe.Body != nil {
		// A body passed on as it came must not echo a secret either.
		if red := up.Up.Redact(string(oe.Body)); red != string(oe.Body) {
			cp := *oe
			cp.Body = []byte(red)
			oe = &cp
		}
	}
	return oe
}

// failureList describes the failed attempts: provider, status and kind each.
func (r *Run) FailureList() string {
	if len(r.Failures) == 0 {
		return "no attempt was made"
	}
	var b strings.Builder
	b.WriteString("attempts: ")
	for i, f := range r.Failures {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Provider)
		if f.Err.Status != 0 {
			b.WriteString(" status ")
			b.WriteString(strconv.Itoa(f.Err.Status))
		}
		b.WriteString(" ")
		b.WriteString(f.Err.Kind.String())
		if m := f.Err.Message; m != "" {
			if len(m) > 200 {
				m = m[:200] + "…"
			}
			b.WriteString(" (")
			b.WriteString(m)
			b.WriteString(")")
		}
	}
	return b.String()
}
