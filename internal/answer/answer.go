package answer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/recent"
	"github.com/llmrouter/llmrouter/internal/relay"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// Result is how a request ends, decided before anything is written:
// Writer.Answer turns it into the request's one answer.
type Result struct {
	// Err is an error answer: a refusal before any attempt, a provider's
	// client error, or nothing served.
	Err *apierror.Error
	// Provider, when set with Err, is the provider whose client error it
	// is (X-LLMRouter-Provider).
	Provider string
	// Served is a provider's answer to relay.
	Served *failover.Served
	// Framer, when set with a served stream, writes it as another API's
	// events (the Responses API's) instead of chat chunks.
	Framer relay.Framer
	// JSON is a 200 answer of the router's own (the models list).
	JSON []byte
	// Gone: the client went away; there is nobody to answer.
	Gone bool
}

// Writer writes answers and records them: the log line and the request
// metrics. One Writer serves every request of a router.
type Writer struct {
	log *slog.Logger
	m   *metrics
	// idPrefix and idSeq make the ids of requests that bring none.
	idPrefix string
	idSeq    atomic.Uint64
	// streamWarn thins the after-commit stream failure warning: under a
	// failing provider at thousands of requests per second, one line per
	// few seconds says enough (the metrics count every one).
	streamWarn rate.Sometimes
	// ring keeps a record of every answered request for the status page
	// (KeepRecent); nil keeps none.
	ring *recent.Ring

	mu     sync.Mutex         // guards apis, models, warned, costs, unpricedSet
	apis   []string           // the api label's values (APIs)
	models []string           // the configured models (Prepare)
	warned map[[2]string]bool // provider and model warned about as unpriced
	costs  map[[2]string]bool // the cost series created (PrepareCosts): model, provider
	// unpricedSet are the targets without a price (PrepareCosts):
	// provider, model.
	unpricedSet map[[2]string]bool
}

// New returns a Writer logging to log (nil discards) and registering the
// request metrics on reg (nil keeps them private).
func New(log *slog.Logger, reg prometheus.Registerer) *Writer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Writer{log: log, m: newMetrics(reg), streamWarn: rate.Sometimes{First: 3, Interval: 5 * time.Second}}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	s.idPrefix = "req_" + hex.EncodeToString(rnd[:])
	return s
}

// KeepRecent makes Log add a record of every answered request to r
// (docs/ARCHITECTURE.md, "Status page"). Call it before serving; nil
// keeps none.
func (s *Writer) KeepRecent(r *recent.Ring) { s.ring = r }

// Answer writes res: the one place an answer to a client is written
// (docs/ARCHITECTURE.md, "Request path"). Its first byte is the commit
// point.
func (s *Writer) Answer(w http.ResponseWriter, ex *Exchange, res Result) {
	switch {
	case res.Gone:
	case res.Err != nil:
		h := w.Header()
		e := res.Err
		if e.EndConn {
			apierror.EndConnection(w)
		}
		if e.Status == http.StatusUnauthorized {
			h["Www-Authenticate"] = valBearerRealm
		}
		if res.Provider != "" {
			setHeader(h, hdrProvider, res.Provider)
		}
		if ex.Attempts > 0 || e.Status >= 500 || e.Status == http.StatusTooManyRequests {
			setHeader(h, hdrAttempts, strconv.Itoa(ex.Attempts))
		}
		if e.RetryAfter > 0 {
			setHeader(h, "Retry-After", strconv.FormatInt(int64(math.Ceil(e.RetryAfter.Seconds())), 10))
		}
		if ex.Attempts > 1 || e.Final {
			// The router retried or failed over already: an SDK that
			// retries on its own would multiply the attempts. Or no retry
			// can win (a spent budget).
			h[hdrShouldRetry] = valFalse
		}
		var b []byte
		switch {
		case e.Raw != nil:
			b = e.Raw
		case ex.Shape != nil:
			b = ex.Shape.AppendError(make([]byte, 0, 160+len(e.Message)), ex, e)
		default:
			b = openaiwire.AppendError(make([]byte, 0, 160+len(e.Message)), openaiwire.Error{Message: e.Message, Type: e.Type, Param: e.Param, Code: e.Code})
		}
		ex.status, ex.errType = e.Status, e.Code
		if ex.errType == "" {
			ex.errType = e.Type
		}
		if e.Raw == nil {
			b = append(b, '\n')
		}
		s.write(w, ex, nil, e.Status, b)
	case res.JSON != nil:
		ex.status = http.StatusOK
		s.write(w, ex, nil, http.StatusOK, res.JSON)
	case res.Served.Resp.Stream == nil:
		sv := res.Served
		ex.served, ex.target, ex.ptype, ex.hedged = sv.Provider.Name, sv.Target, sv.Provider.Config.Type, sv.Hedged
		ex.Usage = sv.Resp.Usage
		s.price(ex, sv)
		s.setServedHeaders(w, ex, sv, true)
		ex.status = http.StatusOK
		s.write(w, ex, sv.Provider, http.StatusOK, sv.Resp.Body)
		sv.Done(outcome.OK)
	default:
		sv := res.Served
		ex.served, ex.target, ex.ptype, ex.hedged = sv.Provider.Name, sv.Target, sv.Provider.Config.Type, sv.Hedged
		s.setServedHeaders(w, ex, sv, false)
		ex.status = http.StatusOK
		end := s.relay(w, ex, sv, res.Framer)
		// The usage a stream reported by its end (the adapters ask for it
		// even when the client did not: "Client keys and spend"), and
		// its continuations' when it was rescued ("Streaming").
		ex.Usage = sv.StreamUsage()
		s.price(ex, sv)
		sv.Done(end)
	}
}

// write sends one whole JSON answer under limits.client_write_timeout. It
// is flushed here, under the deadline, so the server's own flush after the
// handler has nothing left to block on; the deadline is then cleared so
// that it does not outlive this request on a kept-alive connection.
func (s *Writer) write(w http.ResponseWriter, ex *Exchange, p *failover.Provider, status int, body []byte) {
	if fs, ok := w.(fieldSetter); ok {
		fs.SetField(hdrCType, valJSON[0])
	} else {
		w.Header()[hdrCType] = valJSON
	}
	ex.setHeader(w, hdrCLength, slotLength, ex.number(strconv.AppendInt(ex.numbers(), int64(len(body)), 10)))
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(ex.writeTimeout))
	w.WriteHeader(status)
	_, err := w.Write(body)
	if err == nil {
		err = rc.Flush()
	}
	s.writeFailed(ex, p, err)
	_ = rc.SetWriteDeadline(time.Time{})
}

// relay commits sv's stream through the relay package (as chat chunks, or
// through f when not nil), then logs what ended it: a provider failure
// after the commit (thinned), a client that stopped reading.
func (s *Writer) relay(w http.ResponseWriter, ex *Exchange, sv *failover.Served, f relay.Framer) outcome.Kind {
	ex.ttft = time.Since(ex.start)
	var rs relay.Rescuer
	if sv.CanRescue() {
		rs = sv // docs/ARCHITECTURE.md, "Streaming": rescue
	}
	end := relay.Rescued(w, sv.Resp.Stream, sv.Held, ex.writeTimeout, f, rs)
	for c := sv.Next(); c != nil; c = c.Next() {
		if ex.rescued != "" {
			ex.rescued += ","
		}
		ex.rescued += c.Provider.Name + ":tier" + strconv.Itoa(c.Target.Tier)
	}
	if end.Err != nil && end.Kind != outcome.Canceled {
		s.streamWarn.Do(func() {
			s.log.Warn("stream failed after commit (thinned: one of several)", "request_id", ex.ID, "provider", sv.Provider.Name,
				"kind", end.Kind.String(), "error", sv.Provider.Up.Redact(end.Err.Error()))
		})
	}
	s.writeFailed(ex, sv.Provider, end.WriteErr)
	return end.Kind
}

// writeFailed records a failed write to the client: a client that stopped
// reading for limits.client_write_timeout is logged and counted; one that
// went away is not news.
func (s *Writer) writeFailed(ex *Exchange, up *failover.Provider, err error) {
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	s.m.writeTimeouts.Inc()
	name := ""
	if up != nil {
		name = up.Name
	}
	s.log.Warn("client stopped reading; response cut and provider call cancelled", "request_id", ex.ID,
		"provider", name, "client_write_timeout", ex.writeTimeout.String())
}

// price sets what the request sv served cost (docs/ARCHITECTURE.md,
// "Client keys and spend"): ex.Usage at the serving target's price, and
// counts it; a target without a price costs 0, is counted, and its model
// warned about once.
func (s *Writer) price(ex *Exchange, sv *failover.Served) {
	if sv.Next() != nil {
		s.priceRescued(ex, sv)
		return
	}
	p, ok := ex.Prices.Lookup(sv.Provider.Name, sv.Target.Model)
	if !ok {
		ex.Cost = 0
		s.unpriced(sv.Provider.Name, sv.Target.Model)
		return
	}
	ex.Cost = pricing.Round(p.Cost(ex.Usage))
	if ex.Cost > 0 && ex.Model != nil {
		s.m.child(childKey{fam: famCost, model: ex.Model.Name, a: sv.Provider.Name}).counter.Add(ex.Cost)
	}
}

// priceRescued is price of a rescued stream: each attempt's usage at its
// own target's price, summed.
func (s *Writer) priceRescued(ex *Exchange, sv *failover.Served) {
	ex.Cost = 0
	for c := sv; c != nil; c = c.Next() {
		p, ok := ex.Prices.Lookup(c.Provider.Name, c.Target.Model)
		if !ok {
			s.unpriced(c.Provider.Name, c.Target.Model)
			continue
		}
		cost := pricing.Round(p.Cost(c.Resp.Stream.Usage()))
		ex.Cost += cost
		if cost > 0 && ex.Model != nil {
			s.m.child(childKey{fam: famCost, model: ex.Model.Name, a: c.Provider.Name}).counter.Add(cost)
		}
	}
	ex.Cost = pricing.Round(ex.Cost)
}

// unpriced counts a request served by a target without a price, and
// warns the first time for that model.
func (s *Writer) unpriced(provider, model string) {
	s.m.child(childKey{fam: famUnpriced, model: model, a: provider}).counter.Inc()
	k := [2]string{provider, model}
	s.mu.Lock()
	warned := s.warned[k]
	if !warned {
		if s.warned == nil {
			s.warned = make(map[[2]string]bool)
		}
		s.warned[k] = true
	}
	s.mu.Unlock()
	if !warned {
		s.log.Warn("no price for a model: its requests cost 0 until a pricing: entry names it",
			"provider", provider, "model", model)
	}
}

// setServedHeaders sets the served answer's headers; withCost adds
// X-LLMRouter-Cost-USD (a non-stream answer, whose cost is known before
// its first byte).
func (s *Writer) setServedHeaders(w http.ResponseWriter, ex *Exchange, sv *failover.Served, withCost bool) {
	up, tg := sv.Provider, sv.Target
	ex.setHeader(w, hdrProvider, slotProvider, up.Name)
	ex.setHeader(w, hdrModel, slotModel, tg.Model)
	ex.setHeader(w, hdrTier, slotTier, ex.number(strconv.AppendInt(ex.numbers(), int64(tg.Tier), 10)))
	ex.setHeader(w, hdrAttempts, slotAttempts, ex.number(strconv.AppendInt(ex.numbers(), int64(ex.Attempts), 10)))
	if tg.Tier > ex.Model.BestTier {
		w.Header()[hdrDegraded] = valTrue
	}
	if sv.Hedged {
		w.Header()[hdrHedged] = valTrue // docs/ARCHITECTURE.md, "Hedging"
	}
	overhead := time.Since(ex.start) - ex.Upstream
	ex.overhead, ex.committed = overhead, true
	ex.setHeader(w, hdrOverhead, slotOverhead, ex.number(strconv.AppendFloat(ex.numbers(), float64(overhead.Microseconds())/1000, 'f', 3, 64)))
	if withCost {
		ex.setHeader(w, hdrCost, slotCost, ex.number(strconv.AppendFloat(ex.numbers(), ex.Cost, 'f', -1, 64)))
	}
}

// Log records ex once it is answered: its request metrics, its span
// (docs/ARCHITECTURE.md, "Tracing") and, at info level, its log line,
// logged with r's context (which carries the span when tracing is on).
func (s *Writer) Log(r *http.Request, ex *Exchange) {
	model := ""
	if ex.Model != nil {
		model = ex.Model.Name
	}
	elapsed := time.Since(ex.start)
	api := ex.API
	if api == "" {
		api = ex.Op.String()
	}
	s.m.child(childKey{fam: famRequests, model: model, a: api, c: statusLabel(ex.status)}).counter.Inc()
	if ex.Model != nil {
		s.m.child(childKey{fam: famDuration, model: model, a: api}).observer.Observe(elapsed.Seconds())
		if ex.ttft > 0 {
			s.m.child(childKey{fam: famTTFT, model: model, a: api}).observer.Observe(ex.ttft.Seconds())
		}
		if ex.status == http.StatusOK && ex.LastTier > ex.Model.BestTier {
			s.m.child(childKey{fam: famDegraded, model: model, a: api}).counter.Inc()
		}
		// A failed attempt before the answer, not a hedge that was
		// merely sent (docs/ARCHITECTURE.md, "Hedging").
		if ex.status == http.StatusOK && len(ex.Failures) > 0 {
			s.m.child(childKey{fam: famRecovered, model: model, a: api}).counter.Inc()
		}
	}
	overhead := ex.overhead
	if !ex.committed {
		overhead = elapsed - ex.Upstream
	}
	s.m.overhead.Observe(overhead.Seconds())
	if ex.Trace.On() {
		endSpan(ex)
	}
	if s.ring != nil {
		s.keep(ex, api, elapsed)
	}
	if !s.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	var attrs [12]slog.Attr
	a := append(attrs[:0],
		slog.String("request_id", ex.ID), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("model", model), slog.String("requested_model", ex.Requested), slog.String("key", ex.Key.Name()), slog.Int("status", ex.status), slog.String("provider", ex.served),
		slog.Int("attempts", ex.Attempts), slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.Float64("cost_usd", ex.Cost))
	if len(ex.Failures) > 0 {
		var b strings.Builder
		for i, f := range ex.Failures {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f.Provider)
			b.WriteByte(':')
			b.WriteString(f.Err.Kind.String())
		}
		a = append(a, slog.String("failures", b.String()))
	}
	if ex.rescued != "" {
		// The providers that continued the stream after its headers
		// went out (docs/ARCHITECTURE.md, "Streaming"), with their tier.
		a = append(a, slog.String("rescued_by", ex.rescued))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", a...)
}

// keep adds ex's record to the ring: names the request holds anyway, and
// the client's model name and the last failure's message copied into the
// record (recent.Request), never a prompt, an answer or a key's secret.
// It allocates nothing.
func (s *Writer) keep(ex *Exchange, api string, elapsed time.Duration) {
	var q recent.Request
	q.At = ex.start
	q.ID, q.API, q.Key, q.Status = ex.ID, api, ex.Key.Name(), ex.status
	q.SetAsked(ex.Requested)
	if ex.Model != nil {
		q.Model = ex.Model.Name
	}
	for _, f := range ex.Failures {
		q.AddAttempt(f.Provider, f.Err.Kind.String())
	}
	if n := len(ex.Failures); n > 0 {
		q.SetError(ex.Failures[n-1].Err.Message)
	}
	if ex.served != "" {
		q.Provider, q.Target, q.Tier = ex.served, ex.target.Model, ex.target.Tier
		q.AddAttempt(ex.served, "ok")
		q.Degraded = ex.Model != nil && ex.target.Tier > ex.Model.BestTier
		q.Hedged = ex.hedged
		q.Affinity = ex.AffinityOutcome
		q.Rescued = ex.rescued != ""
	}
	q.TTFT, q.Total, q.CostUSD = ex.ttft, elapsed, ex.Cost
	s.ring.Add(&q)
}

// endSpan ends the request's span with what the client got.
func endSpan(ex *Exchange) {
	a := tracing.Answered{Status: ex.status, ErrorType: ex.errType, Attempts: ex.Attempts}
	if ex.served != "" {
		a.Provider, a.Type, a.Model = ex.served, ex.ptype, failover.ResponseModel(ex.Usage, ex.target)
		a.Degraded = ex.Model != nil && ex.target.Tier > ex.Model.BestTier
		a.Hedged = ex.hedged
		a.InputTokens, a.OutputTokens = ex.Usage.PromptTokens, ex.Usage.CompletionTokens
	}
	ex.Trace.End(a)
}

// statusLabels are the status codes' metric labels, made once: Itoa of a
// number over 99 allocates, on every request.
var statusLabels = func() (t [600]string) {
	for i := 100; i < len(t); i++ {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

// statusLabel is code's label.
func statusLabel(code int) string {
	if code >= 100 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}
