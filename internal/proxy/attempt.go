package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/sse"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// Causes the proxy gives when it ends an attempt itself; adapters turn them
// into outcome.Timeout through context.Cause.
var (
	errAttemptTimeout    = &outcome.Error{Kind: outcome.Timeout, Message: "attempt timed out (provider timeout)"}
	errFirstTokenTimeout = &outcome.Error{Kind: outcome.Timeout, Message: "no first token within first_token_timeout"}
)

const (
	// maxHeld bounds the role-only preamble chunks held back before the
	// commit point; past it the stream commits anyway.
	maxHeld = 16
)

// failure is one failed attempt, for the 502 message and the logs.
type failure struct {
	provider string
	status   int
	kind     outcome.Kind
	err      *outcome.Error
}

// exchange is one client request's progress through its attempts.
type exchange struct {
	start    time.Time
	id       string
	op       provider.Op
	model    *route.Model
	attempts int
	upstream time.Duration // time spent waiting on providers
	failures []failure
	status   int // what the client got; 0 until answered
	served   string
	// supported is false when no target of the model serves the op.
	supported bool
	// cands are the targets that serve the op, with their progress.
	cands []candidate
	// lastTier is the tier of the latest attempt, for fallbacks_total.
	lastTier int
	// waited is the time the latest pause took (backoff, refill, free
	// slot), for the retry log line; 0 when the retry was immediate.
	waited time.Duration
	// overhead is the router's own time up to the commit point; ttft the
	// time to the first byte of a stream; committed once either is set.
	overhead, ttft time.Duration
	committed      bool
	// writeTimeout bounds each write to the client (limits).
	writeTimeout time.Duration
}

// serveOp handles one OpenAI operation end to end. Every path out of it
// writes exactly one answer, except when the client is already gone.
func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, op provider.Op) {
	st := s.st.Load()
	ex := &exchange{start: time.Now(), id: s.requestID(r), op: op, writeTimeout: st.limits.ClientWriteTimeout}
	setHeader(w.Header(), hdrRequestID, ex.id)
	defer s.logRequest(r, ex)
	if !s.checkAuth(w, r, st) {
		ex.status = http.StatusUnauthorized
		return
	}
	body, aerr := s.readBody(w, r, st.limits)
	if aerr != nil {
		ex.status = aerr.status
		aerr.write(w)
		return
	}
	defer s.freeBody(body)
	f, aerr := parseFields(op, body.b)
	if aerr != nil {
		ex.status = aerr.status
		aerr.write(w)
		return
	}
	ex.model = st.models.Lookup(f.model)
	if ex.model == nil {
		ex.status = http.StatusNotFound
		writeError(w, ex.status, "invalid_request_error", "model_not_found", "model",
			"the model "+quote(f.model)+" does not exist", 0)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), st.limits.RequestTimeout)
	defer cancel()
	if done, release := s.shed(ctx, w, r, ex, st); done {
		return
	} else if release != nil {
		defer release()
	}
	req := &provider.Request{
		Op: op, Body: body.b, ModelStart: f.modelStart, ModelEnd: f.modelEnd,
		Stream: f.stream, IncludeUsage: f.includeUsage,
	}
	tokens := ratelimit.EstimateTokens(req.Body, f.maxTokens)
	if s.walk(ctx, w, ex, st, req, tokens) {
		return
	}
	if r.Context().Err() != nil {
		return // the client went away: nobody to answer
	}
	s.writeUnserved(w, ex, ctx, f.model)
}

// candidate is one target's progress within a request.
type candidate struct {
	tg       route.Target
	up       *prov
	tries    int
	out      bool              // never again for this request
	notUntil time.Time         // backoff: not before then
	refusal  *upstream.Refusal // the provider's last refusal, if any
}

// walk runs the attempt loop (DESIGN §5.2): targets in rank order; a
// failed attempt moves to the next candidate at once; when every candidate
// has been tried or refused, retryable ones are tried again after their
// backoff, while attempts remain and the deadline allows. The last attempt
// is kept for the model's last tier (the local fallback) when that tier has
// not been tried yet. It reports true when the request has been answered.
func (s *Server) walk(ctx context.Context, w http.ResponseWriter, ex *exchange, st *state, req *provider.Request, tokens int64) bool {
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
				return false
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
			done, kind, retryAfter := s.attempt(ctx, w, ex, c.up, c.tg, req, permit)
			if done {
				return true
			}
			now = s.now()
			switch {
			case !kind.Retryable(), kind == outcome.Unknown && c.tries >= 2:
				c.out = true // auth, quota: another provider may serve; unknown: retried once
			default:
				wait := st.retry.Delay(c.tries, rand.Float64())
				wait = max(wait, retryAfter)
				c.notUntil = now.Add(wait)
				if wait > time.Until(deadline) {
					c.out = true // a wait longer than what is left skips the provider
				} else {
					soonest = earliest(soonest, c.notUntil)
				}
			}
		}
		if ex.attempts >= maxAttempts {
			return false
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
			return false
		}
		if !anyFull {
			freed = nil
		}
		if !s.pause(ctx, ex, soonest, freed) {
			return false
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

// attempt sends req to one target under permit and releases the permit with
// the result. done reports that the request has been answered (or the
// client is gone) and the loop must stop; otherwise kind and retryAfter
// describe the failure.
func (s *Server) attempt(ctx context.Context, w http.ResponseWriter, ex *exchange, up *prov, tg route.Target, req *provider.Request, permit *upstream.Permit) (done bool, kind outcome.Kind, retryAfter time.Duration) {
	ex.attempts++
	req.Model = tg.Model
	// One context and one timer bound the attempt: first the first-token
	// deadline (streams), then the attempt timeout. The timer's cause
	// says which one fired.
	actx, cancelAttempt := context.WithCancelCause(ctx)
	defer cancelAttempt(nil)
	var cause atomic.Pointer[outcome.Error]
	cause.Store(errAttemptTimeout)
	limit := up.Config.Timeout
	if req.Stream && up.Config.FirstTokenTimeout < limit {
		cause.Store(errFirstTokenTimeout)
		limit = up.Config.FirstTokenTimeout
	}
	timer := time.AfterFunc(limit, func() { cancelAttempt(cause.Load()) })
	defer timer.Stop()
	t0 := time.Now()
	resp, err := up.Adapter.Do(actx, req)
	var held [][]byte
	if err == nil && resp.Stream != nil {
		// The headers came before the stream: their budget applies now,
		// not when the stream ends.
		permit.Observe(s.now(), resp.RateLimit)
		held, err = preamble(req.Op, resp.Stream)
		if err != nil {
			resp.Stream.Close()
		}
	}
	ex.upstream += time.Since(t0)
	if err != nil {
		oe := s.classify(ctx, up, err)
		permit.Release(s.now(), upstream.Result{Kind: oe.Kind, RetryAfter: oe.RetryAfter, Latency: time.Since(t0)})
		return s.attemptFailed(w, ex, up, oe), oe.Kind, oe.RetryAfter
	}
	if req.Stream && cause.Load() == errFirstTokenTimeout {
		// First content arrived: the rest of the attempt timeout applies.
		if timer.Stop() {
			cause.Store(errAttemptTimeout)
			timer.Reset(max(up.Config.Timeout-time.Since(t0), 0))
		}
	}
	ex.served = up.Name
	s.setServedHeaders(w, ex, up, tg)
	if resp.Stream == nil {
		permit.Release(s.now(), upstream.Result{Kind: outcome.OK, RateLimit: resp.RateLimit, Usage: resp.Usage, Latency: time.Since(t0)})
		h := w.Header()
		h[hdrCType] = valJSON
		setHeader(h, hdrCLength, strconv.Itoa(len(resp.Body)))
		ex.status = http.StatusOK
		// Flushed here, under the deadline, so the server's own flush
		// after the handler has nothing left to block on; the deadline is
		// then cleared so that it does not outlive this request on a
		// kept-alive connection.
		rc := http.NewResponseController(w)
		_ = rc.SetWriteDeadline(time.Now().Add(ex.writeTimeout))
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(resp.Body)
		if err == nil {
			err = rc.Flush()
		}
		s.writeFailed(ex, up, err)
		_ = rc.SetWriteDeadline(time.Time{})
		return true, outcome.OK, 0
	}
	defer resp.Stream.Close()
	firstContent := time.Since(t0)
	end := s.relay(w, ex, up, resp.Stream, held)
	// The stream's outcome is known only now; a breaker that tripped
	// meanwhile ignores it (the permit's ticket is from before).
	permit.Release(s.now(), upstream.Result{Kind: end, RateLimit: outcome.UnknownRateLimit, Usage: resp.Stream.Usage(), Latency: firstContent})
	return true, end, 0
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

// attemptFailed records a failed attempt and decides whether the request is
// over: a client error is passed through, a canceled client ends it.
func (s *Server) attemptFailed(w http.ResponseWriter, ex *exchange, up *prov, oe *outcome.Error) bool {
	s.log.Debug("attempt failed", "request_id", ex.id, "attempt", ex.attempts, "provider", up.Name,
		"status", oe.Status, "kind", oe.Kind.String(), "error", oe.Message)
	ex.failures = append(ex.failures, failure{provider: up.Name, status: oe.Status, kind: oe.Kind, err: oe})
	switch oe.Kind {
	case outcome.Canceled:
		return true
	case outcome.ClientError:
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
		ex.status = status
		w.Header().Set("X-LLMRouter-Provider", up.Name)
		w.Header().Set("X-LLMRouter-Attempts", strconv.Itoa(ex.attempts))
		writeError(w, status, typ, oe.Code, oe.Param, msg, 0)
		return true
	}
	return false
}

// writeUnserved answers a request that no attempt served: 504 at the
// deadline; 503 when every candidate's breaker is open (Retry-After: the
// earliest reopening); 429 when the candidates are at their limits; 429
// when every attempt was rate limited; else 502 listing the attempts.
func (s *Server) writeUnserved(w http.ResponseWriter, ex *exchange, ctx context.Context, model string) {
	w.Header().Set("X-LLMRouter-Attempts", strconv.Itoa(ex.attempts))
	switch {
	case !ex.supported:
		ex.status = http.StatusBadRequest
		writeError(w, ex.status, "invalid_request_error", "unsupported_operation", "model",
			"the model "+quote(model)+" has no provider that serves "+ex.op.String(), 0)
		return
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		ex.status = http.StatusGatewayTimeout
		writeError(w, ex.status, "server_error", "timeout", "",
			"the request did not complete within limits.request_timeout; "+ex.failureList(), 0)
		return
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
	if ex.attempts == 0 {
		s.writeRefused(w, ex)
		return
	}
	if allRateLimited {
		if wait == time.Duration(math.MaxInt64) {
			wait = time.Second
		}
		ex.status = http.StatusTooManyRequests
		writeError(w, ex.status, "rate_limit_error", "rate_limit_exceeded", "",
			"every provider for this model is rate limited; "+ex.failureList(), wait)
		return
	}
	ex.status = http.StatusBadGateway
	writeError(w, ex.status, "server_error", "upstream_error", "", "every attempt failed; "+ex.failureList(), 0)
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

func (s *Server) setServedHeaders(w http.ResponseWriter, ex *exchange, up *prov, tg route.Target) {
	h := w.Header()
	// One backing array for the per-response values.
	vals := make([]string, 5)
	vals[0], vals[1], vals[2], vals[3] = up.Name, tg.Model, strconv.Itoa(tg.Tier), strconv.Itoa(ex.attempts)
	h[hdrProvider], h[hdrModel], h[hdrTier], h[hdrAttempts] = vals[0:1:1], vals[1:2:2], vals[2:3:3], vals[3:4:4]
	if tg.Tier > ex.model.BestTier {
		h[hdrDegraded] = valTrue
	}
	overhead := time.Since(ex.start) - ex.upstream
	ex.overhead, ex.committed = overhead, true
	vals[4] = strconv.FormatFloat(float64(overhead.Microseconds())/1000, 'f', 3, 64)
	h[hdrOverhead] = vals[4:5:5]
}

// preamble reads a stream up to its first chunk with content and returns
// the chunks read (copies), so nothing is written before the provider has
// shown it can answer. A stream that ends cleanly before any content
// returns what it had.
func preamble(op provider.Op, st provider.Stream) ([][]byte, error) {
	var held [][]byte
	for {
		p, err := st.Next()
		if err == io.EOF {
			return held, nil
		}
		if err != nil {
			return nil, err
		}
		held = append(held, append([]byte(nil), p...))
		if len(held) >= maxHeld || hasContent(p) {
			return held, nil
		}
	}
}

// hasContent reports whether a chunk carries anything beyond the role-only
// opening delta: text, a tool call, a finish reason, usage, or a shape we
// do not know (which we must not hold back).
func hasContent(p []byte) bool {
	ch := gjson.GetBytes(p, "choices")
	if !ch.IsArray() {
		return true
	}
	content, n := false, 0
	ch.ForEach(func(_, c gjson.Result) bool {
		n++
		if fr := c.Get("finish_reason"); fr.Exists() && fr.Type != gjson.Null {
			content = true
			return false
		}
		if t := c.Get("text"); t.Type == gjson.String && t.Str != "" {
			content = true
			return false
		}
		c.Get("delta").ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "role":
			case "content", "refusal", "reasoning_content":
				if v.Type != gjson.Null && v.Str != "" {
					content = true
				}
			default:
				if v.Type != gjson.Null {
					content = true
				}
			}
			return !content
		})
		return !content
	})
	return content || n == 0
}

// relay commits the stream: headers, the held chunks, then every chunk as
// it arrives, flushed event by event. A failure after the commit ends the
// stream with one error event and no [DONE].
func (s *Server) relay(w http.ResponseWriter, ex *exchange, up *prov, st provider.Stream, held [][]byte) outcome.Kind {
	h := w.Header()
	h[hdrCType] = valEventStream
	h["Cache-Control"] = valNoCache
	h["X-Accel-Buffering"] = valNo
	ex.status = http.StatusOK
	w.WriteHeader(http.StatusOK)
	ex.ttft = time.Since(ex.start)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	var deadline time.Time
	// renew is how close to its deadline a write renews it: at most about
	// once a second (setting it is not free), and a client that stops
	// reading is still cut within limits.client_write_timeout.
	renew := ex.writeTimeout - min(time.Second, ex.writeTimeout/2)
	// write sends b, flushing when flush is set; false means the client
	// is gone or stopped reading (then the stream is over: the attempt
	// returns, which cancels the provider call and frees its slot).
	write := func(b []byte, flush bool) bool {
		if now := time.Now(); deadline.Sub(now) < renew {
			deadline = now.Add(ex.writeTimeout)
			_ = rc.SetWriteDeadline(deadline)
		}
		_, err := w.Write(b)
		if err == nil && flush {
			err = rc.Flush()
		}
		if err != nil {
			s.writeFailed(ex, up, err)
			return false
		}
		return true
	}
	// A stream that can tell whether its next event is already buffered
	// lets events that arrived together leave in one flush (one syscall)
	// instead of one each; an event with nothing behind it is flushed at
	// once, so no token waits.
	pending, _ := st.(interface{ Pending() bool })
	// The deadline must not outlive this request on a kept-alive
	// connection (the next request's answer may come much later).
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	for _, p := range held {
		buf = sse.AppendData(buf, p)
	}
	if len(buf) > 0 && !write(buf, true) {
		return outcome.Canceled
	}
	for {
		p, err := st.Next()
		if err == io.EOF {
			write(sse.Done, true)
			return outcome.OK
		}
		if err != nil {
			kind := outcome.KindOf(err)
			if kind == outcome.Canceled {
				return kind // the client left; nobody to tell
			}
			s.streamWarn.Do(func() {
				s.log.Warn("stream failed after commit (thinned: one of several)", "request_id", ex.id, "provider", up.Name,
					"kind", kind.String(), "error", up.up.Redact(err.Error()))
			})
			buf = append(buf[:0], "data: "...)
			buf = appendErrorJSON(buf, "server_error", "upstream_error", "",
				"the provider's stream failed after it started ("+kind.String()+"); the answer is incomplete")
			buf = append(buf, "\n\n"...)
			write(buf, true)
			return kind
		}
		buf = sse.AppendData(buf[:0], p)
		if !write(buf, pending == nil || !pending.Pending()) {
			return outcome.Canceled
		}
	}
}

// writeFailed records a failed write to the client: a client that stopped
// reading for limits.client_write_timeout is logged and counted; one that
// went away is not news.
func (s *Server) writeFailed(ex *exchange, up *prov, err error) {
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	s.m.writeTimeouts.Inc()
	s.log.Warn("client stopped reading; response cut and provider call cancelled", "request_id", ex.id,
		"provider", up.Name, "client_write_timeout", ex.writeTimeout.String())
}

func (s *Server) logRequest(r *http.Request, ex *exchange) {
	model := ""
	if ex.model != nil {
		model = ex.model.Name
	}
	elapsed := time.Since(ex.start)
	s.m.requests.WithLabelValues(model, strconv.Itoa(ex.status)).Inc()
	if ex.model != nil {
		s.m.duration.WithLabelValues(model).Observe(elapsed.Seconds())
		if ex.ttft > 0 {
			s.m.ttft.WithLabelValues(model).Observe(ex.ttft.Seconds())
		}
		if ex.status == http.StatusOK && ex.lastTier > ex.model.BestTier {
			s.m.degraded.WithLabelValues(model).Inc()
		}
	}
	overhead := ex.overhead
	if !ex.committed {
		overhead = elapsed - ex.upstream
	}
	s.m.overhead.Observe(overhead.Seconds())
	if !s.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	var attrs [10]slog.Attr
	a := append(attrs[:0],
		slog.String("request_id", ex.id), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("model", model), slog.Int("status", ex.status), slog.String("provider", ex.served),
		slog.Int("attempts", ex.attempts), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000))
	if len(ex.failures) > 0 {
		var b strings.Builder
		for i, f := range ex.failures {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.provider)
			b.WriteByte(':')
			b.WriteString(f.kind.String())
		}
		a = append(a, slog.String("failures", b.String()))
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "request", a...)
}

// writeRefused answers a request that no provider admitted: 429 when
// some are at their limits or full (Retry-After: the soonest refill), 413
// when it is larger than every provider's token budget, else 503 with
// Retry-After at the earliest breaker reopening.
func (s *Server) writeRefused(w http.ResponseWriter, ex *exchange) {
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
		ex.status = http.StatusTooManyRequests
		writeError(w, ex.status, "rate_limit_error", "rate_limit_exceeded", "",
			"the providers for this model are failing most requests; the router is throttling locally, retry later", time.Second)
	case limited || full:
		if !limited {
			wait = time.Second
		}
		ex.status = http.StatusTooManyRequests
		writeError(w, ex.status, "rate_limit_error", "rate_limit_exceeded", "",
			"every provider for this model is at its rate or concurrency limit; retry later", max(wait, time.Second))
	case tooLarge && !open:
		ex.status = http.StatusRequestEntityTooLarge
		writeError(w, ex.status, "invalid_request_error", "request_too_large", "",
			"the request's estimated tokens exceed every provider's per-minute token budget", 0)
	default:
		if !open || reopen <= 0 {
			reopen = time.Second
		}
		ex.status = http.StatusServiceUnavailable
		writeError(w, ex.status, "server_error", "service_unavailable", "",
			"every provider for this model is unavailable (circuit open); retry later", max(reopen, time.Second))
	}
}
