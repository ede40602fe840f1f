package tracing

import (
	"context"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The router's own attributes (docs/ARCHITECTURE.md, "Tracing").
const (
	keyProvider = attribute.Key("llmrouter.provider") // the configured provider's name
	keyTier     = attribute.Key("llmrouter.tier")
	keyAttempt  = attribute.Key("llmrouter.attempt")  // an attempt's number, from 1; the request's: how many were made
	keyDegraded = attribute.Key("llmrouter.degraded") // served below the model's best tier
	keyHedge    = attribute.Key("llmrouter.hedge")    // the attempt is a hedge; the request was answered by one
	keyKey      = attribute.Key("llmrouter.key")      // the named client key
	keyAPI      = attribute.Key("llmrouter.api")      // the front door's api label, on a span named after its route
	keyReason   = attribute.Key("llmrouter.reason")   // a refusal's reason
	keyWaitMS   = attribute.Key("llmrouter.wait_ms")  // a refusal's or a pause's wait
	keyTTFT     = attribute.Key("gen_ai.server.time_to_first_token")
)

// Event names.
const (
	eventRefused    = "llmrouter.refused"
	eventBackoff    = "llmrouter.backoff"
	eventFirstToken = "gen_ai.first_token"
)

// propagator reads and writes W3C traceparent and tracestate.
var propagator = propagation.TraceContext{}

// Span start options, boxed once: a call that passes them allocates
// nothing for them.
var (
	serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	clientKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

// Request is one client request's server span. The zero Request (tracing
// off) does nothing and allocates nothing; a Request of a trace that is
// not sampled records nothing but still gives its attempts a
// traceparent to send. Its attributes are kept here and set once, at End
// (one slice for the span's attributes, not one per call).
type Request struct {
	t         *Tracer
	span      trace.Span
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
	if len(h["Traceparent"]) > 0 {
		ctx = propagator.Extract(ctx, propagation.HeaderCarrier(h))
	}
	name := api
	if route != "" {
		name = route
	}
	ctx, span := t.tr.Start(ctx, name, serverKind...)
	return ctx, Request{t: t, span: span, api: api, named: route != ""}
}

// On reports whether r is a span (tracing on).
func (r Request) On() bool { return r.span != nil }

// Model names the span after the model: `{api} {configured}` (a pattern
// such as claude-* stays the pattern, so span names stay few), with the
// name the client asked for as gen_ai.request.model.
func (r *Request) Model(requested, configured string) {
	if r.span == nil || !r.span.IsRecording() {
		return
	}
	r.requested = requested
	if !r.named {
		r.span.SetName(r.api + " " + configured)
	}
}

// SetKey records the request's named client key (llmrouter.key) on its
// span and on the attempts it starts from now on; "" (an anonymous key)
// records nothing.
func (r *Request) SetKey(name string) {
	if r.span == nil {
		return
	}
	r.key = name
}

// Refused records a provider's refusal of the request (open, limited,
// full, too_large, throttled, quota; a client key's budget or rate) as an
// event, with the wait it named (0: none).
func (r Request) Refused(provider, reason string, wait time.Duration) {
	if r.span == nil || !r.span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, keyReason.String(reason))
	if provider != "" {
		attrs = append(attrs, keyProvider.String(provider))
	}
	if wait > 0 {
		attrs = append(attrs, keyWaitMS.Int64(wait.Milliseconds()))
	}
	r.span.AddEvent(eventRefused, trace.WithAttributes(attrs...))
}

// Backoff records that the attempts wait (a backoff, a bucket refill, a
// Retry-After; for a free slot when wait is 0) as an event.
func (r Request) Backoff(wait time.Duration) {
	if r.span == nil || !r.span.IsRecording() {
		return
	}
	r.span.AddEvent(eventBackoff, trace.WithAttributes(keyWaitMS.Int64(wait.Milliseconds())))
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
	Degraded              bool
	// InputTokens and OutputTokens are the served attempt's usage.
	InputTokens, OutputTokens int64
}

// End ends the span with what the request got.
func (r Request) End(a Answered) {
	if r.span == nil {
		return
	}
	if r.span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 12)
		attrs = append(attrs, keyAttempt.Int(a.Attempts))
		if r.named {
			attrs = append(attrs, keyAPI.String(r.api)) // a model's span says its api in its name
		} else {
			attrs = append(attrs, operation(r.api))
		}
		if r.requested != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(r.requested))
		}
		if r.key != "" {
			attrs = append(attrs, keyKey.String(r.key))
		}
		if a.Status != 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCode(a.Status))
		}
		if a.Provider != "" {
			// The GenAI attributes of the answer; the router's own about
			// the provider that served (llmrouter.provider, tier, hedge)
			// are its attempt span's, but whether the answer came from
			// below the best tier is the request's.
			attrs = append(attrs, semconv.GenAIProviderNameKey.String(ProviderName(a.Type)),
				semconv.GenAIResponseModel(a.Model), keyDegraded.Bool(a.Degraded),
				semconv.GenAIUsageInputTokens(int(a.InputTokens)), semconv.GenAIUsageOutputTokens(int(a.OutputTokens)))
		}
		if a.ErrorType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(a.ErrorType))
		}
		r.span.SetAttributes(attrs...)
		// A server span is an error for a 5xx only: a 4xx is the
		// client's (OpenTelemetry's HTTP conventions).
		if a.Status >= 500 {
			r.span.SetStatus(codes.Error, a.ErrorType)
		}
	}
	r.span.End()
}

// Attempt is one attempt's client span. The zero Attempt does nothing.
// Like a Request it keeps its attributes until End.
type Attempt struct {
	span trace.Span
	try  Try
	key  string
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
// A request that is not sampled still gives each attempt a span of its
// own, so that the provider receives this attempt's id in the client's
// trace.
func (r Request) Attempt(ctx context.Context, a Try) (context.Context, Attempt) {
	if r.span == nil {
		return ctx, Attempt{}
	}
	name := a.Op
	if r.span.IsRecording() {
		name = a.Op + " " + a.Model
	}
	ctx, span := r.t.tr.Start(ctx, name, clientKind...)
	return ctx, Attempt{span: span, try: a, key: r.key}
}

// FirstToken records the first content of a streamed attempt, and how
// long after the attempt began it came.
func (a Attempt) FirstToken(after time.Duration) {
	if a.span == nil || !a.span.IsRecording() {
		return
	}
	a.span.AddEvent(eventFirstToken, trace.WithAttributes(keyTTFT.Float64(after.Seconds())))
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
	if a.span == nil {
		return
	}
	if a.span.IsRecording() {
		t := &a.try
		attrs := make([]attribute.KeyValue, 0, 14)
		attrs = append(attrs, operation(t.Op), semconv.GenAIProviderNameKey.String(ProviderName(t.Type)),
			semconv.GenAIRequestModel(t.Model), keyProvider.String(t.Provider), keyTier.Int(t.Tier), keyAttempt.Int(t.N),
			keyDegraded.Bool(t.Degraded), keyHedge.Bool(t.Hedge))
		if a.key != "" {
			attrs = append(attrs, keyKey.String(a.key))
		}
		if o.Status != 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCode(o.Status))
		}
		if o.Kind == "" || o.Kind == "ok" {
			if o.Model != "" {
				attrs = append(attrs, semconv.GenAIResponseModel(o.Model))
			}
			attrs = append(attrs, semconv.GenAIUsageInputTokens(int(o.InputTokens)), semconv.GenAIUsageOutputTokens(int(o.OutputTokens)))
		} else {
			attrs = append(attrs, semconv.ErrorTypeKey.String(o.Kind))
			a.span.SetStatus(codes.Error, truncate(o.Message))
		}
		a.span.SetAttributes(attrs...)
	}
	a.span.End()
}

// Inject writes the W3C trace context of the span ctx carries (an
// attempt's) into h: traceparent, and tracestate when the client sent
// one. Without a span in ctx (tracing off) it writes nothing and
// allocates nothing. Every adapter's request goes through it
// (provider.Send).
func Inject(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// operation is gen_ai.operation.name for a front door's or an
// operation's name: the well-known values where one fits.
func operation(op string) attribute.KeyValue {
	switch op {
	case "chat", "messages", "responses":
		return semconv.GenAIOperationNameChat
	case "embeddings":
		return semconv.GenAIOperationNameEmbeddings
	case "completions":
		return semconv.GenAIOperationNameTextCompletion
	}
	return semconv.GenAIOperationNameKey.String(op)
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

// truncate bounds a status message; the span limits bound attributes,
// not the status.
func truncate(s string) string {
	if len(s) <= maxValueLen {
		return s
	}
	return strings.ToValidUTF8(s[:maxValueLen], "") + "…"
}
