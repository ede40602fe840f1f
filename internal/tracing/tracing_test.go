package tracing

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

// TestMain fails the package's tests if any goroutine outlives them: a
// Tracer's exporter goroutine ends with Shutdown.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // a substring of the error; "" for none
	}{
		{"off", Config{SampleRatio: 1}, ""},
		{"off, ratio 0", Config{}, ""},
		{"collector", Config{OTLPEndpoint: "http://otel-collector:4318", SampleRatio: 0.25}, ""},
		{"https with a path", Config{OTLPEndpoint: "https://otlp.example.com/otlp/v1/traces", SampleRatio: 1}, ""},
		{"no scheme", Config{OTLPEndpoint: "otel-collector:4318", SampleRatio: 1}, "tracing.otlp_endpoint: must be an http:// or https:// URL"},
		{"grpc scheme", Config{OTLPEndpoint: "grpc://otel:4317", SampleRatio: 1}, "tracing.otlp_endpoint"},
		{"no host", Config{OTLPEndpoint: "http:///v1/traces", SampleRatio: 1}, "tracing.otlp_endpoint"},
		{"credentials", Config{OTLPEndpoint: "http://u:secret@otel:4318", SampleRatio: 1}, "without credentials"},
		{"ratio above 1", Config{SampleRatio: 1.5}, "tracing.sample_ratio: must be between 0 and 1, got 1.5"},
		{"ratio negative", Config{SampleRatio: -0.1}, "tracing.sample_ratio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

func TestTracesURL(t *testing.T) {
	for ep, want := range map[string]string{
		"http://otel:4318":                  "http://otel:4318/v1/traces",
		"http://otel:4318/":                 "http://otel:4318/v1/traces",
		"https://otlp.example.com/otlp":     "https://otlp.example.com/otlp/v1/traces",
		"http://otel:4318/custom/v1/traces": "http://otel:4318/custom/v1/traces",
	} {
		u, err := tracesURL(ep)
		if err != nil || u.String() != want {
			t.Errorf("tracesURL(%q) = %v, %v; want %s", ep, u, err, want)
		}
	}
}

// TestOffAllocatesNothing: tracing off, the request path's calls cost no
// allocation (TestAllocationBudgets in internal/proxy holds the whole
// path to it).
func TestOffAllocatesNothing(t *testing.T) {
	tr, err := New(Config{SampleRatio: 1}, Options{})
	if tr != nil || err != nil {
		t.Fatalf("New(off) = %v, %v; want nil, nil", tr, err)
	}
	h := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, r := tr.Start(ctx, h, "chat", "")
		r.Model("gpt-4o-mini", "gpt-4o-mini")
		r.SetKey("team")
		r.Refused("a", "open", time.Second)
		r.Backoff(time.Second)
		c, a := r.Attempt(c, Try{Op: "chat", Provider: "a", Model: "m"})
		Inject(c, h)
		a.FirstToken(time.Millisecond)
		a.End(Outcome{Kind: "overloaded"})
		r.End(Answered{Status: 200})
	})
	if allocs != 0 {
		t.Errorf("tracing off: %v allocations per request, want 0", allocs)
	}
	if len(h["Traceparent"]) != 1 {
		t.Errorf("Inject with tracing off changed the headers: %v", h)
	}
}

// newTest returns a Tracer exporting to an in-memory exporter, sampling
// at ratio.
func newTest(t testing.TB, ratio float64, reg prometheus.Registerer) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: ratio}, Options{Version: "v-test", Registerer: reg, exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func wantAttrs(t *testing.T, what string, got []attribute.KeyValue, want map[string]string) {
	t.Helper()
	m := attrs(got)
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, m[k], v)
		}
	}
}

// TestSpanTree: a request from a client with a traceparent is a server
// span of the client's trace under the client's span; its attempts are
// client spans under it, the failed one with error.type, the served one
// with usage and its first token; each attempt's traceparent is the one
// its provider receives.
func TestSpanTree(t *testing.T) {
	tr, exp := newTest(t, 0, nil) // ratio 0: the client's sampled trace is kept all the same
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	in := http.Header{"Traceparent": {"00-" + clientTrace + "-" + clientSpan + "-01"}, "Tracestate": {"vendor=x"}}
	ctx, req := tr.Start(context.Background(), in, "messages", "")
	req.Model("claude-opus-4-1", "claude-*")
	req.SetKey("search-team")
	req.Refused("open-one", "open", 0)
	req.Refused("busy-one", "limited", 1500*time.Millisecond)

	var sent []http.Header
	for i, o := range []Outcome{
		{Kind: "overloaded", Status: 529, Message: "anthropic messages: overloaded"},
		{Model: "claude-opus-4-1-20250805", InputTokens: 12, OutputTokens: 34},
	} {
		actx, a := req.Attempt(ctx, Try{Op: "messages", Provider: []string{"anthropic", "bedrock-us"}[i],
			Type: []string{"anthropic", "bedrock"}[i], Model: "claude-opus-4-1", Tier: i, N: i + 1, Degraded: i > 0})
		h := http.Header{}
		Inject(actx, h)
		sent = append(sent, h)
		if i == 1 {
			a.FirstToken(250 * time.Millisecond)
		} else {
			req.Backoff(0)
		}
		a.End(o)
	}
	req.End(Answered{Status: 200, Provider: "bedrock-us", Type: "bedrock", Model: "claude-opus-4-1", Attempts: 2,
		Degraded: true, InputTokens: 12, OutputTokens: 34})
	if err := tr.tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3 (two attempts, the request)", len(spans))
	}
	a1, a2, server := spans[0], spans[1], spans[2]
	if server.Name != "messages claude-*" || server.SpanKind != trace.SpanKindServer {
		t.Errorf("server span %q kind %v, want \"messages claude-*\" server", server.Name, server.SpanKind)
	}
	if got := server.SpanContext.TraceID().String(); got != clientTrace {
		t.Errorf("server span's trace %s, want the client's %s", got, clientTrace)
	}
	if got := server.Parent.SpanID().String(); got != clientSpan || !server.Parent.IsRemote() {
		t.Errorf("server span's parent %s (remote %v), want the client's span %s", got, server.Parent.IsRemote(), clientSpan)
	}
	wantAttrs(t, "server", server.Attributes, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-opus-4-1", "gen_ai.response.model": "claude-opus-4-1",
		"gen_ai.provider.name": "aws.bedrock", "llmrouter.attempt": "2",
		"llmrouter.degraded": "true", "llmrouter.key": "search-team", "gen_ai.usage.output_tokens": "34",
		"http.response.status_code": "200",
	})
	var events []string
	for _, e := range server.Events {
		events = append(events, e.Name+" "+attrs(e.Attributes)["llmrouter.reason"]+" "+attrs(e.Attributes)["llmrouter.wait_ms"])
	}
	if got, want := strings.Join(events, "; "), "llmrouter.refused open ; llmrouter.refused limited 1500; llmrouter.backoff  0"; got != want {
		t.Errorf("server events %q, want %q", got, want)
	}
	for i, a := range []tracetest.SpanStub{a1, a2} {
		if a.Parent.SpanID() != server.SpanContext.SpanID() || a.SpanKind != trace.SpanKindClient || a.Name != "messages claude-opus-4-1" {
			t.Errorf("attempt %d: %q kind %v parent %s, want a client span under the server span", i+1, a.Name, a.SpanKind, a.Parent.SpanID())
		}
		want := "00-" + clientTrace + "-" + a.SpanContext.SpanID().String() + "-01"
		if got := sent[i].Get("traceparent"); got != want {
			t.Errorf("attempt %d sent traceparent %q, want %q", i+1, got, want)
		}
		if got := sent[i].Get("tracestate"); got != "vendor=x" {
			t.Errorf("attempt %d sent tracestate %q, want the client's", i+1, got)
		}
	}
	wantAttrs(t, "failed attempt", a1.Attributes, map[string]string{"error.type": "overloaded", "http.response.status_code": "529",
		"llmrouter.attempt": "1", "gen_ai.provider.name": "anthropic", "llmrouter.tier": "0", "llmrouter.hedge": "false"})
	if a1.Status.Code != codes.Error || a1.Status.Description != "anthropic messages: overloaded" {
		t.Errorf("failed attempt status %+v, want Error with its message", a1.Status)
	}
	wantAttrs(t, "served attempt", a2.Attributes, map[string]string{"llmrouter.key": "search-team", "gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": "34",
		"gen_ai.response.model": "claude-opus-4-1-20250805", "llmrouter.attempt": "2", "llmrouter.degraded": "true"})
	if _, ok := attrs(a2.Attributes)["error.type"]; ok || a2.Status.Code == codes.Error {
		t.Errorf("served attempt has an error: %+v", a2.Status)
	}
	if len(a2.Events) != 1 || a2.Events[0].Name != "gen_ai.first_token" || attrs(a2.Events[0].Attributes)["gen_ai.server.time_to_first_token"] != "0.25" {
		t.Errorf("served attempt events %+v, want one gen_ai.first_token at 0.25 s", a2.Events)
	}
	if got := server.Resource.Set(); got.Len() == 0 {
		t.Error("no resource")
	} else if v, _ := got.Value("service.name"); v.AsString() != "llmrouter" {
		t.Errorf("service.name %q, want llmrouter", v.AsString())
	} else if v, _ := got.Value("service.version"); v.AsString() != "v-test" {
		t.Errorf("service.version %q, want v-test", v.AsString())
	}
}

// TestSampling: new traces are kept at sample_ratio; a client's
// unsampled traceparent is never kept, but its attempts still send a
// traceparent of that trace.
func TestSampling(t *testing.T) {
	tr, exp := newTest(t, 0, nil)
	ctx, req := tr.Start(context.Background(), http.Header{}, "chat", "") // new trace, ratio 0
	_, a := req.Attempt(ctx, Try{Op: "chat", Model: "m"})
	a.End(Outcome{})
	req.End(Answered{Status: 200})
	if !req.On() || req.span.IsRecording() {
		t.Errorf("a new trace at ratio 0 is recording")
	}
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	in := http.Header{"Traceparent": {"00-" + clientTrace + "-00f067aa0ba902b7-00"}}
	ctx, req = tr.Start(context.Background(), in, "chat", "")
	actx, a := req.Attempt(ctx, Try{Op: "chat", Model: "m"})
	h := http.Header{}
	Inject(actx, h)
	a.End(Outcome{})
	req.End(Answered{Status: 200})
	if got := h.Get("traceparent"); !strings.HasPrefix(got, "00-"+clientTrace+"-") || !strings.HasSuffix(got, "-00") || strings.Contains(got, "00f067aa0ba902b7") {
		t.Errorf("unsampled attempt sent %q, want the client's trace, a span of its own, unsampled", got)
	}
	_ = tr.tp.ForceFlush(context.Background())
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans exported, want none", n)
	}

	tr1, exp1 := newTest(t, 1, nil)
	_, req = tr1.Start(context.Background(), http.Header{}, "embeddings", "")
	req.End(Answered{Status: 404, ErrorType: "model_not_found"})
	_ = tr1.tp.ForceFlush(context.Background())
	if s := exp1.GetSpans(); len(s) != 1 || s[0].Name != "embeddings" || s[0].Status.Code == codes.Error || attrs(s[0].Attributes)["error.type"] != "model_not_found" {
		t.Errorf("ratio 1: spans %+v, want one embeddings span, error.type model_not_found, status not an error (a 4xx)", s)
	}
}

// blocking is an exporter that holds every batch until released.
type blocking struct {
	release chan struct{}
	mu      sync.Mutex
	got     int
}

func (b *blocking) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	b.mu.Lock()
	b.got += len(spans)
	b.mu.Unlock()
	return nil
}
func (b *blocking) Shutdown(context.Context) error { return nil }

// TestQueueBound: while the collector does not answer, at most QueueSize
// spans wait; the rest are dropped and counted, and the request path
// never waits.
func TestQueueBound(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	exp := &blocking{release: make(chan struct{})}
	tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, Options{Registerer: reg, exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	const extra = 300
	start := time.Now()
	for range QueueSize + extra {
		_, r := tr.Start(context.Background(), nil, "chat", "")
		r.End(Answered{Status: 200})
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("ending %d spans took %v with the exporter stuck", QueueSize+extra, d)
	}
	if got := testutil.ToFloat64(tr.m.queueFull); got != extra {
		t.Errorf("dropped queue_full %v, want %d", got, extra)
	}
	if got := tr.queued.Load(); got != QueueSize {
		t.Errorf("queued %d, want %d", got, QueueSize)
	}
	close(exp.release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if exp.got != QueueSize || testutil.ToFloat64(tr.m.exported) != QueueSize || tr.queued.Load() != 0 {
		t.Errorf("exported %d (metric %v), queued %d; want %d, %d, 0", exp.got, testutil.ToFloat64(tr.m.exported), tr.queued.Load(), QueueSize, QueueSize)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP llmrouter_tracing_spans_dropped_total Spans dropped: the export queue was full (queue_full) or the collector could not be reached or refused them (export_failed).
# TYPE llmrouter_tracing_spans_dropped_total counter
llmrouter_tracing_spans_dropped_total{reason="export_failed"} 0
llmrouter_tracing_spans_dropped_total{reason="queue_full"} 300
`), "llmrouter_tracing_spans_dropped_total"); err != nil {
		t.Error(err)
	}
}

// TestOTLPExport: the real exporter posts protobuf to the endpoint's
// /v1/traces, with the headers OTEL_EXPORTER_OTLP_HEADERS names; the
// config's endpoint wins over OTEL_EXPORTER_OTLP_ENDPOINT.
func TestOTLPExport(t *testing.T) {
	var (
		mu    sync.Mutex
		names []string
		paths []string
		auth  []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("collector: %v", err)
		}
		mu.Lock()
		paths = append(paths, r.URL.Path)
		auth = append(auth, r.Header.Get("Authorization"))
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ = proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20collector-token")
	reg := prometheus.NewPedanticRegistry()
	tr, err := New(Config{OTLPEndpoint: srv.URL, SampleRatio: 1}, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, r := tr.Start(context.Background(), nil, "chat", "")
	r.Model("gpt-4o-mini", "gpt-4o-mini")
	_, a := r.Attempt(ctx, Try{Op: "chat", Model: "gpt-4o-mini-2024-07-18"})
	a.End(Outcome{})
	r.End(Answered{Status: 200})
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(names, ",") != "chat gpt-4o-mini-2024-07-18,chat gpt-4o-mini" || len(paths) != 1 || paths[0] != "/v1/traces" || auth[0] != "Bearer collector-token" {
		t.Errorf("collector got spans %v at %v with Authorization %v; want both spans at /v1/traces with the env's header", names, paths, auth)
	}
	if got := testutil.ToFloat64(tr.m.exported); got != 2 {
		t.Errorf("exported %v, want 2", got)
	}
}

// TestCollectorDown: spans for a collector nobody listens on are dropped
// and counted, ending a span never waits, and Shutdown returns within its
// context.
func TestCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a closed port: connections are refused
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "200")
	tr, err := New(Config{OTLPEndpoint: "http://" + addr, SampleRatio: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 100 {
		_, r := tr.Start(context.Background(), nil, "chat", "")
		r.End(Answered{Status: 200})
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("100 spans took %v with the collector down", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start = time.Now()
	_ = tr.Shutdown(ctx)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Shutdown took %v, past its context", d)
	}
	if got := testutil.ToFloat64(tr.m.exportFailed); got != 100 {
		t.Errorf("dropped export_failed %v, want 100", got)
	}
}

// discardExporter takes every batch and keeps nothing.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkRequestSpans is the tracing a request with one attempt costs,
// alone: its server span continued from a traceparent, named after its
// model, an attempt span whose traceparent is injected, both ended with
// their attributes. "sdk" exports to an exporter that discards (the
// SDK's cost); "otlp" encodes every batch and posts it to a collector in
// this process that discards it. cpu-ns/op counts every goroutine.
func BenchmarkRequestSpans(b *testing.B) {
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer col.Close()
	for _, c := range []struct {
		name string
		exp  sdktrace.SpanExporter
	}{{"off", nil}, {"sdk", discardExporter{}}, {"otlp", nil}} {
		b.Run(c.name, func(b *testing.B) {
			var tr *Tracer
			if c.name != "off" {
				var err error
				tr, err = New(Config{OTLPEndpoint: col.URL, SampleRatio: 1}, Options{exporter: c.exp})
				if err != nil {
					b.Fatal(err)
				}
			}
			in := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
			out := http.Header{}
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				ctx, r := tr.Start(context.Background(), in, "chat", "")
				r.Model("gpt-4o-mini", "gpt-4o-mini")
				actx, a := r.Attempt(ctx, Try{Op: "chat", Provider: "openai", Type: "openai", Model: "gpt-4o-mini-2024-07-18", N: 1})
				Inject(actx, out)
				a.End(Outcome{Model: "gpt-4o-mini-2024-07-18", InputTokens: 20, OutputTokens: 6})
				r.End(Answered{Status: 200, Provider: "openai", Type: "openai", Model: "gpt-4o-mini-2024-07-18", Attempts: 1, InputTokens: 20, OutputTokens: 6})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := tr.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			if tr != nil {
				b.ReportMetric(testutil.ToFloat64(tr.m.queueFull)/float64(b.N), "dropped/op")
			}
		})
	}
}

// TestQueueMemory measures what a full queue holds: QueueSize spans of a
// request with a long failure message each (the attempt's attributes and
// a refusal event on top of the request's), the collector stuck. The
// figure is docs/ARCHITECTURE.md's ("Memory").
func TestQueueMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures differ under -race")
	}
	exp := &blocking{release: make(chan struct{})}
	tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, Options{exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	msg := strings.Repeat("x", 2*maxValueLen)
	for i := 0; tr.queued.Load() < QueueSize; i++ {
		ctx, r := tr.Start(context.Background(), nil, "chat", "")
		r.Model("gpt-4o-mini", "gpt-4o-mini")
		r.SetKey("search-team")
		r.Refused("openai", "limited", time.Second)
		_, a := r.Attempt(ctx, Try{Op: "chat", Provider: "openai", Type: "openai", Model: "gpt-4o-mini-2024-07-18", N: 1})
		a.End(Outcome{Kind: "overloaded", Status: 529, Message: msg})
		r.End(Answered{Status: 502, ErrorType: "upstream_error", Attempts: 1})
	}
	held := heap() - before
	t.Logf("a full queue (%d spans) holds %d KiB: %d bytes a span", QueueSize, held>>10, held/QueueSize)
	if held > 16<<20 {
		t.Errorf("a full queue holds %d MiB, want under 16", held>>20)
	}
	close(exp.release)
	_ = tr.Shutdown(context.Background())
}
