package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
)

// QueueSize bounds the spans ended and not yet exported (queued, or in the
// batch being sent): past it a span is dropped and counted
// (docs/ARCHITECTURE.md, "Tracing"; "Memory" gives the bytes).
const QueueSize = 2048

// scope is the instrumentation scope the router's spans are made in.
const scope = "github.com/llmrouter/llmrouter"

// Options are a Tracer's seams.
type Options struct {
	// Version is the binary's version: the service.version resource
	// attribute.
	Version string
	// Registerer receives the exporter's metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// Logger receives the (thinned) warning that spans could not be
	// exported; nil discards.
	Logger *slog.Logger

	// exporter, when not nil, replaces the OTLP/HTTP exporter (tests).
	exporter sdktrace.SpanExporter
}

// Tracer makes the router's spans and exports them: the OpenTelemetry
// SDK's TracerProvider with a parent-based ratio sampler and a batching
// processor in front of the OTLP/HTTP exporter, bounded by QueueSize. A
// nil *Tracer is tracing off: every method does nothing and allocates
// nothing.
type Tracer struct {
	tp *sdktrace.TracerProvider
	tr trace.Tracer
	// queued counts spans handed to the batcher and not yet exported or
	// dropped: the bound the processor keeps (QueueSize).
	queued atomic.Int64
	m      *metrics
	log    *slog.Logger
	warn   rate.Sometimes // thins the export failure warning
}

// New returns the Tracer cfg configures, nil when tracing is off
// (cfg.OTLPEndpoint ""). It does no I/O: the exporter connects when its
// first batch is due, and a collector that cannot be reached costs only
// dropped spans (docs/ARCHITECTURE.md, "Tracing").
func New(cfg Config, o Options) (*Tracer, error) {
	if !cfg.On() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Tracer{m: newMetrics(o.Registerer), log: o.Logger, warn: rate.Sometimes{First: 1, Interval: time.Minute}}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	exp := o.exporter
	if exp == nil {
		u, _ := tracesURL(cfg.OTLPEndpoint) // Validate parsed it
		// The config's endpoint is given last: it wins over
		// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, which the exporter reads
		// first with every other OTEL_EXPORTER_OTLP_* variable.
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithURLPath(u.Path)}
		if u.Scheme == "http" {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		var err error
		if exp, err = otlptracehttp.New(context.Background(), opts...); err != nil {
			return nil, fmt.Errorf("tracing: building the OTLP/HTTP exporter: %w", err)
		}
	}
	// The service's name and version first, then OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES over them (a pod's name, a deployment's
	// environment).
	res, err := resource.New(context.Background(),
		resource.WithAttributes(semconv.ServiceName("llmrouter"), semconv.ServiceVersion(o.Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("tracing: building the resource: %w", err)
	}
	// The batcher's own queue holds QueueSize spans; bounded counts them
	// from the moment they are queued until their batch has been sent, so
	// the batcher never drops a span unseen.
	batcher := sdktrace.NewBatchSpanProcessor(&counted{next: exp, t: t}, sdktrace.WithMaxQueueSize(QueueSize))
	t.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
		sdktrace.WithSpanProcessor(&bounded{next: batcher, t: t}),
		// A span holds what the router sets: a few dozen attributes, an
		// event per refusal or wait. These limits bound a pathological
		// request's span (a long provider error message) so that
		// QueueSize bounds the exporter's memory.
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit:   maxValueLen,
			AttributeCountLimit:         32,
			EventCountLimit:             32,
			LinkCountLimit:              0,
			AttributePerEventCountLimit: 8,
			AttributePerLinkCountLimit:  0,
		}),
	)
	t.tr = t.tp.Tracer(scope, trace.WithInstrumentationVersion(o.Version), trace.WithSchemaURL(semconv.SchemaURL))
	return t, nil
}

// maxValueLen bounds an attribute's string value (an error message).
const maxValueLen = 512

// Shutdown exports the spans still queued, within ctx, and stops the
// exporter; spans ended afterwards are dropped. The daemon calls it after
// the drain, within shutdown_timeout (docs/ARCHITECTURE.md, "Reload and
// shutdown"). A nil Tracer has nothing to do.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// bounded keeps at most QueueSize sampled spans between their end and
// their batch's export: a slow or unreachable collector costs dropped
// spans, counted, never memory or a request's time.
type bounded struct {
	next sdktrace.SpanProcessor // the batcher
	t    *Tracer
}

func (b *bounded) OnStart(context.Context, sdktrace.ReadWriteSpan) {} // the batcher's does nothing

func (b *bounded) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if b.t.queued.Add(1) > QueueSize {
		b.t.queued.Add(-1)
		b.t.m.queueFull.Inc()
		return
	}
	b.next.OnEnd(s)
}

func (b *bounded) Shutdown(ctx context.Context) error   { return b.next.Shutdown(ctx) }
func (b *bounded) ForceFlush(ctx context.Context) error { return b.next.ForceFlush(ctx) }

// counted is the exporter as the batcher sees it: it gives the bound back
// once a batch has been sent, and counts (and warns, thinned, about) a
// batch that could not be; the batcher is told nothing failed, so that
// the SDK's global error handler is never called.
type counted struct {
	next sdktrace.SpanExporter
	t    *Tracer
}

func (c *counted) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.next.ExportSpans(ctx, spans)
	n := len(spans)
	c.t.queued.Add(-int64(n))
	if err != nil {
		c.t.m.exportFailed.Add(float64(n))
		c.t.warn.Do(func() {
			c.t.log.Warn("tracing: spans could not be exported and were dropped (thinned: one warning a minute)",
				"spans", n, "error", err.Error())
		})
		return nil
	}
	c.t.m.exported.Add(float64(n))
	return nil
}

func (c *counted) Shutdown(ctx context.Context) error { return c.next.Shutdown(ctx) }

// metrics are the exporter's.
type metrics struct {
	exported, queueFull, exportFailed prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	exported := prometheus.NewCounter(prometheus.CounterOpts{Name: "llmrouter_tracing_spans_exported_total",
		Help: "Spans the OTLP collector accepted."})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmrouter_tracing_spans_dropped_total",
		Help: "Spans dropped: the export queue was full (queue_full) or the collector could not be reached or refused them (export_failed)."},
		[]string{"reason"})
	m := &metrics{exported: exported, queueFull: dropped.WithLabelValues("queue_full"), exportFailed: dropped.WithLabelValues("export_failed")}
	if reg != nil {
		reg.MustRegister(exported, dropped)
	}
	return m
}
