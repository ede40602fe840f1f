package failover

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/relay"
	"github.com/llmrouter/llmrouter/internal/reqctx"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/tracing"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// Causes the loop gives when it ends an attempt itself; adapters turn them
// into outcome.Timeout through provider.Cause.
var (
	errAttemptTimeout    = &outcome.Error{Kind: outcome.Timeout, Message: "attempt timed out (provider timeout)"}
	errFirstTokenTimeout = &outcome.Error{Kind: outcome.Timeout, Message: "no first token within first_token_timeout"}
	// errStreamIdle is a stall: no byte from the provider for
	// routing.stream.idle_timeout after the first content. As the timer's
	// cause it means the timer watches for one.
	errStreamIdle = &outcome.Error{Kind: outcome.Timeout, Message: "no byte from the provider within routing.stream.idle_timeout after the first content (a stall)"}
)

// Served is a provider's answer, admitted and not yet written. Call Done
// once it is (for a stream: with how the stream ended). It also carries
// the attempt's context and alarm, so one allocation holds the attempt.
type Served struct {
	Provider *Provider
	Target   route.Target
	// Req is the request the attempt sent: the request Walk was given,
	// or its Alt.
	Req  *provider.Request
	Resp *provider.Response
	// Held are a stream's preamble chunks read before the commit point.
	Held [][]byte

	// Hedged: the answer is a hedge's, the twin of an attempt that had
	// no first content after routing.hedge.after (docs/ARCHITECTURE.md,
	// "Hedging").
	Hedged bool

	l      *Loop
	permit *upstream.Permit // released by finish, abandon or (a stream's) Done; nil once released
	ctx    context.Context  // the attempt's: rc, or what the trace adds to it
	rc     reqctx.Ctx       // the attempt's own, ended with its cause
	t0     time.Time        // when it was sent
	// host's timer rings the attempt's alarm: the request's Ctx, or rc
	// (a hedge's twin, a request without one).
	host         *reqctx.Ctx
	cause        atomic.Pointer[outcome.Error] // what the alarm's ringing means
	firstContent time.Duration
	span         tracing.Attempt // ended by finish, abandon or (a stream's) Done

	// A stream attempt's context lends act to the adapter
	// (provider.Activity): its body's bytes keep the stream alive. Once
	// the first content came, the alarm (its cause errStreamIdle) looks
	// every look at most: reads moved since it last looked means bytes
	// came by then (quiet is when it last saw them move); quiet for idle
	// is a stall, noticed within idle plus look. until is the attempt
	// timeout. All are written before the cause is stored, and then only
	// by the alarm's Ring.
	actx  attemptCtx
	act   provider.Activity
	idle  time.Duration
	look  time.Duration
	until time.Time
	quiet time.Time
	reads uint64

	// rs, when not nil, is what it takes to continue the stream after a
	// failure (Loop.Rescuable); next is the attempt that did.
	rs   *rescue
	next *Served
}

// attemptCtx is a stream attempt's context: its own, lending act
// (provider.ActivityKey) without an allocation of its own. It passes on
// the Ctx's cause and watches (docs/ARCHITECTURE.md, "Request contexts").
type attemptCtx struct {
	*reqctx.Ctx
	act *provider.Activity
}

func (c *attemptCtx) Value(key any) any {
	if _, ok := key.(provider.ActivityKey); ok {
		return c.act
	}
	return c.Ctx.Value(key)
}

// Done ends the attempt: a stream's permit is released with its end (a
// non-stream answer's was released at once) and the attempt's context
// ends. A rescued stream's end is its last continuation's (the attempts
// before it ended when they failed).
func (sv *Served) Done(end outcome.Kind) {
	for s := sv; s != nil; s = s.next {
		s.done(end)
	}
}

// done is Done of sv's own attempt; once its permit is released it does
// nothing.
func (sv *Served) done(end outcome.Kind) {
	if sv.permit != nil {
		sv.Resp.Stream.Close()
		sv.end()
		// A breaker that tripped during the stream ignores its outcome
		// (the permit's ticket is from before).
		usage := sv.Resp.Stream.Usage()
		sv.permit.Release(sv.l.now(), upstream.Result{Kind: end, RateLimit: outcome.UnknownRateLimit,
			Usage: usage, Latency: sv.firstContent})
		sv.permit = nil
		sv.span.End(tracing.Outcome{Kind: end.String(), Model: ResponseModel(usage, sv.Target),
			InputTokens: usage.PromptTokens, OutputTokens: usage.CompletionTokens})
	}
}

// ResponseModel is the model that answered on tg (gen_ai.response.model,
// docs/ARCHITECTURE.md, "Tracing"): the one the provider named in its
// answer, else tg's.
func ResponseModel(u outcome.Usage, tg route.Target) string {
	if u.Model != "" {
		return u.Model
	}
	return tg.Model
}

// alarm is a Served as the reqctx.Alarm its host's timer rings: fire.
type alarm Served

func (a *alarm) Ring() { (*Served)(a).fire() }

// alarm is sv's reqctx.Alarm.
func (sv *Served) alarm() *alarm { return (*alarm)(sv) }

// lend has the attempt's alarm ring at t: its host's timer
// (docs/ARCHITECTURE.md, "Request contexts").
func (sv *Served) lend(t time.Time) { sv.host.Lend(sv.alarm(), t) }

// fire is the attempt's alarm: it ends the attempt with the cause it
// watches for, or, watching for a stall, only once the provider's body
// has been silent for idle (or the attempt timeout has come), else looks
// again. A look costs the stream nothing per read: it compares the
// Activity's read count with the one it saw last.
func (sv *Served) fire() {
	cause := sv.cause.Load()
	if cause != errStreamIdle {
		sv.rc.Cancel(cause)
		return
	}
	now := time.Now()
	left := sv.until.Sub(now)
	if left <= 0 {
		sv.rc.Cancel(errAttemptTimeout)
		return
	}
	if n := sv.act.Reads(); n != sv.reads {
		sv.reads, sv.quiet = n, now
	}
	quiet := now.Sub(sv.quiet)
	if quiet >= sv.idle {
		sv.rc.Cancel(errStreamIdle)
		return
	}
	if sv.rc.Err() == nil {
		sv.lend(now.Add(min(sv.look, sv.idle-quiet, left)))
	}
}

// stallLook is how often at most a stream's stall watch looks: a stall
// is noticed within routing.stream.idle_timeout plus this (or plus half
// the timeout, when that is shorter).
const stallLook = time.Second

// Stalled reports whether the attempt ended as a stall
// (routing.stream.idle_timeout).
func (sv *Served) Stalled() bool { return sv.rc.Cause() == errStreamIdle }

// end gives the attempt's alarm back and ends its context.
func (sv *Served) end() {
	sv.host.Return(sv.alarm())
	sv.rc.Cancel(nil)
}

// attempt sends req to one target under permit. On success it returns the
// answer to write; otherwise the classified failure, with the permit
// released.
func (l *Loop) attempt(ctx context.Context, r *Run, up *Provider, tg route.Target, req *provider.Request, permit *upstream.Permit) (*Served, *outcome.Error) {
	sv := l.begin(ctx, r, up, tg, req, permit, false)
	resp, err := sv.send()
	r.Upstream += time.Since(sv.t0)
	return l.finish(ctx, r, sv, resp, err)
}

// begin starts an attempt (a hedge's twin when hedge): it counts it and
// gives it its context, alarm and span. send sends it; finish (or, for the
// loser of a hedge, abandon) ends it.
func (l *Loop) begin(ctx context.Context, r *Run, up *Provider, tg route.Target, req *provider.Request, permit *upstream.Permit, hedge bool) *Served {
	r.Attempts++
	outCap := tg.MaxOutputTokens
	if outCap > 0 && r.MaxTokens > 0 && r.MaxTokens <= outCap {
		// The request's own limit fits the target's: nothing to lower,
		// so no pass over its body (a known model is always capped:
		// docs/ARCHITECTURE.md, "Output limits").
		outCap = 0
	}
	req.Model, req.MaxOutputTokens = tg.Model, outCap
	// One context and one alarm bound the attempt: first the first-token
	// deadline (streams), then the attempt timeout. The alarm's cause
	// says which one rang. It rides the request's timer (the request's
	// context lends it: one timer a request, docs/ARCHITECTURE.md,
	// "Request contexts"); a hedge's twin, whose first leg holds that,
	// or an attempt of a request without one, has rc's own.
	// Its context is a reqctx.Ctx inside Served, linked to the request's
	// without an allocation (docs/ARCHITECTURE.md, "Request contexts").
	sv := &Served{Provider: up, Target: tg, Req: req, Hedged: hedge, l: l, permit: permit}
	sv.rc.Init(ctx)
	sv.ctx = &sv.rc
	if req.Stream && r.idle > 0 {
		sv.actx = attemptCtx{Ctx: &sv.rc, act: &sv.act}
		sv.ctx = &sv.actx
	}
	// The attempt's span rides its context to the adapter, whose request
	// carries its traceparent (docs/ARCHITECTURE.md, "Tracing").
	sv.ctx, sv.span = r.Trace.Attempt(sv.ctx, tracing.Try{Op: req.Op.String(), Provider: up.Name, Type: up.Config.Type,
		Model: tg.Model, Tier: tg.Tier, N: r.Attempts, Degraded: tg.Tier > r.Model.BestTier, Hedge: hedge})
	if c := tg.MaxOutputTokens; c > 0 && r.MaxTokens > c {
		// Expected once configured (docs/ARCHITECTURE.md, "Output
		// limits"): said at debug, per attempt, not per request.
		l.log.DebugContext(sv.ctx, "output limit lowered", "request_id", r.ID, "attempt", r.Attempts, "provider", up.Name,
			"model", tg.Model, "max_tokens", r.MaxTokens, "max_output_tokens", c)
	}
	sv.cause.Store(errAttemptTimeout)
	limit := up.Config.Timeout
	if ftt := firstTokenTimeout(up, tg); req.Stream && ftt < limit {
		sv.cause.Store(errFirstTokenTimeout)
		limit = ftt
	}
	sv.t0 = time.Now()
	at := sv.t0.Add(limit)
	if sv.host = reqctx.Of(ctx); sv.host == nil || !sv.host.Lend(sv.alarm(), at) {
		sv.host = &sv.rc
		sv.lend(at)
	}
	return sv
}

// firstTokenTimeout is how long an attempt on tg waits for a stream's
// first content: the target's first_token_timeout, else its provider's.
func firstTokenTimeout(up *Provider, tg route.Target) time.Duration {
	if tg.FirstTokenTimeout > 0 {
		return tg.FirstTokenTimeout
	}
	return up.Config.FirstTokenTimeout
}

// send calls the adapter and, for a stream, reads it up to its first
// content (the preamble). It touches nothing but sv, so a hedge's two
// attempts may send at once.
func (sv *Served) send() (*provider.Response, error) {
	resp, err := sv.Provider.Adapter.Do(sv.ctx, sv.Req)
	if err == nil && resp.Stream != nil {
		// The headers came before the stream: their budget applies now,
		// not when the stream ends.
		sv.permit.Observe(sv.l.now(), resp.RateLimit)
		sv.Held, err = relay.Preamble(resp.Stream)
		if err != nil {
			resp.Stream.Close()
		} else {
			sv.span.FirstToken(time.Since(sv.t0))
		}
	}
	return resp, err
}

// finish ends what send returned: a failure is classified, recorded and
// its permit released; a non-stream answer's permit is released at once,
// a stream's is kept until Done.
func (l *Loop) finish(ctx context.Context, r *Run, sv *Served, resp *provider.Response, err error) (*Served, *outcome.Error) {
	up, permit, t0 := sv.Provider, sv.permit, sv.t0
	if err != nil {
		sv.end()
		sv.permit = nil
		oe := classify(ctx, up, err)
		if oe.Kind == outcome.ClientError && oe.Suspect != outcome.OK {
			oe = l.confirm(ctx, r, up, sv.Target, sv.Req.Op, oe)
		}
		permit.Release(l.now(), upstream.Result{Kind: oe.Kind, RetryAfter: oe.RetryAfter, RateLimit: oe.RateLimit, Latency: time.Since(t0)})
		sv.span.End(tracing.Outcome{Kind: oe.Kind.String(), Status: oe.Status, Message: oe.Message})
		l.log.DebugContext(sv.ctx, "attempt failed", "request_id", r.ID, "attempt", r.Attempts, "provider", up.Name,
			"status", oe.Status, "kind", oe.Kind.String(), "error", oe.Message)
		r.Failures = append(r.Failures, Failure{Provider: up.Name, Err: oe})
		return nil, oe
	}
	sv.Resp = resp
	if resp.Stream == nil {
		sv.end()
		sv.permit = nil
		permit.Release(l.now(), upstream.Result{Kind: outcome.OK, RateLimit: resp.RateLimit, Usage: resp.Usage, Latency: time.Since(t0)})
		sv.span.End(tracing.Outcome{Model: ResponseModel(resp.Usage, sv.Target), InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens})
		return sv, nil
	}
	if sv.host.Disarm(sv.alarm()) {
		// First content arrived: the rest of the attempt timeout applies,
		// and a gap of routing.stream.idle_timeout is a stall (when the
		// adapter's body is read through act: an adapter that sends no
		// HTTP request, the simulated one, is not watched).
		left := max(up.Config.Timeout-time.Since(t0), 0)
		if r.idle > 0 && r.idle < left && sv.act.Watching() {
			now := time.Now()
			sv.idle, sv.look, sv.until = r.idle, min(r.idle/2, stallLook), now.Add(left)
			sv.quiet, sv.reads = now, sv.act.Reads()
			sv.cause.Store(errStreamIdle)
			sv.lend(now.Add(sv.look))
		} else {
			sv.cause.Store(errAttemptTimeout)
			sv.lend(time.Now().Add(left))
		}
	}
	sv.firstContent = time.Since(t0)
	return sv, nil
}

// abandon ends the attempt that lost a hedge race (docs/ARCHITECTURE.md,
// "Hedging"), cancelled and returned: its stream, if it has one, is
// closed and its permit released as canceled, which no breaker, score or
// throttle counts; the tokens it was charged are given back (but those an
// answer that came all the same reported).
func (l *Loop) abandon(sv *Served, resp *provider.Response, err error) {
	var usage outcome.Usage
	if err == nil {
		if resp.Stream != nil {
			resp.Stream.Close()
		} else {
			usage = resp.Usage
		}
	}
	sv.end()
	sv.permit.Release(l.now(), upstream.Result{Kind: outcome.Canceled, Usage: usage, Latency: time.Since(sv.t0)})
	sv.permit = nil
	sv.span.End(tracing.Outcome{Kind: outcome.Canceled.String(), Message: "lost the hedge race"})
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
