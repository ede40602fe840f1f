package failover

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/relay"
)

// rescue is what a served stream needs to be continued after its commit
// point (docs/ARCHITECTURE.md, "Streaming": rescue): the request's walk,
// kept from Walk. Only a stream that some candidate could continue has
// one (Loop.Rescuable); the others pay nothing for it.
type rescue struct {
	ctx    context.Context // the request's
	r      *Run
	pol    Policy // the request's policy (routing.retry.max_attempts, the tier wait)
	tokens int64  // the request's token estimate
	// cur is the attempt whose stream is relayed now: the served one, or
	// the latest continuation.
	cur *Served
}

// Rescue outcomes (stream_rescues_total's outcome label).
const (
	rescueContinued  = "continued"
	rescueRefused    = "refused"
	rescueImpossible = "impossible"
)

var rescueOutcomes = [...]string{rescueContinued, rescueRefused, rescueImpossible}

// prefillRefusals are the targets ("model" per provider) that refused a
// continuation's prefix: never asked again until a reload (which builds
// the Provider afresh).
type prefillRefusals struct {
	mu     sync.Mutex // guards models
	models map[string]bool
}

func (p *prefillRefusals) refused(model string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.models[model]
}

func (p *prefillRefusals) refuse(model string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.models == nil {
		p.models = make(map[string]bool)
	}
	p.models[model] = true
}

var _ relay.Rescuer = (*Served)(nil)

// Rescuable prepares sv, a stream Walk served for r, to be continued
// should it fail after its commit point, and reports whether it may be:
// routing.stream.rescue is on, the stream is chat chunks or a native
// Messages stream, and some candidate's provider sets
// continue_final_message. ctx is the request's (it must outlive the
// stream); p and tokens are what Walk was given.
func (l *Loop) Rescuable(ctx context.Context, r *Run, p *Policy, tokens int64, sv *Served) bool {
	if !p.Stream.Rescue || sv == nil || sv.Resp == nil || sv.Resp.Stream == nil {
		return false
	}
	if op := sv.Req.Op; op != provider.OpChat && op != provider.OpMessages {
		return false
	}
	can := false
	for i := range r.cands {
		if c := &r.cands[i]; c.p.Config.ContinueFinalMessage && c.req == sv.Req {
			can = true
			break
		}
	}
	if can {
		sv.rs = &rescue{ctx: ctx, r: r, pol: *p, tokens: tokens, cur: sv}
	}
	return can
}

// CanRescue reports whether Rescuable prepared sv to be continued.
func (sv *Served) CanRescue() bool { return sv.rs != nil }

// Next is the attempt that continued sv's stream, nil when none did.
func (sv *Served) Next() *Served { return sv.next }

// Rescue continues the stream Rescuable prepared (relay.Rescuer): the
// attempt relayed until now ends with err's kind, as a failure of the
// request; then the candidates that can continue are asked in turn, the
// one that failed first after a cut or reset (not after a stall or an
// error event), then the others in rank order, whatever their tier,
// each one more attempt within routing.retry.max_attempts and the
// deadline. A candidate refusing the prefix (a client error) is not asked
// again until a reload, and the stream ends: a refusal is never relayed
// as the answer. The continuation is the request with prefix as the
// start of the assistant's answer (provider.Request.Continuing), in the
// failed stream's format.
func (sv *Served) Rescue(err error, prefix string) (relay.Continuation, bool) {
	rs := sv.rs
	if rs == nil {
		return relay.Continuation{}, false
	}
	l, r, failed := sv.l, rs.r, rs.cur
	kind := outcome.KindOf(err)
	stalled := failed.Stalled()
	failed.done(kind)
	oe := &outcome.Error{Kind: kind, Message: err.Error(), Err: err}
	if e := (*outcome.Error)(nil); errors.As(err, &e) {
		oe = e
	}
	r.Failures = append(r.Failures, Failure{Provider: failed.Provider.Name, Err: oe})
	model := r.Model.Name
	if failed.Req.Structured() {
		l.m.rescued(model, rescueImpossible)
		return relay.Continuation{}, false
	}
	// The failed target first after a cut or reset, then the others.
	var (
		order [16]*candidate
		cs    = order[:0]
		self  *candidate
	)
	for i := range r.cands {
		c := &r.cands[i]
		if c.p == failed.Provider && c.tg.Model == failed.Target.Model {
			self = c
			continue
		}
		cs = append(cs, c)
	}
	if self != nil && kind == outcome.Network && !stalled {
		cs = append([]*candidate{self}, cs...)
	}
	end := deadlineOn(rs.ctx, l.now())
	var w wake
	for _, c := range cs {
		if !c.p.Config.ContinueFinalMessage || c.req != failed.Req || c.p.prefill.refused(c.tg.Model) {
			continue
		}
		if r.Attempts >= rs.pol.Retry.MaxAttempts || rs.ctx.Err() != nil {
			break
		}
		creq, ok := c.req.Continuing(prefix)
		if !ok {
			break
		}
		now := l.now()
		permit := l.admit(r, c, &rs.pol, now, end.Sub(now), rs.tokens, &w)
		if permit == nil {
			continue
		}
		l.note(rs.ctx, r, c)
		next, oe := l.attempt(rs.ctx, r, c.p, *c.tg, creq, permit)
		if oe == nil {
			failed.next, rs.cur = next, next
			l.m.rescued(model, rescueContinued)
			degraded := c.tg.Tier > r.Model.BestTier
			l.log.InfoContext(rs.ctx, "stream rescued", "request_id", r.ID, "attempt", r.Attempts, "from", failed.Provider.Name,
				"to", c.p.Name, "model", c.tg.Model, "tier", c.tg.Tier, "degraded", degraded, "kind", kind.String(), "prefix_bytes", len(prefix))
			note := "llmrouter: the stream failed (" + kind.String() + ") and was continued by " + c.p.Name + " (" + c.tg.Model +
				", tier " + strconv.Itoa(c.tg.Tier)
			if degraded {
				note += ", degraded"
			}
			return relay.Continuation{Stream: next.Resp.Stream, Held: next.Held, Note: note + ")"}, true
		}
		if oe.Kind == outcome.ClientError {
			// The target does not continue an assistant turn, whatever its
			// provider says.
			c.p.prefill.refuse(c.tg.Model)
			l.m.rescued(model, rescueRefused)
			l.log.WarnContext(rs.ctx, "a target refused to continue a stream: not asked again until a reload",
				"request_id", r.ID, "provider", c.p.Name, "model", c.tg.Model, "status", oe.Status, "error", oe.Message)
			return relay.Continuation{}, false
		}
	}
	l.m.rescued(model, rescueImpossible)
	return relay.Continuation{}, false
}

// StreamUsage is what sv's stream reported, and the streams that
// continued it, summed: a rescued answer costs both attempts.
func (sv *Served) StreamUsage() outcome.Usage {
	u := sv.Resp.Stream.Usage()
	for s := sv.next; s != nil; s = s.next {
		v := s.Resp.Stream.Usage()
		u.PromptTokens += v.PromptTokens
		u.CompletionTokens += v.CompletionTokens
		u.CachedInput += v.CachedInput
		u.CacheWrite += v.CacheWrite
	}
	return u
}
