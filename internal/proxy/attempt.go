package proxy

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/sse"
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
	// streamWriteTimeout bounds one write to a streaming client: a client
	// that stops reading cannot hold the upstream call open for long.
	streamWriteTimeout = 30 * time.Second
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
}

// serveOp handles one OpenAI operation end to end. Every path out of it
// writes exactly one answer, except when the client is already gone.
func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, op provider.Op) {
	st := s.st.Load()
	ex := &exchange{start: time.Now(), id: s.requestID(r), op: op}
	w.Header().Set("X-Request-ID", ex.id)
	defer s.logRequest(r, ex)
	if !s.checkAuth(w, r, st) {
		ex.status = http.StatusUnauthorized
		return
	}
	buf, aerr := readBody(w, r, st.limits.MaxBodyBytes)
	if aerr != nil {
		ex.status = aerr.status
		aerr.write(w)
		return
	}
	defer putBody(buf)
	f, aerr := parseFields(op, buf.Bytes())
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
	req := &provider.Request{
		Op: op, Body: buf.Bytes(), ModelStart: f.modelStart, ModelEnd: f.modelEnd,
		Stream: f.stream, IncludeUsage: f.includeUsage,
	}
	supported := false
	for _, tg := range ex.model.Targets {
		up := st.providers[tg.Provider]
		if !up.Adapter.Supports(op) {
			continue
		}
		supported = true
		if ctx.Err() != nil {
			break
		}
		if s.attempt(ctx, w, ex, up, tg, req) {
			return
		}
	}
	switch {
	case r.Context().Err() != nil:
		// The client went away: nobody to answer.
	case !supported:
		ex.status = http.StatusBadRequest
		writeError(w, ex.status, "invalid_request_error", "unsupported_operation", "model",
			"the model "+quote(f.model)+" has no provider that serves "+op.String(), 0)
	default:
		s.writeAllFailed(w, ex, ctx)
	}
}

// attempt sends req to one target. It reports true when the request has
// been answered (or the client is gone) and the loop must stop.
func (s *Server) attempt(ctx context.Context, w http.ResponseWriter, ex *exchange, up *upstream, tg route.Target, req *provider.Request) bool {
	ex.attempts++
	req.Model = tg.Model
	actx, cancelAttempt := context.WithCancelCause(ctx)
	defer cancelAttempt(nil)
	tctx, cancelTimeout := context.WithTimeoutCause(actx, up.Config.Timeout, errAttemptTimeout)
	defer cancelTimeout()
	var firstToken *time.Timer
	if req.Stream {
		// Bounds the response headers and the first content chunk.
		firstToken = time.AfterFunc(up.Config.FirstTokenTimeout, func() { cancelAttempt(errFirstTokenTimeout) })
		defer firstToken.Stop()
	}
	up.inFlight.Add(1)
	defer up.inFlight.Add(-1)

	t0 := time.Now()
	resp, err := up.Adapter.Do(tctx, req)
	var held [][]byte
	if err == nil && resp.Stream != nil {
		held, err = preamble(req.Op, resp.Stream)
		if err != nil {
			resp.Stream.Close()
		}
	}
	ex.upstream += time.Since(t0)
	if err != nil {
		return s.attemptFailed(ctx, w, ex, up, err)
	}
	if firstToken != nil {
		firstToken.Stop()
	}
	ex.served = up.Name
	s.setServedHeaders(w, ex, up, tg)
	if resp.Stream == nil {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
		ex.status = http.StatusOK
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(resp.Body)
		return true
	}
	defer resp.Stream.Close()
	s.relay(w, ex, up, resp.Stream, held)
	return true
}

// attemptFailed records a failed attempt and decides whether the request is
// over: a client error is passed through, a canceled client ends it.
func (s *Server) attemptFailed(ctx context.Context, w http.ResponseWriter, ex *exchange, up *upstream, err error) bool {
	var oe *outcome.Error
	if !errors.As(err, &oe) {
		oe = &outcome.Error{Kind: outcome.KindOf(err), Message: err.Error(), Err: err}
	}
	if oe.Kind == outcome.Canceled && ctx.Err() == nil {
		// Canceled while the request itself is alive can only be our
		// own doing; treat it as a network failure of the attempt.
		oe = &outcome.Error{Kind: outcome.Network, Message: oe.Message, Err: err}
	}
	if oe.Kind.Counts() {
		up.lastKind.Store(uint32(oe.Kind))
	}
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

// writeAllFailed answers a request none of whose attempts succeeded.
func (s *Server) writeAllFailed(w http.ResponseWriter, ex *exchange, ctx context.Context) {
	w.Header().Set("X-LLMRouter-Attempts", strconv.Itoa(ex.attempts))
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
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

func (s *Server) setServedHeaders(w http.ResponseWriter, ex *exchange, up *upstream, tg route.Target) {
	h := w.Header()
	h.Set("X-LLMRouter-Provider", up.Name)
	h.Set("X-LLMRouter-Model", tg.Model)
	h.Set("X-LLMRouter-Tier", strconv.Itoa(tg.Tier))
	h.Set("X-LLMRouter-Attempts", strconv.Itoa(ex.attempts))
	if tg.Tier > ex.model.BestTier {
		h.Set("X-LLMRouter-Degraded", "true")
	}
	overhead := time.Since(ex.start) - ex.upstream
	h.Set("X-LLMRouter-Overhead-Ms", strconv.FormatFloat(float64(overhead.Microseconds())/1000, 'f', 3, 64))
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
func (s *Server) relay(w http.ResponseWriter, ex *exchange, up *upstream, st provider.Stream, held [][]byte) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	ex.status = http.StatusOK
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for _, p := range held {
		buf = sse.AppendData(buf, p)
	}
	if len(buf) > 0 && !write(buf) {
		return
	}
	for {
		p, err := st.Next()
		if err == io.EOF {
			write(sse.Done)
			return
		}
		if err != nil {
			kind := outcome.KindOf(err)
			if kind == outcome.Canceled {
				return // the client left; nobody to tell
			}
			if kind.Counts() {
				up.lastKind.Store(uint32(kind))
			}
			s.log.Warn("stream failed after commit", "request_id", ex.id, "provider", up.Name,
				"kind", kind.String(), "error", err.Error())
			buf = append(buf[:0], "data: "...)
			buf = appendErrorJSON(buf, "server_error", "upstream_error", "",
				"the provider's stream failed after it started ("+kind.String()+"); the answer is incomplete")
			buf = append(buf, "\n\n"...)
			write(buf)
			return
		}
		buf = sse.AppendData(buf[:0], p)
		if !write(buf) {
			return
		}
	}
}

func (s *Server) logRequest(r *http.Request, ex *exchange) {
	model := ""
	if ex.model != nil {
		model = ex.model.Name
	}
	s.log.Info("request", "request_id", ex.id, "method", r.Method, "path", r.URL.Path, "model", model,
		"status", ex.status, "provider", ex.served, "attempts", ex.attempts,
		"duration_ms", float64(time.Since(ex.start).Microseconds())/1000)
}
