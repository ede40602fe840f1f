package e2e

import (
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// binFault is one scripted answer of a binFake: a fault of fake_test.go,
// plus a gated stream for the drain scenario.
type binFault struct {
	fault
	// started, when not nil, is sent to (it must have room) once the
	// stream's first content event is written.
	started chan<- struct{}
	// gate, when not nil, holds a stream after its first content event
	// until it is closed; then more content events follow, one every
	// every, and the normal end.
	gate  <-chan struct{}
	more  int
	every time.Duration
	// after, when not nil, holds a non-stream answer, its headers
	// included, until it is closed.
	after <-chan struct{}
}

// binEvent is one request a binFake received.
type binEvent struct {
	probe  bool      // a GET on the models endpoint; else an API call
	model  string    // an API call's top-level "model" (the target's model)
	start  time.Time // arrival, once the body was read
	end    time.Time // the handler returned: the caller has nothing before this
	status int       // the status answered
	// headers: the answer's headers were flushed (a stream's before its
	// end; otherwise end).
	headers time.Time
	// exhausted: the answer announced remaining 0 on a budget, which is
	// refilled at resetAt (the later one when both budgets are empty).
	exhausted bool
	resetAt   time.Time
	// traceparent is the W3C trace context the call carried ("": none).
	traceparent string
	// limit is the output limit an API call asked for: the larger of its
	// max_tokens and max_completion_tokens (0: none).
	limit int64
}

// windowLimit is a provider's own fixed-window budget: requests and
// tokens per window. Windows are aligned to wall-clock multiples of
// window, or with anchored, the first starts at the first call; either
// way they end on a whole second, so an Anthropic reset in whole RFC 3339
// seconds is exact.
type windowLimit struct {
	window   time.Duration
	requests int // per window; 0 means no request limit
	tokens   int // per window; 0 means no token limit
	cost     int // tokens one answered call uses (the canned usage)
	anchored bool

	end              time.Time // the current window's end
	usedReq, usedTok int
}

// limitAnswer is what the limit said about one call: whether it is
// admitted and the budget left after it.
type limitAnswer struct {
	ok             bool
	remReq, remTok int
	resetAt        time.Time
}

// take charges one call at now if it fits every budget.
func (l *windowLimit) take(now time.Time) limitAnswer {
	if !now.Before(l.end) {
		l.end = now.Truncate(l.window).Add(l.window)
		if l.anchored {
			l.end = now.Add(l.window).Truncate(time.Second).Add(time.Second)
		}
		l.usedReq, l.usedTok = 0, 0
	}
	ok := (l.requests == 0 || l.usedReq < l.requests) && (l.tokens == 0 || l.usedTok+l.cost <= l.tokens)
	if ok {
		l.usedReq++
		l.usedTok += l.cost
	}
	return limitAnswer{ok: ok, remReq: l.requests - l.usedReq, remTok: l.tokens - l.usedTok, resetAt: l.end}
}

// exhausted reports whether a reports an empty budget.
func (l *windowLimit) exhausted(a limitAnswer) bool {
	return (l.requests > 0 && a.remReq == 0) || (l.tokens > 0 && a.remTok == 0)
}

// binFake is a fake provider for the binary scenarios. It answers with the
// canned bodies of an upstream (fake_test.go) and adds what those
// scenarios observe and steer while it runs: a timeline of every request,
// in-flight counts of API calls and of probes, scripted probe answers, an
// optional fixed-window rate limit announced truthfully in the dialect's
// headers, and gated streams.
type binFake struct {
	*upstream
	// api picks the answer to the n-th API call (from 1); probe the status
	// of the n-th probe (200: the dialect's model list, else its error
	// body).
	api   atomic.Pointer[func(n int, stream bool) binFault]
	probe atomic.Pointer[func(n int) int]
	// byModel, when set, picks the answer instead of api, by the model the
	// call names (setAPIByModel).
	byModel atomic.Pointer[func(model string, n int, stream bool) binFault]
	// maxOutput, when above 0, is the most output tokens the fake's model
	// writes: a call asking for more is refused with a 400, as gpt-4o
	// refuses max_tokens above 16384 (setMaxOutput).
	maxOutput atomic.Int64

	mu       sync.Mutex // guards every field below
	events   []binEvent
	limit    *windowLimit // nil: no limit
	nAPI     int          // API calls so far
	nProbe   int          // probes so far
	inAPI    int          // API calls in flight
	maxAPI   int
	inProbe  int // probes in flight
	maxProbe int
}

// newBinFake starts a fake provider speaking d whose every API call is
// answered normally and every probe succeeds; it is closed at cleanup.
func newBinFake(t testing.TB, name string, d dialect) *binFake {
	t.Helper()
	f := &binFake{upstream: &upstream{name: name, d: d, stop: make(chan struct{})}}
	f.always(fault{})
	f.build()
	f.setAPI(func(int, bool) binFault { return binFault{} })
	f.setProbe(func(int) int { return http.StatusOK })
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.Start()
	t.Cleanup(f.close)
	return f
}

func (f *binFake) setAPI(fn func(n int, stream bool) binFault) { f.api.Store(&fn) }
func (f *binFake) setProbe(fn func(n int) int)                 { f.probe.Store(&fn) }

// setAPIByModel makes fn pick every later API call's answer from the
// model the call names, in place of the function setAPI gave.
func (f *binFake) setAPIByModel(fn func(model string, n int, stream bool) binFault) {
	f.byModel.Store(&fn)
}

// setMaxOutput makes the fake's model write at most n output tokens: a
// call asking for more gets a 400 in the dialect's words (0: no ceiling).
func (f *binFake) setMaxOutput(n int64) { f.maxOutput.Store(n) }

// limits returns the output limit of each API call so far (0: none), in
// arrival order.
func (f *binFake) limits() []int64 {
	var out []int64
	for _, e := range f.timeline() {
		if !e.probe {
			out = append(out, e.limit)
		}
	}
	return out
}

// countModel returns how many API calls for model answered with status
// (0: any) are in the timeline.
func (f *binFake) countModel(model string, status int) int {
	n := 0
	for _, e := range f.timeline() {
		if !e.probe && e.model == model && (status == 0 || e.status == status) {
			n++
		}
	}
	return n
}

// setLimit makes the fake enforce l from now on (nil: no limit).
func (f *binFake) setLimit(l *windowLimit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limit = l
}

// timeline returns a copy of the events so far, in arrival order.
func (f *binFake) timeline() []binEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]binEvent(nil), f.events...)
}

// peaks returns the most API calls and the most probes ever in flight at
// once.
func (f *binFake) peaks() (api, probe int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxAPI, f.maxProbe
}

// inFlight returns the API calls in flight now.
func (f *binFake) inFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inAPI
}

// count returns how many API calls (probe false) or probes answered with
// status (0: any) are in the timeline.
func (f *binFake) count(probe bool, status int) int {
	n := 0
	for _, e := range f.timeline() {
		if e.probe == probe && (status == 0 || e.status == status) {
			n++
		}
	}
	return n
}

// arrive records a request's arrival (model: an API call's model) and
// returns its event index and its number among requests of its sort (from
// 1).
func (f *binFake) arrive(probe bool, model string, now time.Time) (idx, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, binEvent{probe: probe, model: model, start: now})
	if probe {
		f.nProbe++
		f.inProbe++
		f.maxProbe = max(f.maxProbe, f.inProbe)
		return len(f.events) - 1, f.nProbe
	}
	f.nAPI++
	f.inAPI++
	f.maxAPI = max(f.maxAPI, f.inAPI)
	return len(f.events) - 1, f.nAPI
}

// flushed records that event idx's headers were flushed.
func (f *binFake) flushed(idx int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[idx].headers = time.Now()
}

// leave records the end of event idx, answered with status.
func (f *binFake) leave(idx, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &f.events[idx]
	e.end, e.status = time.Now(), status
	if e.headers.IsZero() {
		e.headers = e.end
	}
	if e.probe {
		f.inProbe--
	} else {
		f.inAPI--
	}
}

func (f *binFake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	now := time.Now()
	if r.Method == http.MethodGet {
		idx, n := f.arrive(true, "", now)
		status := (*f.probe.Load())(n)
		defer func() { f.leave(idx, status) }()
		if status != http.StatusOK {
			writeErrorBody(w, f.d, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if f.d == anthropicAPI {
			io.WriteString(w, `{"data":[{"type":"model","id":"claude-test"}],"has_more":false}`)
		} else {
			io.WriteString(w, `{"object":"list","data":[{"id":"gpt-test","object":"model"}]}`)
		}
		return
	}
	if r.URL.Path != f.apiPath() {
		http.Error(w, "no such path "+r.URL.Path, http.StatusNotFound)
		return
	}
	stream := gjson.GetBytes(body, "stream").Bool()
	model := gjson.GetBytes(body, "model").Str
	idx, n := f.arrive(false, model, now)
	status := http.StatusOK
	defer func() { f.leave(idx, status) }()
	limit := max(gjson.GetBytes(body, "max_tokens").Int(), gjson.GetBytes(body, "max_completion_tokens").Int())
	f.mu.Lock()
	f.events[idx].limit = limit
	f.mu.Unlock()
	if most := f.maxOutput.Load(); most > 0 && limit > most {
		status = http.StatusBadRequest
		ft := oaiError(status, "invalid_request_error", "invalid_value",
			fmt.Sprintf("max_tokens is too large: %d. This model supports at most %d completion tokens, whereas you provided %d.", limit, most, limit))
		if f.d == anthropicAPI {
			ft = antError(status, "invalid_request_error",
				fmt.Sprintf("max_tokens: %d > %d, which is the maximum allowed number of output tokens for %s", limit, most, model))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, ft.body)
		return
	}
	if tp := r.Header.Get("Traceparent"); tp != "" {
		f.mu.Lock()
		f.events[idx].traceparent = tp
		f.mu.Unlock()
	}

	f.mu.Lock()
	l := f.limit
	var la limitAnswer
	if l != nil {
		la = l.take(now)
		if l.exhausted(la) {
			f.events[idx].exhausted, f.events[idx].resetAt = true, la.resetAt
		}
	}
	f.mu.Unlock()
	if l != nil {
		f.limitHeaders(w.Header(), l, la, now)
		if !la.ok {
			status = http.StatusTooManyRequests
			f.writeRateLimited(w, l, la, now)
			return
		}
	}

	var bf binFault
	if byModel := f.byModel.Load(); byModel != nil {
		bf = (*byModel)(model, n, stream)
	} else {
		bf = (*f.api.Load())(n, stream)
	}
	for k, v := range bf.header {
		w.Header().Set(k, v)
	}
	switch {
	case bf.kind == httpError:
		status = bf.status
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(bf.status)
		io.WriteString(w, bf.body)
	case stream && bf.gate != nil:
		f.gatedStream(w, r, bf, func() { f.flushed(idx) })
	case !stream && bf.after != nil:
		select {
		case <-bf.after:
		case <-r.Context().Done():
			return
		case <-f.stop:
			return
		}
		f.serveFault(w, r, stream, bf.fault)
	default:
		// Every other kind is fake_test.go's, served by its upstream.
		f.serveFault(w, r, stream, bf.fault)
	}
}

// serveFault answers like upstream.serve does for ft once the body is read.
func (f *binFake) serveFault(w http.ResponseWriter, r *http.Request, stream bool, ft fault) {
	f.upstream.answer(w, r, stream, ft)
}

// gatedStream writes the preamble and the first content event, calls
// flushed, reports it on bf.started, waits for bf.gate, then writes
// bf.more content events bf.every apart and the normal end.
func (f *binFake) gatedStream(w http.ResponseWriter, r *http.Request, bf binFault, flushed func()) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	write := func(events ...string) bool {
		for _, e := range events {
			if _, err := io.WriteString(w, e); err != nil {
				return false
			}
			if rc.Flush() != nil {
				return false
			}
		}
		return true
	}
	w.WriteHeader(http.StatusOK)
	if !write(f.preamble...) || !write(f.content[0]) {
		return
	}
	flushed()
	if bf.started != nil {
		bf.started <- struct{}{}
	}
	select {
	case <-bf.gate:
	case <-r.Context().Done():
		return
	case <-f.stop:
		return
	}
	for range bf.more {
		if !f.wait(r, bf.every) || !write(f.content[0]) {
			return
		}
	}
	if write(f.content[1:]...) {
		write(f.tail...)
	}
}

// limitHeaders announces the budget left after a call, in the dialect's
// headers: OpenAI's reset is the time until the budget is whole again as a
// Go duration (rounded up to the millisecond, so it is never early),
// Anthropic's the instant in RFC 3339.
func (f *binFake) limitHeaders(h http.Header, l *windowLimit, la limitAnswer, now time.Time) {
	type budget struct {
		oai, ant         string
		limit, remaining int
	}
	for _, b := range []budget{{"requests", "requests", l.requests, la.remReq}, {"tokens", "tokens", l.tokens, la.remTok}} {
		if b.limit == 0 {
			continue
		}
		if f.d == anthropicAPI {
			p := "anthropic-ratelimit-" + b.ant + "-"
			h.Set(p+"limit", strconv.Itoa(b.limit))
			h.Set(p+"remaining", strconv.Itoa(b.remaining))
			h.Set(p+"reset", la.resetAt.UTC().Format(time.RFC3339))
			continue
		}
		left := la.resetAt.Sub(now)
		left = (left + time.Millisecond - 1).Truncate(time.Millisecond)
		h.Set("x-ratelimit-limit-"+b.oai, strconv.Itoa(b.limit))
		h.Set("x-ratelimit-remaining-"+b.oai, strconv.Itoa(b.remaining))
		h.Set("x-ratelimit-reset-"+b.oai, left.String())
	}
}

// writeRateLimited answers 429 in the dialect's shape with a Retry-After
// in whole seconds, rounded up so it is never early.
func (f *binFake) writeRateLimited(w http.ResponseWriter, l *windowLimit, la limitAnswer, now time.Time) {
	secs := int(math.Ceil(la.resetAt.Sub(now).Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	what, limit := "requests", l.requests // l's limits never change; only its usage does
	if l.requests == 0 || la.remReq > 0 {
		what, limit = "tokens", l.tokens
	}
	var ft fault
	if f.d == anthropicAPI {
		ft = antError(http.StatusTooManyRequests, "rate_limit_error",
			fmt.Sprintf("This request would exceed the rate limit for your organization of %d %s per window.", limit, what))
	} else {
		ft = oaiError(http.StatusTooManyRequests, what, "rate_limit_exceeded",
			fmt.Sprintf("Rate limit reached for gpt-test on %s per window: Limit %d, Requested 1.", what, limit))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ft.status)
	io.WriteString(w, ft.body)
}

// writeErrorBody answers status with the dialect's error body.
func writeErrorBody(w http.ResponseWriter, d dialect, status int) {
	ft := oaiError(status, "server_error", "", fmt.Sprintf("The server had an error (%d).", status))
	if status == http.StatusServiceUnavailable {
		ft = oaiError(status, "service_unavailable_error", "server_is_overloaded", "The server is overloaded or not ready yet.")
	}
	if d == anthropicAPI {
		ft = antError(status, "api_error", fmt.Sprintf("Internal server error (%d)", status))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, ft.body)
}

// serviceUnavailable is the dialect's 503 answer to an API call.
func serviceUnavailable(d dialect) binFault {
	if d == anthropicAPI {
		return binFault{fault: antError(http.StatusServiceUnavailable, "api_error", "Service unavailable")}
	}
	return binFault{fault: oaiError(http.StatusServiceUnavailable, "service_unavailable_error", "server_is_overloaded",
		"The server is overloaded or not ready yet.")}
}
