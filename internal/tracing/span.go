package tracing

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// The router's own attributes (docs/ARCHITECTURE.md, "Tracing").
const (
	keyProvider = "llmrouter.provider" // the configured provider's name
	keyTier     = "llmrouter.tier"
	keyAttempt  = "llmrouter.attempt"  // an attempt's number, from 1; the request's: how many were made
	keyDegraded = "llmrouter.degraded" // served below the model's best tier
	keyHedge    = "llmrouter.hedge"    // the attempt is a hedge; the request was answered by one
	keyKey      = "llmrouter.key"      // the named client key
	keyAPI      = "llmrouter.api"      // the front door's api label, on a span named after its route
	keyReason   = "llmrouter.reason"   // a refusal's reason
	keyWaitMS   = "llmrouter.wait_ms"  // a refusal's or a pause's wait
	keyTTFT     = "gen_ai.server.time_to_first_token"
)

// The GenAI and HTTP conventions' attributes, named by the conventions'
// own package.
const (
	keyOperation    = string(semconv.GenAIOperationNameKey)
	keyProviderName = string(semconv.GenAIProviderNameKey)
	keyRequestModel = string(semconv.GenAIRequestModelKey)
	keyRespModel    = string(semconv.GenAIResponseModelKey)
	keyInputTokens  = string(semconv.GenAIUsageInputTokensKey)
	keyOutputTokens = string(semconv.GenAIUsageOutputTokensKey)
	keyStatus       = string(semconv.HTTPResponseStatusCodeKey)
	keyErrorType    = string(semconv.ErrorTypeKey)
)

// Event names.
const (
	eventRefused    = "llmrouter.refused"
	eventBackoff    = "llmrouter.backoff"
	eventFirstToken = "gen_ai.first_token"
)

// maxEvents bounds a span's events (a request refused and paused many
// times): past it they are counted as dropped.
const maxEvents = 32

// maxValueLen bounds a string attribute (a client's model name, a
// provider's error message), so that QueueSize bounds the exporter's
// memory ("Memory").
const maxValueLen = 512

// Span kinds, as OTLP numbers them.
const (
	kindServer = 2
	kindClient = 3
)

// span is one span while it is open: its identity, and what it records
// until End encodes it (otlp.go) and queues it for export. A span that
// is not sampled only carries its identity, for its attempts'
// traceparent.
type span struct {
	// Context is the context the span began in: a span is the context
	// that carries it (one allocation, not two).
	context.Context
	t      *Tracer
	id     ids
	parent [8]byte // zero: a root span
	remote bool    // the parent is the client's
	kind   int8
	start  int64 // Unix ns

	mu sync.Mutex // guards the fields below: a hedge's legs record concurrently
	// name, then name2 after a space when it is not "": `{api} {model}`
	// without building the string.
	name, name2 string
	events      []event
	dropped     int // events past maxEvents
	ended       bool
}

// Value makes a span the context that carries it (fromContext).
// Cause is why the context the span rides on ended: its own Cause when it
// keeps one (internal/reqctx's, which context.Cause cannot see), else
// context.Cause's.
func (s *span) Cause() error {
	if c, ok := s.Context.(interface{ Cause() error }); ok {
		return c.Cause()
	}
	return context.Cause(s.Context)
}

// AfterFunc is context.AfterFunc of the context the span rides on, so
// that a context derived from the span is linked to that one (for
// internal/reqctx's, through its own AfterFunc) rather than watched by a
// goroutine of its own. A context with an AfterFunc of its own is asked
// directly: context.AfterFunc would ask it too, after making a context of
// its own to link.
func (s *span) AfterFunc(f func()) (stop func() bool) {
	if a, ok := s.Context.(afterFuncer); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(s.Context, f)
}

// afterFuncer is a context with an AfterFunc of its own (internal/reqctx's).
type afterFuncer interface {
	AfterFunc(f func()) (stop func() bool)
}

// watcher is a context that calls a function when it ends without an
// allocation: internal/reqctx's Watch and Unwatch, which the upstream
// exchange (internal/h1) looks for on the attempt's context.
type watcher interface {
	Watch(f func()) (id uint64)
	Unwatch(id uint64) bool
}

// watchedSpan is a span over a watcher: it passes Watch and Unwatch on,
// so that with tracing on the upstream exchange still watches the
// attempt's context without an allocation, where a plain span would send
// it through context.AfterFunc (eleven allocations a request with its Done
// channel; docs/ARCHITECTURE.md, "Request contexts").
type watchedSpan struct{ span }

func (w *watchedSpan) Watch(f func()) uint64  { return w.Context.(watcher).Watch(f) }
func (w *watchedSpan) Unwatch(id uint64) bool { return w.Context.(watcher).Unwatch(id) }

// newSpan is a span riding on ctx, and the context that carries it: the
// span itself, or its watchedSpan when ctx is a watcher.
func newSpan(ctx context.Context) (*span, context.Context) {
	if _, ok := ctx.(watcher); ok {
		w := &watchedSpan{span: span{Context: ctx}}
		return &w.span, w
	}
	s := &span{Context: ctx}
	return s, s
}

func (s *span) Value(key any) any {
	if key == (spanKey{}) {
		return s
	}
	return s.Context.Value(key)
}

// event is one span event; which fields it has depends on its name.
type event struct {
	at       int64
	name     string
	reason   string // refused
	provider string // refused, "" for a key's
	waitMS   int64  // refused (-1: none), backoff
	ttft     float64
}

func (s *span) addEvent(e event) {
	e.at = time.Now().UnixNano()
	s.mu.Lock()
	switch {
	case s.ended:
	case len(s.events) < maxEvents:
		s.events = append(s.events, e)
	default:
		s.dropped++
	}
	s.mu.Unlock()
}

// end encodes the span with attrs, its events and status, and queues it
// for export; a span ends once.
func (s *span) end(attrs func(b []byte) []byte, statusErr bool, statusMsg string) {
	endAt := time.Now().UnixNano()
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	p := s.t.buffer()
	*p = encodeSpan((*p)[:0], s, endAt, attrs, statusErr, statusMsg)
	s.mu.Unlock()
	s.t.enqueue(p)
}

// Request is one client request's server span. The zero Request (tracing
// off) does nothing and allocates nothing; a Request of a trace that is
// not sampled records nothing but still gives its attempts a
// traceparent to send. Its attributes are kept here and encoded once,
// at End.
type Request struct {
	s         *span
	api       string
	requested string // the model the client named (Model)
	key       string // the named client key (SetKey)
	named     bool   // named after its route, not its model
}

// Start begins the server span of a request to the front door api (chat,
// messages, responses, embeddings, completions), continuing the trace
// context h carries (traceparent, tracestate). route is "" for a request
// the attempt loop serves, whose span is named after its model (Model);
// otherwise the span is route (GET /v1/models, a stored response's
// route) and carries no GenAI operation. The returned context carries
// the span. A nil Tracer returns ctx and the zero Request.
func (t *Tracer) Start(ctx context.Context, h http.Header, api, route string) (context.Context, Request) {
	if t == nil {
		return ctx, Request{}
	}
	s, sctx := newSpan(ctx)
	s.t, s.kind, s.start, s.name = t, kindServer, time.Now().UnixNano(), api
	if route != "" {
		s.name = route
	}
	if tp := h["Traceparent"]; len(tp) == 1 {
		// Parent-based: the client's decision stands. (Two traceparent
		// lines are no trace context at all.)
		if trace, parent, sampled, ok := parseTraceparent(tp[0]); ok {
			s.id.trace, s.parent, s.id.sampled, s.remote = trace, parent, sampled, true
			s.id.state = tracestate(h)
		}
	}
	if !s.remote {
		s.id.trace = newTraceID()
		s.id.sampled = t.keep(&s.id.trace)
	}
	s.id.span = newSpanID()
	return sctx, Request{s: s, api: api, named: route != ""}
}

// On reports whether r is a span (tracing on).
func (r Request) On() bool { return r.s != nil }

// recording reports whether r's span is sampled: only then does it
// record anything.
func (r Request) recording() bool { return r.s != nil && r.s.id.sampled }

// Model names the span after the model: `{api} {configured}` (a pattern
// such as claude-* stays the pattern, so span names stay few), with the
// name the client asked for as gen_ai.request.model.
func (r *Request) Model(requested, configured string) {
	if !r.recording() {
		return
	}
	r.requested = requested
	if !r.named {
		r.s.mu.Lock()
		r.s.name2 = configured
		r.s.mu.Unlock()
	}
}

// SetKey records the request's named client key (llmrouter.key) on its
// span and on the attempts it starts from now on; "" (an anonymous key)
// records nothing.
func (r *Request) SetKey(name string) {
	if r.s == nil {
		return
	}
	r.key = name
}

// Refused records a provider's refusal of the request (open, limited,
// full, too_large, throttled, quota; a client key's budget or rate) as an
// event, with the wait it named (0: none).
func (r Request) Refused(provider, reason string, wait time.Duration) {
	if !r.recording() {
		return
	}
	w := int64(-1)
	if wait > 0 {
		w = wait.Milliseconds()
	}
	r.s.addEvent(event{name: eventRefused, reason: reason, provider: provider, waitMS: w})
}

// Backoff records that the attempts wait (a backoff, a bucket refill, a
// Retry-After; for a free slot when wait is 0) as an event.
func (r Request) Backoff(wait time.Duration) {
	if !r.recording() {
		return
	}
	r.s.addEvent(event{name: eventBackoff, waitMS: wait.Milliseconds()})
}

// Answered is what a request's span records when it ends.
type Answered struct {
	// Status is the HTTP status the client got (0: none, the client went
	// away).
	Status int
	// ErrorType is the error answer's code (upstream_error,
	// rate_limit_exceeded…); "" when served.
	ErrorType string
	// Provider, Type and Model are the serving provider's name, type and
	// model; "" when nothing served.
	Provider, Type, Model string
	Attempts              int
	// Degraded: served below the model's best tier; Hedged: served by a
	// hedge's twin.
	Degraded, Hedged bool
	// InputTokens and OutputTokens are the served attempt's usage.
	InputTokens, OutputTokens int64
}

// End ends the span with what the request got.
func (r Request) End(a Answered) {
	if !r.recording() {
		return
	}
	r.s.end(func(b []byte) []byte {
		b = appendInt(b, fieldSpanAttrs, keyAttempt, int64(a.Attempts))
		if r.named {
			b = appendStr(b, fieldSpanAttrs, keyAPI, r.api) // a model's span says its api in its name
		} else {
			b = appendStr(b, fieldSpanAttrs, keyOperation, operation(r.api))
		}
		if r.requested != "" {
			b = appendStr(b, fieldSpanAttrs, keyRequestModel, r.requested)
		}
		if r.key != "" {
			b = appendStr(b, fieldSpanAttrs, keyKey, r.key)
		}
		if a.Status != 0 {
			b = appendInt(b, fieldSpanAttrs, keyStatus, int64(a.Status))
		}
		if a.Provider != "" {
			// The GenAI attributes of the answer; the router's own about
			// the provider that served (llmrouter.provider, tier, hedge)
			// are its attempt span's, but whether the answer came from
			// below the best tier, or from a hedge, is the request's.
			b = appendStr(b, fieldSpanAttrs, keyProviderName, ProviderName(a.Type))
			b = appendStr(b, fieldSpanAttrs, keyRespModel, a.Model)
			b = appendBool(b, fieldSpanAttrs, keyDegraded, a.Degraded)
			b = appendBool(b, fieldSpanAttrs, keyHedge, a.Hedged)
			b = appendInt(b, fieldSpanAttrs, keyInputTokens, a.InputTokens)
			b = appendInt(b, fieldSpanAttrs, keyOutputTokens, a.OutputTokens)
		}
		if a.ErrorType != "" {
			b = appendStr(b, fieldSpanAttrs, keyErrorType, a.ErrorType)
		}
		return b
	}, a.Status >= 500, a.ErrorType) // a 4xx is the client's (OpenTelemetry's HTTP conventions)
}

// Attempt is one attempt's client span. The zero Attempt does nothing.
// Like a Request it keeps its attributes until End: a sampled one's Try
// in memory of its own, so that every attempt's struct (failover's
// Served holds one) is 32 bytes, not 112, whether tracing is on or not.
type Attempt struct {
	s   *span
	try *Try // nil unless the span is sampled
	key string
}

// Try is what an attempt's span starts with.
type Try struct {
	// Op is the operation sent to the provider (chat, messages,
	// responses, embeddings, completions).
	Op string
	// Provider and Type are the configured provider's name and type;
	// Model is the provider's model (the target's).
	Provider, Type, Model string
	Tier                  int
	// N is the attempt's number within the request, from 1.
	N int
	// Degraded: the target is below the model's best tier. Hedge: the
	// attempt races another (hedging).
	Degraded, Hedge bool
}

// Attempt begins an attempt's client span under r, `{op} {model}`, and
// returns ctx carrying it: the adapter's request sends its traceparent
// (Inject). With the zero Request it returns ctx and the zero Attempt.
// A request that is not sampled still gives each attempt a span id of
// its own, so that the provider receives this attempt's id in the
// client's trace.
func (r Request) Attempt(ctx context.Context, a Try) (context.Context, Attempt) {
	if r.s == nil {
		return ctx, Attempt{}
	}
	s, sctx := newSpan(ctx)
	s.t, s.kind, s.id, s.parent = r.s.t, kindClient, r.s.id, r.s.id.span
	s.id.span = newSpanID()
	at := Attempt{s: s, key: r.key}
	if s.id.sampled {
		s.start = time.Now().UnixNano()
		s.name, s.name2 = a.Op, a.Model
		at.try = new(Try)
		*at.try = a
	}
	return sctx, at
}

func (a Attempt) recording() bool { return a.s != nil && a.s.id.sampled }

// FirstToken records the first content of a streamed attempt, and how
// long after the attempt began it came.
func (a Attempt) FirstToken(after time.Duration) {
	if !a.recording() {
		return
	}
	a.s.addEvent(event{name: eventFirstToken, ttft: after.Seconds()})
}

// Outcome is how an attempt ended.
type Outcome struct {
	// Kind is the outcome kind (docs/ARCHITECTURE.md, "Classification");
	// "" or "ok" for a success.
	Kind string
	// Status is the provider's HTTP status, 0 when none.
	Status int
	// Message says what failed; redacted by the caller.
	Message string
	// Model is the model that answered (gen_ai.response.model); "" when
	// unknown.
	Model string
	// InputTokens and OutputTokens are the provider's usage.
	InputTokens, OutputTokens int64
}

// End ends the attempt's span with its outcome: a failure's kind is its
// error.type and its status Error.
func (a Attempt) End(o Outcome) {
	if !a.recording() {
		return
	}
	failed := o.Kind != "" && o.Kind != "ok"
	a.s.end(func(b []byte) []byte {
		t := a.try
		b = appendStr(b, fieldSpanAttrs, keyOperation, operation(t.Op))
		b = appendStr(b, fieldSpanAttrs, keyProviderName, ProviderName(t.Type))
		b = appendStr(b, fieldSpanAttrs, keyRequestModel, t.Model)
		b = appendStr(b, fieldSpanAttrs, keyProvider, t.Provider)
		b = appendInt(b, fieldSpanAttrs, keyTier, int64(t.Tier))
		b = appendInt(b, fieldSpanAttrs, keyAttempt, int64(t.N))
		b = appendBool(b, fieldSpanAttrs, keyDegraded, t.Degraded)
		b = appendBool(b, fieldSpanAttrs, keyHedge, t.Hedge)
		if a.key != "" {
			b = appendStr(b, fieldSpanAttrs, keyKey, a.key)
		}
		if o.Status != 0 {
			b = appendInt(b, fieldSpanAttrs, keyStatus, int64(o.Status))
		}
		if failed {
			return appendStr(b, fieldSpanAttrs, keyErrorType, o.Kind)
		}
		if o.Model != "" {
			b = appendStr(b, fieldSpanAttrs, keyRespModel, o.Model)
		}
		b = appendInt(b, fieldSpanAttrs, keyInputTokens, o.InputTokens)
		return appendInt(b, fieldSpanAttrs, keyOutputTokens, o.OutputTokens)
	}, failed, o.Message)
}

// operation is gen_ai.operation.name for a front door's or an
// operation's name: the well-known values where one fits.
func operation(op string) string {
	switch op {
	case "chat", "messages", "responses":
		return semconv.GenAIOperationNameChat.Value.AsString()
	case "embeddings":
		return semconv.GenAIOperationNameEmbeddings.Value.AsString()
	case "completions":
		return semconv.GenAIOperationNameTextCompletion.Value.AsString()
	}
	return op
}

// ProviderName is gen_ai.provider.name for a provider type: the
// OpenTelemetry GenAI conventions' well-known value where one exists
// (azure is azure.ai.openai, gemini gcp.gemini, vertex gcp.vertex_ai,
// bedrock aws.bedrock), else the type itself (openai_compatible,
// simulated).
func ProviderName(typ string) string {
	switch typ {
	case "azure":
		return "azure.ai.openai"
	case "gemini":
		return "gcp.gemini"
	case "vertex":
		return "gcp.vertex_ai"
	case "bedrock":
		return "aws.bedrock"
	}
	return typ
}

// clean is s as a span may carry it: valid UTF-8 (OTLP's strings must
// be) and at most maxValueLen bytes.
func clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) > maxValueLen {
		cut := maxValueLen
		for !utf8.RuneStart(s[cut]) {
			cut-- // not inside a rune
		}
		s = s[:cut]
	}
	return s
}
