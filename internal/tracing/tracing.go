package tracing

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"golang.org/x/time/rate"
)

// QueueSize bounds the spans ended and not yet exported (queued, or in the
// batch being sent), and QueueBytes the memory their encodings hold (the
// capacity of their buffers): past either a span is dropped and counted
// (docs/ARCHITECTURE.md, "Tracing"; "Memory" gives the bytes). A span is
// about 1 KiB; counting spans alone let a client's values fill each
// (issue 31, finding 5: a 16 KB tracestate in every span held 91 MB).
const (
	QueueSize  = 2048
	QueueBytes = 4 << 20
)

// scope is the instrumentation scope the router's spans are made in.
const scope = "github.com/llmrouter/llmrouter"

// maxSpanBuffer is the largest span buffer kept for reuse: a span
// bigger than that (many events, long values) is left to the GC.
const maxSpanBuffer = 4 << 10

// Options are a Tracer's seams.
type Options struct {
	// Version is the binary's version: the service.version resource
	// attribute and the instrumentation scope's version.
	Version string
	// Registerer receives the exporter's metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// Logger receives the (thinned) warning that spans could not be
	// exported; nil discards.
	Logger *slog.Logger

	// send, when not nil, replaces the OTLP/HTTP post of one export
	// request's body (tests, benchmarks).
	send sendFunc
}

// sendFunc delivers one ExportTraceServiceRequest: how many of its spans
// the collector rejected and why, or why none could be delivered.
type sendFunc func(ctx context.Context, body []byte) (rejected int64, why string, err error)

// Tracer makes the router's spans and exports them (docs/ARCHITECTURE.md,
// "Tracing"): each span is encoded as OTLP protobuf when it ends, queued
// (at most QueueSize), and sent in batches over OTLP/HTTP by one
// goroutine. A nil *Tracer is tracing off: every method does nothing
// and allocates nothing.
type Tracer struct {
	// ratio is sample_ratio; bound is its TraceIDRatioBased threshold
	// (the OpenTelemetry SDK's rule: a trace is kept when the upper 63
	// bits of its id's last 8 bytes are below it), so that routers and
	// SDKs sharing a ratio agree on a trace.
	ratio float64
	bound uint64

	hdr       batchHeader
	send      sendFunc
	batchSize int
	delay     time.Duration // the export schedule: a partial batch waits at most this
	timeout   time.Duration // one batch's export, retries included
	idle      func()        // closes the exporter's idle connections

	// queued counts spans queued and not yet exported or dropped, and
	// queuedBytes their buffers' capacity: the bounds QueueSize and
	// QueueBytes keep.
	queued      atomic.Int64
	queuedBytes atomic.Int64
	mu          sync.Mutex
	pending     []*[]byte // ended spans waiting for export, guarded by mu
	closed      bool      // Shutdown began: spans ending now are dropped; guarded by mu
	wake        chan struct{}
	bufs        sync.Pool // *[]byte span buffers

	stop    chan struct{}
	stopCtx context.Context // Shutdown's, set before stop closes
	flushc  chan chan struct{}
	done    chan struct{}
	once    sync.Once

	m    *metrics
	log  *slog.Logger
	warn rate.Sometimes // thins the export failure warning
}

// New returns the Tracer cfg configures, nil when tracing is off
// (cfg.OTLPEndpoint ""). It reads the OTEL_* variables the exporter
// honours (an invalid one is an error naming it) but does no I/O: the
// exporter connects when its first batch is due, and a collector that
// cannot be reached costs only dropped spans (docs/ARCHITECTURE.md,
// "Tracing").
func New(cfg Config, o Options) (*Tracer, error) {
	if !cfg.On() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	env, err := readEnv()
	if err != nil {
		return nil, err
	}
	t := &Tracer{
		ratio: cfg.SampleRatio, bound: uint64(cfg.SampleRatio * (1 << 63)),
		send: o.send, batchSize: env.batchSize, delay: env.delay, timeout: env.timeout, idle: func() {},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), flushc: make(chan chan struct{}), done: make(chan struct{}),
		m: newMetrics(o.Registerer), log: o.Logger, warn: rate.Sometimes{First: 1, Interval: time.Minute},
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.send == nil {
		u, _ := tracesURL(cfg.OTLPEndpoint) // Validate parsed it
		exp, err := newExporter(u.String(), env, o.Version)
		if err != nil {
			return nil, err
		}
		t.send, t.idle = exp.send, exp.client.CloseIdleConnections
	}
	// The service's name and version first, then OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES over them (a pod's name, a deployment's
	// environment): the OpenTelemetry SDK's resource reads them.
	res, err := resource.New(context.Background(),
		resource.WithAttributes(semconv.ServiceName("llmrouter"), semconv.ServiceVersion(o.Version)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	t.hdr = newBatchHeader(res.Attributes(), scope, o.Version, semconv.SchemaURL)
	go t.run()
	return t, nil
}

// keep is the sampling decision for a new trace.
func (t *Tracer) keep(id *[16]byte) bool {
	switch {
	case t.ratio >= 1:
		return true
	case t.ratio <= 0:
		return false
	}
	return binary.BigEndian.Uint64(id[8:])>>1 < t.bound
}

// buffer is a span buffer, to be given back with free.
func (t *Tracer) buffer() *[]byte {
	if p, ok := t.bufs.Get().(*[]byte); ok {
		return p
	}
	b := make([]byte, 0, 1024)
	return &b
}

// free gives a span buffer back for reuse.
func (t *Tracer) free(p *[]byte) {
	if cap(*p) <= maxSpanBuffer {
		t.bufs.Put(p)
	}
}

// enqueue queues an ended span's encoding for export, or drops it (and
// counts it) when QueueSize spans, or QueueBytes of them, already wait.
// It never waits.
func (t *Tracer) enqueue(b *[]byte) {
	size := int64(cap(*b))
	n, held := t.queued.Add(1), t.queuedBytes.Add(size)
	if n > QueueSize || held > QueueBytes {
		t.unqueue(1, size)
		t.m.queueFull.Inc()
		t.free(b)
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		t.unqueue(1, size)
		t.free(b)
		return
	}
	t.pending = append(t.pending, b)
	full := len(t.pending) >= t.batchSize
	t.mu.Unlock()
	if full {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// run is the exporter goroutine: it sends what waits when a batch is
// full or the schedule's delay has passed, and everything at Shutdown.
func (t *Tracer) run() {
	defer close(t.done)
	defer func() { t.idle() }()
	tick := time.NewTimer(t.delay)
	defer tick.Stop()
	for {
		select {
		case <-t.wake:
			t.exportAll(context.Background(), false)
			continue // the schedule's delay runs on for what is left
		case <-tick.C:
		case ch := <-t.flushc:
			t.exportAll(context.Background(), true)
			close(ch)
			continue
		case <-t.stop:
			t.exportAll(t.stopCtx, true)
			return
		}
		t.exportAll(context.Background(), true)
		tick.Reset(t.delay)
	}
}

// exportAll sends the spans waiting, a batch at a time, within ctx: the
// full batches, and with all the partial one that remains (the
// schedule's delay has passed, or everything must go). Spans that end
// meanwhile make batches of their own: a partial batch is sent once, so
// a busy router sends full batches, not a stream of small ones.
func (t *Tracer) exportAll(ctx context.Context, all bool) {
	for {
		t.mu.Lock()
		n := min(len(t.pending), t.batchSize)
		if n == 0 || (n < t.batchSize && !all) {
			t.mu.Unlock()
			return
		}
		batch := make([]*[]byte, n)
		copy(batch, t.pending)
		t.pending = append(t.pending[:0], t.pending[n:]...)
		t.mu.Unlock()
		t.export(ctx, batch)
		if n < t.batchSize {
			return
		}
	}
}

// export sends one batch and accounts for it: the bound is given back
// once it has been sent, and a batch (or the part of it) the collector
// did not take is counted and warned about, thinned.
func (t *Tracer) export(ctx context.Context, batch []*[]byte) {
	// A new body each time: the HTTP transport may still be reading a
	// request's body after its answer came. It holds no pointers, so it
	// costs the GC nothing but its bytes.
	body := t.hdr.encodeBatch(batch)
	n := int64(len(batch))
	var (
		rej int64
		why string
		err error
	)
	if ctx.Err() != nil {
		err = ctx.Err() // Shutdown's time is up: the rest is dropped
	} else {
		ectx, cancel := context.WithTimeout(ctx, t.timeout)
		rej, why, err = t.send(ectx, body)
		cancel()
	}
	var size int64
	for _, b := range batch {
		size += int64(cap(*b))
		t.free(b)
	}
	t.unqueue(n, size)
	if err != nil {
		rej, why = n, err.Error()
	}
	rej = min(max(rej, 0), n)
	t.m.exported.Add(float64(n - rej))
	if rej > 0 {
		t.m.exportFailed.Add(float64(rej))
		t.warn.Do(func() {
			t.log.Warn("tracing: spans could not be exported and were dropped (thinned: one warning a minute)",
				"spans", rej, "error", why)
		})
	}
}

// unqueue gives back n spans of size bytes to the queue's bounds.
func (t *Tracer) unqueue(n, size int64) {
	t.queued.Add(-n)
	t.queuedBytes.Add(-size)
}

// Waiting is how many ended spans wait for export (queued, or in the
// batch being sent): at most QueueSize. 0 for a nil Tracer.
func (t *Tracer) Waiting() int {
	if t == nil {
		return 0
	}
	return int(t.queued.Load())
}

// flush exports every span ended so far (tests).
func (t *Tracer) flush() {
	ch := make(chan struct{})
	select {
	case t.flushc <- ch:
		<-ch
	case <-t.done:
	}
}

// Shutdown exports the spans still queued, within ctx, and stops the
// exporter; spans ended afterwards are dropped, as are those ctx leaves
// no time for (counted). The daemon calls it after the drain, within
// shutdown_timeout (docs/ARCHITECTURE.md, "Reload and shutdown"). A nil
// Tracer has nothing to do.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		t.stopCtx = ctx
		close(t.stop)
	})
	<-t.done // each batch's send ends with ctx or its own timeout
	return ctx.Err()
}

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
