package proxy

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/relay"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// Causes the proxy gives when it ends an attempt itself; adapters turn them
// into outcome.Timeout through context.Cause.
var (
	errAttemptTimeout    = &outcome.Error{Kind: outcome.Timeout, Message: "attempt timed out (provider timeout)"}
	errFirstTokenTimeout = &outcome.Error{Kind: outcome.Timeout, Message: "no first token within first_token_timeout"}
)

// candidate is one target's progress within a request.
type candidate struct {
	tg       route.Target
	up       *prov
	tries    int
	out      bool              // never again for this request
	notUntil time.Time         // backoff: not before then
	refusal  *upstream.Refusal // the provider's last refusal, if any
}

// walk runs the attempt loop (docs/ARCHITECTURE.md, "Retries and
// failover"): targets in rank order; a failed attempt moves to the next
// candidate at once; when every candidate has been tried or refused,
// retryable ones are tried again after their backoff, while attempts remain
// and the deadline allows. The last attempt is kept for the model's last
// tier (the local fallback) when that tier has not been tried yet. It
// returns how the request ends; it writes nothing.
func (s *Server) walk(ctx context.Context, ex *exchange, st *state, req *provider.Request, tokens int64) result {
	m := ex.model
	now := s.now()
	var orderBuf [16]int
	order := st.weights.Rank(m, func(i int) route.Health {
		return st.providers[m.Targets[i].Provider].up.Health(now)
	}, openUnit, orderBuf[:0])
	cands := make([]candidate, 0, len(order))
	lastTier := m.Targets[len(m.Targets)-1].Tier
	for _, i := range order {
		tg := m.Targets[i]
		up := st.providers[tg.Provider]
		if up.Adapter.Supports(req.Op) {
			cands = append(cands, candidate{tg: tg, up: up})
		}
	}
	ex.supported = len(cands) > 0
	ex.cands = cands
	maxAttempts := st.retry.MaxAttempts
	for {
		now := s.now()
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
			if ex.attempts >= maxAttempts || ctx.Err() != nil {
				return s.unserved(ctx, ex)
			}
			if c.out {
				continue
			}
			if ex.attempts == maxAttempts-1 && c.tg.Tier != lastTier && keepForFallback(cands, lastTier, ex.model.BestTier) {
				continue // keep the last attempt for the fallback tier
			}
			if now.Before(c.notUntil) {
				soonest = earliest(soonest, c.notUntil)
				continue
			}
			permit, err := c.up.up.Acquire(now, tokens)
			if errors.Is(err, upstream.ErrFull) && freed == nil {
				freed = s.set.Freed()
				permit, err = c.up.up.Acquire(now, tokens)
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
			if ex.attempts > 0 {
				prev := ex.failures[len(ex.failures)-1]
				s.log.Debug("retrying", "request_id", ex.id, "attempt", ex.attempts+1, "provider", c.up.Name,
					"previous_provider", prev.provider, "previous_kind", prev.kind.String(),
					"backoff_ms", ex.waited.Milliseconds())
				ex.waited = 0
				s.m.retries.WithLabelValues(c.up.Name).Inc()
				if ex.lastTier != c.tg.Tier {
					s.m.fallback(ex.lastTier, c.tg.Tier)
				}
			}
			ex.lastTier = c.tg.Tier
			sv, oe := s.attempt(ctx, ex, c.up, c.tg, req, permit)
			if sv != nil {
				return result{served: sv}
			}
			switch oe.Kind {
			case outcome.Canceled:
				return result{gone: true}
			case outcome.ClientError:
				return result{err: clientError(oe), provider: c.up.Name}
			}
			now = s.now()
			switch {
			case !oe.Kind.Retryable(), oe.Kind == outcome.Unknown && c.tries >= 2:
				c.out = true // auth, quota: another provider may serve; unknown: retried once
			default:
				wait := st.retry.Delay(c.tries, rand.Float64())
				wait = max(wait, oe.RetryAfter)
				c.notUntil = now.Add(wait)
				if wait > time.Until(deadline) {
					c.out = true // a wait longer than what is left skips the provider
				} else {
					soonest = earliest(soonest, c.notUntil)
				}
			}
		}
		if ex.attempts >= maxAttempts {
			return s.unserved(ctx, ex)
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
			return s.unserved(ctx, ex)
		}
		if !anyFull {
			freed = nil
		}
		if !s.pause(ctx, ex, soonest, freed) {
			return s.unserved(ctx, ex)
		}
	}
}

// pause waits until at (when not zero), freed fires (a bulkhead slot was
// released; nil: not waiting for one), or ctx ends; false means ctx ended.
func (s *Server) pause(ctx context.Context, ex *exchange, at time.Time, freed <-chan struct{}) bool {
	var timer <-chan time.Time
	if !at.IsZero() {
		d := at.Sub(s.now())
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
		s.log.Debug("backing off", "request_id", ex.id, "wait_ms", d.Milliseconds())
	}
	start := time.Now()
	defer func() {
		ex.waited = time.Since(start)
		s.m.backoff.Observe(ex.waited.Seconds())
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

// served is a provider's answer, admitted and not yet written: answer
// writes it, then calls done (a stream's outcome is known only then).
type served struct {
	p    *prov
	tg   route.Target
	resp *provider.Response
	// held are a stream's preamble chunks read before the commit point.
	held [][]byte
	// done releases the attempt's permit with the stream's end and ends
	// the attempt's context; nil for a non-stream answer (released at
	// once).
	done func(end outcome.Kind)
}

// attempt sends req to one target under permit. On success it returns the
// answer to write; otherwise the classified failure, with the permit
// released.
func (s *Server) attempt(ctx context.Context, ex *exchange, up *prov, tg route.Target, req *provider.Request, permit *upstream.Permit) (*served, *outcome.Error) {
	ex.attempts++
	req.Model = tg.Model
	// One context and one timer bound the attempt: first the first-token
	// deadline (streams), then the attempt timeout. The timer's cause
	// says which one fired.
	actx, cancelAttempt := context.WithCancelCause(ctx)
	var cause atomic.Pointer[outcome.Error]
	cause.Store(errAttemptTimeout)
	limit := up.Config.Timeout
	if req.Stream && up.Config.FirstTokenTimeout < limit {
		cause.Store(errFirstTokenTimeout)
		limit = up.Config.FirstTokenTimeout
	}
	timer := time.AfterFunc(limit, func() { cancelAttempt(cause.Load()) })
	end := func() {
		timer.Stop()
		cancelAttempt(nil)
	}
	t0 := time.Now()
	resp, err := up.Adapter.Do(actx, req)
	var held [][]byte
	if err == nil && resp.Stream != nil {
		// The headers came before the stream: their budget applies now,
		// not when the stream ends.
		permit.Observe(s.now(), resp.RateLimit)
		held, err = relay.Preamble(resp.Stream)
		if err != nil {
			resp.Stream.Close()
		}
	}
	ex.upstream += time.Since(t0)
	if err != nil {
		end()
		oe := s.classify(ctx, up, err)
		permit.Release(s.now(), upstream.Result{Kind: oe.Kind, RetryAfter: oe.RetryAfter, Latency: time.Since(t0)})
		s.log.Debug("attempt failed", "request_id", ex.id, "attempt", ex.attempts, "provider", up.Name,
			"status", oe.Status, "kind", oe.Kind.String(), "error", oe.Message)
		ex.failures = append(ex.failures, failure{provider: up.Name, status: oe.Status, kind: oe.Kind, err: oe})
		return nil, oe
	}
	sv := &served{p: up, tg: tg, resp: resp, held: held}
	if resp.Stream == nil {
		end()
		permit.Release(s.now(), upstream.Result{Kind: outcome.OK, RateLimit: resp.RateLimit, Usage: resp.Usage, Latency: time.Since(t0)})
		return sv, nil
	}
	if cause.Load() == errFirstTokenTimeout && timer.Stop() {
		// First content arrived: the rest of the attempt timeout applies.
		cause.Store(errAttemptTimeout)
		timer.Reset(max(up.Config.Timeout-time.Since(t0), 0))
	}
	firstContent := time.Since(t0)
	sv.done = func(kind outcome.Kind) {
		resp.Stream.Close()
		end()
		// A breaker that tripped during the stream ignores its outcome
		// (the permit's ticket is from before).
		permit.Release(s.now(), upstream.Result{Kind: kind, RateLimit: outcome.UnknownRateLimit, Usage: resp.Stream.Usage(), Latency: firstContent})
	}
	return sv, nil
}

// classify returns err's *outcome.Error. Canceled while the request itself
// is alive can only be the proxy's own doing: it is a network failure of
// the attempt, not the client leaving.
func (s *Server) classify(ctx context.Context, up *prov, err error) *outcome.Error {
	var oe *outcome.Error
	if !errors.As(err, &oe) {
		oe = &outcome.Error{Kind: outcome.KindOf(err), Message: err.Error(), Err: err}
	}
	if oe.Kind == outcome.Canceled && ctx.Err() == nil {
		oe = &outcome.Error{Kind: outcome.Network, Message: oe.Message, Err: err}
	}
	if red := up.up.Redact(oe.Message); red != oe.Message {
		cp := *oe
		cp.Message = red
		oe = &cp
	}
	return oe
}

// clientError passes a provider's client error (400, 404, 413, 422…)
// through to the client as it is.
func clientError(oe *outcome.Error) *intake.Error {
	status := oe.Status
	if status < 400 || status > 499 {
		status = http.StatusBadRequest
	}
	typ := oe.Type
	if typ == "" || typ == "error" {
		typ = "invalid_request_error"
	}
	msg := oe.Message
	if msg == "" {
		msg = "the provider rejected the request"
	}
	return &intake.Error{Status: status, Type: typ, Code: oe.Code, Param: oe.Param, Message: msg}
}

// unserved is the end of a request no attempt served: nothing when the
// client went away; 400 when no target serves the operation; 504 at the
// deadline; refused (429, 413, 503) when no provider admitted it; 429 when
// every attempt was rate limited; else 502 listing the attempts.
func (s *Server) unserved(ctx context.Context, ex *exchange) result {
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return result{gone: true}
	case !ex.supported:
		return result{err: &intake.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_operation",
			Param: "model", Message: "the model " + intake.Quote(ex.model.Name) + " has no provider that serves " + ex.op.String()}}
	case ctx.Err() != nil:
		return result{err: &intake.Error{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "timeout",
			Message: "the request did not complete within limits.request_timeout; " + ex.failureList()}}
	case ex.attempts == 0:
		return result{err: refused(ex)}
	}
	allRateLimited, wait := len(ex.failures) > 0, time.Duration(math.MaxInt64)
	for _, f := range ex.failures {
		if f.kind != outcome.RateLimited {
			allRateLimited = false
			break
		}
		if f.err.RetryAfter > 0 && f.err.RetryAfter < wait {
			wait = f.err.RetryAfter
		}
	}
	if allRateLimited {
		if wait == time.Duration(math.MaxInt64) {
			wait = time.Second
		}
		return result{err: &intake.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "every provider for this model is rate limited; " + ex.failureList(), RetryAfter: wait}}
	}
	return result{err: &intake.Error{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
		Message: "every attempt failed; " + ex.failureList()}}
}

// refused is the answer to a request no provider admitted: 429 when some
// are at their limits or full (Retry-After: the soonest refill), 413 when
// it is larger than every provider's token budget, else 503 with
// Retry-After at the earliest breaker reopening.
func refused(ex *exchange) *intake.Error {
	var (
		limited, full, throttled, tooLarge, open bool
		wait, reopen                             time.Duration = math.MaxInt64, math.MaxInt64
	)
	for _, c := range ex.cands {
		if c.refusal == nil {
			continue
		}
		switch c.refusal.Reason {
		case upstream.Limited:
			limited, wait = true, min(wait, c.refusal.Wait)
		case upstream.Full:
			full = true
		case upstream.Throttled:
			throttled = true
		case upstream.TooLarge:
			tooLarge = true
		case upstream.Open:
			open, reopen = true, min(reopen, c.refusal.Wait)
		}
	}
	switch {
	case throttled && !limited && !full:
		return &intake.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "the providers for this model are failing most requests; the router is throttling locally, retry later", RetryAfter: time.Second}
	case limited || full:
		if !limited {
			wait = time.Second
		}
		return &intake.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "every provider for this model is at its rate or concurrency limit; retry later", RetryAfter: max(wait, time.Second)}
	case tooLarge && !open:
		return &intake.Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
			Message: "the request's estimated tokens exceed every provider's per-minute token budget"}
	}
	if !open || reopen <= 0 {
		reopen = time.Second
	}
	return &intake.Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
		Message: "every provider for this model is unavailable (circuit open); retry later", RetryAfter: max(reopen, time.Second)}
}

// failureList describes the failed attempts: provider, status and kind each.
func (ex *exchange) failureList() string {
	if len(ex.failures) == 0 {
		return "no attempt was made"
	}
	var b strings.Builder
	b.WriteString("attempts: ")
	for i, f := range ex.failures {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.provider)
		if f.status != 0 {
			b.WriteString(" status ")
			b.WriteString(strconv.Itoa(f.status))
		}
		b.WriteString(" ")
		b.WriteString(f.kind.String())
		if m := f.err.Message; m != "" {
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
