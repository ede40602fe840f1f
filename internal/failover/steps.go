package failover

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// The steps of Walk (docs/ARCHITECTURE.md, "Retries and failover"):
// plan, admit, attempt (attempt.go), decide and pause.

// candidate is one target's progress within a request.
type candidate struct {
	i int // the target's index in the model's targets
	// tg is the model's target i, which is immutable: a pointer keeps a
	// request's candidates small (one is allocated per target).
	tg       *route.Target
	p        *Provider
	req      *provider.Request // what this target is sent: the request or its Alt
	tries    int
	notUntil time.Time         // backoff: not before then
	refusal  *upstream.Refusal // the provider's last refusal, if any
	out      bool              // never again for this request
	// held: its tier waits for its retry (routing.retry.tier_wait): no
	// candidate of a lower tier after it is tried before it is.
	held bool
}

// plan ranks the model's targets at now (docs/ARCHITECTURE.md,
// "Selection") and makes the request's candidates of those that serve its
// op (or its Alt's) and are not disabled, in rank order; the target that
// served the request's conversation last goes first when affinity keeps
// it there ("Affinity").
func (l *Loop) plan(r *Run, p *Policy, providers func(name string) *Provider, req *provider.Request, now time.Time) {
	m := r.Model
	var (
		orderBuf  [16]int
		healthBuf [16]route.Health
	)
	hs := healthBuf[:]
	if len(m.Targets) > len(healthBuf) {
		hs = make([]route.Health, len(m.Targets))
	}
	hs = hs[:len(m.Targets)]
	for i := range hs {
		name := m.Targets[i].Provider
		hs[i] = providers(name).Up.Health(now)
		hs[i].DomainDown = p.DomainDown != nil && p.DomainDown(name)
	}
	order := p.Weights.Rank(m, hs, func() float64 { return 1 - l.rnd() }, orderBuf[:0])
	cands := r.candBuf[:0]
	if len(order) > len(r.candBuf) {
		cands = make([]candidate, 0, len(order))
	}
	for _, i := range order {
		tg := &m.Targets[i]
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
		cands = append(cands, candidate{i: i, tg: tg, p: pr, req: treq})
	}
	r.cands = l.fit(r, cands)
	// Affinity chooses among targets ranking would let share the load: a
	// model with one target has nothing to choose.
	if !p.Affinity.Enabled || r.Affinity.Key == 0 || len(m.Targets) < 2 {
		return
	}
	r.aff.on = true
	if r.Affinity.First {
		return // a new conversation spreads by score
	}
	last, ok := l.aff.Get(r.Affinity.Key, now, p.Affinity.WithDefaults().TTL)
	if !ok {
		return
	}
	r.aff.had, r.aff.last = true, last
	keep(cands, last, func(c *candidate) bool {
		s := p.Weights.ScoreOf(m, func(i int) route.Health { return hs[i] }, c.i)
		return !s.Floored && s.Weight > 0 && c.p.Up.Admits(now)
	}, func(c *candidate) bool { return !c.p.Up.Failing(now) })
}

// fit returns cands without those whose context window the request's
// prompt estimate alone exceeds (docs/ARCHITECTURE.md, "Context
// windows"), each a refusal of reason "context" in the request's trace and
// nobody's failure; when that would leave none, the one of the largest
// window stays (the first in rank order of equals). Output limits are
// never a reason: a target's max_output_tokens lowers them.
func (l *Loop) fit(r *Run, cands []candidate) []candidate {
	if r.Prompt <= 0 {
		return cands
	}
	largest := -1
	fits := false
	for i := range cands {
		w := cands[i].tg.ContextWindow
		if w <= 0 || r.Prompt <= w {
			fits = true
			break
		}
		if largest < 0 || w > cands[largest].tg.ContextWindow {
			largest = i
		}
	}
	kept := cands[:0]
	for i, c := range cands {
		if w := c.tg.ContextWindow; w > 0 && r.Prompt > w && (fits || i != largest) {
			r.Trace.Refused(c.p.Name, reasonContext, 0)
			l.log.Debug("prompt too long for the target: skipped", "request_id", r.ID, "provider", c.p.Name,
				"model", c.tg.Model, "prompt_estimate", r.Prompt, "context_window", w)
			continue
		}
		kept = append(kept, c)
	}
	return kept
}

// reasonContext is the refusal reason of a target the prompt is too long
// for, in the request's trace.
const reasonContext = "context"

// keep moves the candidate of target last first in its tier, when it is
// healthy and its tier is the best with an available candidate
// (docs/ARCHITECTURE.md, "Affinity"): available says whether a candidate
// could take the request now (above its floors, with capacity left,
// closed, not out of quota); healthy, in addition, that it is not
// failing. Candidates are in rank order: tiers ascending, the
// floored after every tier.
func keep(cands []candidate, last affinity.Target, available, healthy func(*candidate) bool) {
	at := -1
	for i := range cands {
		if cands[i].p.Name == last.Provider && cands[i].tg.Model == last.Model {
			at = i
			break
		}
	}
	if at < 0 || !available(&cands[at]) || !healthy(&cands[at]) {
		return
	}
	first := at
	for first > 0 && cands[first-1].tg.Tier == cands[at].tg.Tier {
		first--
	}
	for i := range first {
		if available(&cands[i]) {
			return // a better tier can serve: affinity never holds a conversation on a fallback tier
		}
	}
	c := cands[at]
	copy(cands[first+1:at+1], cands[first:at])
	cands[first] = c
}

// remember records that c served the request's conversation at now and
// counts what affinity did.
func (l *Loop) remember(r *Run, p *Policy, c *candidate, now time.Time) {
	if !r.aff.on {
		return
	}
	served := affinity.Target{Provider: c.p.Name, Model: c.tg.Model}
	o := affinity.OutcomeMoved
	switch {
	case !r.aff.had:
		o = affinity.OutcomeNew
	case r.aff.last == served:
		o = affinity.OutcomeKept
	}
	l.aff.Count(o)
	r.AffinityOutcome = o.String()
	l.aff.Put(r.Affinity.Key, served, now, p.Affinity.WithDefaults().TTL)
}

// admit returns a permit for candidate c at now, left before the
// request's deadline, or nil when c is not sent now: it is out of the
// request, the last attempt is kept for the fallback tier, it is backing
// off, or its provider refused. A refusal stays on c (the answer's status
// and Retry-After come from the refusals) and what it waits for goes on w;
// c.held says whether its tier still waits for it (decide's hold).
func (l *Loop) admit(r *Run, c *candidate, p *Policy, now time.Time, left time.Duration, tokens int64, w *wake) *upstream.Permit {
	if c.out {
		return nil
	}
	lastTier := r.Model.Targets[len(r.Model.Targets)-1].Tier
	if r.Attempts == p.Retry.MaxAttempts-1 && c.tg.Tier != lastTier && keepForFallback(r.cands, lastTier, r.Model.BestTier) {
		c.held = false // nothing to wait for: its tier cannot have the attempt
		return nil     // keep the last attempt for the fallback tier
	}
	if now.Before(c.notUntil) {
		w.until(c.notUntil)
		return nil
	}
	tokens = r.tokensFor(*c.tg, tokens)
	permit, err := c.p.Up.Acquire(now, tokens)
	if errors.Is(err, upstream.ErrFull) && w.freed == nil {
		w.freed = l.freed()
		permit, err = c.p.Up.Acquire(now, tokens)
	}
	if err == nil {
		c.refusal, c.held = nil, false
		c.tries++
		return permit
	}
	rf := err.(*upstream.Refusal)
	c.refusal = rf
	r.Trace.Refused(c.p.Name, rf.Reason.String(), rf.Wait)
	d := decideRefusal(rf.Reason, rf.Wait, left, r.holdLeft(p, now))
	if c.held = d.hold; d.hold {
		r.startHold(p, now)
	}
	switch d.step {
	case stepDrop:
		c.out = true
	case stepRetry:
		w.until(now.Add(d.wait))
	}
	return nil
}

// tokensFor is the request's token estimate, tokens, as target tg is
// sent the request: with its output limit lowered to tg's
// max_output_tokens when above it (docs/ARCHITECTURE.md, "Output
// limits"), since that is what the provider counts, and a request a
// target caps must not be refused as larger than its whole budget. A
// saturated estimate stays saturated.
func (r *Run) tokensFor(tg route.Target, tokens int64) int64 {
	if c := tg.MaxOutputTokens; c > 0 && r.MaxTokens > c && tokens != math.MaxInt64 {
		return max(tokens-(r.MaxTokens-c), 0) // Tokens includes MaxTokens (proxy.Call)
	}
	return tokens
}

// note records that c is about to be attempted: every retry and failover
// is visible at info (what failed, where the request goes next, how long
// it waited; the request's trace when it has one) and counted.
func (l *Loop) note(ctx context.Context, r *Run, c *candidate) {
	if r.Attempts > 0 {
		prev := r.Failures[len(r.Failures)-1]
		what := "failing over"
		if prev.Provider == c.p.Name {
			what = "retrying"
		}
		l.log.InfoContext(ctx, what, "request_id", r.ID, "attempt", r.Attempts+1, "from", prev.Provider,
			"to", c.p.Name, "kind", prev.Err.Kind.String(), "wait_ms", r.waited.Milliseconds())
		r.waited = 0
		l.m.retries.WithLabelValues(c.p.Name).Inc()
		if r.LastTier != c.tg.Tier {
			l.m.fallback(r.LastTier, c.tg.Tier)
		}
	}
	r.LastTier = c.tg.Tier
}

// step is what the loop does next with a candidate.
type step uint8

const (
	// stepServe: the candidate answered; the walk ends with its answer.
	stepServe step = iota
	// stepReturn: the provider's client error goes back to the client;
	// the walk ends.
	stepReturn
	// stepGone: the client went away; the walk ends.
	stepGone
	// stepDisable: the provider says the target does not exist: it is
	// off for every request until a reload or an enable, and out of this
	// one; the next candidate at once.
	stepDisable
	// stepDrop: the candidate is out of this request; the next candidate
	// at once.
	stepDrop
	// stepOutgrown: the prompt is too long for the candidate's window: it
	// and every candidate of a window no larger are out of this request;
	// the next candidate at once, and when none is left the provider's
	// error goes back.
	stepOutgrown
	// stepRetry: the candidate may be tried again once wait has passed;
	// the next candidate of its tier at once, of a lower tier at once
	// too unless the decision holds the tier.
	stepRetry
	// stepAwaitSlot: the provider is full; the candidate waits for any
	// bulkhead to free a slot when nothing else can start.
	stepAwaitSlot
)

var stepNames = [...]string{stepServe: "serve", stepReturn: "return", stepGone: "gone", stepDisable: "disable",
	stepDrop: "drop", stepOutgrown: "outgrown", stepRetry: "retry", stepAwaitSlot: "await_slot"}

func (s step) String() string { return stepNames[s] }

// decision is decide's answer: the step, and for stepRetry the wait and
// whether the candidate's tier is held for it.
type decision struct {
	step step
	wait time.Duration
	// hold: the failure is a blip worth waiting for rather than degrading
	// (docs/ARCHITECTURE.md, "Retries and failover"): no candidate of a
	// lower tier goes before this one's retry.
	hold bool
}

// decide says what follows an attempt of a candidate that ended in kind,
// after tries attempts of it (this one included): backoff is the retry
// policy's wait before its next try, announced the wait the provider
// named (Retry-After, or the reset of a rate limit's spent budget; 0:
// nothing), left the time before the request's deadline, hold how much
// longer the request may wait for the candidate's tier before it degrades
// (routing.retry.tier_wait less what it held already; 0 when the provider
// no longer admits, its breaker open: docs/ARCHITECTURE.md, "Retries and
// failover"). Moving on to another candidate of the tier is always at
// once; only this candidate's next try waits, and a lower tier waits for
// it when the failure is a blip (a 5xx, an overload, a reset or refused
// connection, a rate limit that said when to come back) whose wait fits
// in hold. decide is pure: the loop applies its answer.
func decide(kind outcome.Kind, tries int, backoff, announced, left, hold time.Duration) decision {
	switch {
	case kind == outcome.OK:
		return decision{step: stepServe}
	case kind == outcome.Canceled:
		return decision{step: stepGone}
	case kind == outcome.ClientError:
		return decision{step: stepReturn}
	case kind == outcome.TargetMissing:
		return decision{step: stepDisable}
	case kind == outcome.ContextExceeded:
		return decision{step: stepOutgrown}
	case !kind.Retryable(), kind == outcome.Unknown && tries >= 2:
		// auth, quota: another provider may serve; unknown: retried once.
		return decision{step: stepDrop}
	}
	wait := max(backoff, announced)
	if wait > left {
		return decision{step: stepDrop} // a wait longer than what is left skips the provider
	}
	return decision{step: stepRetry, wait: wait, hold: hold > 0 && wait <= hold && blip(kind, announced)}
}

// blip reports whether a failure of kind, with the wait the provider
// announced, is one a short wait may cure: an overload, a server error,
// a reset or refused connection, a rate limit that said when to come
// back. A timeout has cost its time already; a bare 429 counts towards
// the breaker.
func blip(kind outcome.Kind, announced time.Duration) bool {
	switch kind {
	case outcome.Overloaded, outcome.ServerError, outcome.Network:
		return true
	case outcome.RateLimited:
		return announced > 0
	}
	return false
}

// announced is the wait oe's provider named: its Retry-After, or for a
// rate limit the reset of a budget it said is spent (0: nothing).
func announced(oe *outcome.Error) time.Duration {
	if oe.RetryAfter > 0 || oe.Kind != outcome.RateLimited {
		return oe.RetryAfter
	}
	rl := oe.RateLimit
	if rl == (outcome.RateLimit{}) {
		return 0 // nothing announced
	}
	var d time.Duration
	if rl.RemainingRequests == 0 {
		d = rl.ResetRequests
	}
	if rl.RemainingTokens == 0 {
		d = max(d, rl.ResetTokens)
	}
	return d
}

// decideRefusal says what follows a provider's refusal of reason, with
// the wait it named, left before the request's deadline and hold before
// the request degrades (decide's).
func decideRefusal(reason upstream.Reason, wait, left, hold time.Duration) decision {
	switch reason {
	case upstream.Full:
		return decision{step: stepAwaitSlot}
	case upstream.Limited:
		if wait > left {
			return decision{step: stepDrop} // it cannot take the request before the deadline
		}
		// A budget that comes back within hold is a blip too.
		return decision{step: stepRetry, wait: wait, hold: hold > 0 && wait <= hold}
	}
	// Breaker open (only a successful probe reopens it: not a wait a
	// request can use), out of quota, too large for its budget, or
	// throttled: not for this request.
	return decision{step: stepDrop}
}

// wake is what a round that could start nothing more waits for.
type wake struct {
	// at is the earliest moment a candidate may be admitted again (a
	// backoff, a bucket refill); zero: none.
	at time.Time
	// freed fires when any bulkhead frees a slot. It is armed at the
	// round's first full provider and that admission is tried once more,
	// so a release between the refusal and the wait is not lost (arming it
	// up front would cost every request an allocation). nil: not armed.
	freed <-chan struct{}
}

// until makes w wake at t at the latest.
func (w *wake) until(t time.Time) {
	if w.at.IsZero() || t.Before(w.at) {
		w.at = t
	}
}

// pause waits, once a round could start nothing more, for what w names:
// the earliest backoff or bucket refill, or, when a remaining candidate
// is full, any bulkhead freeing a slot. false means the walk is over:
// nothing is left to wait for, or ctx ended.
func (l *Loop) pause(ctx context.Context, r *Run, w *wake) bool {
	anyFull, anyLeft := false, false
	for i := range r.cands {
		if !r.cands[i].out {
			anyLeft = true
			if rf := r.cands[i].refusal; rf != nil && rf.Reason == upstream.Full {
				anyFull = true
			}
		}
	}
	if !anyLeft || (w.at.IsZero() && !anyFull) {
		return false
	}
	freed := w.freed
	switch {
	case !anyFull:
		freed = nil
	case freed == nil:
		// A full candidate refused in an earlier round and not asked in
		// this one (the last attempt was kept for the fallback tier, which
		// is out now): ask it again at once, arming the signal then.
		return true
	}
	start := l.now()
	var (
		timer <-chan time.Time
		d     time.Duration // 0: until a slot is freed
	)
	if !w.at.IsZero() {
		if d = w.at.Sub(start); d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
		l.log.DebugContext(ctx, "backing off", "request_id", r.ID, "wait_ms", d.Milliseconds())
	}
	r.Trace.Backoff(d)
	defer func() {
		r.waited = l.now().Sub(start)
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
