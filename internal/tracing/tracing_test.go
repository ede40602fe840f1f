package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/llmrouter/llmrouter/internal/reqctx"
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

// collector is an in-memory OTLP collector: it decodes every export
// request with the official generated types, as a real collector would.
type collector struct {
	t        testing.TB
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource []*commonpb.KeyValue
	scope    *commonpb.InstrumentationScope
	schema   string
	posts    int
}

func (c *collector) take(body []byte) {
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		c.t.Errorf("collector: an export that does not decode: %v", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.posts++
	for _, rs := range req.ResourceSpans {
		c.resource = rs.GetResource().GetAttributes()
		for _, ss := range rs.ScopeSpans {
			c.scope, c.schema = ss.Scope, ss.SchemaUrl
			c.spans = append(c.spans, ss.Spans...)
		}
	}
}

func (c *collector) send(_ context.Context, body []byte) (int64, string, error) {
	c.take(body)
	return 0, "", nil
}

func (c *collector) got() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...)
}

// newTest returns a Tracer exporting to an in-memory collector,
// sampling at ratio.
func newTest(t testing.TB, ratio float64, reg prometheus.Registerer) (*Tracer, *collector) {
	t.Helper()
	c := &collector{t: t}
	tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: ratio}, Options{Version: "v-test", Registerer: reg, send: c.send})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, c
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return "?"
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func wantAttrs(t *testing.T, what string, got []*commonpb.KeyValue, want map[string]string) {
	t.Helper()
	m := attrs(got)
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, m[k], v)
		}
	}
}

func hexID(b []byte) string { return hex.EncodeToString(b) }

// TestSpanTree: a request from a client with a traceparent is a server
// span of the client's trace under the client's span; its attempts are
// client spans under it, the failed one with error.type, the served one
// with usage and its first token; each attempt's traceparent is the one
// its provider receives.
func TestSpanTree(t *testing.T) {
	tr, col := newTest(t, 0, nil) // ratio 0: the client's sampled trace is kept all the same
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	in := http.Header{"Traceparent": {"00-" + clientTrace + "-" + clientSpan + "-01"}, "Tracestate": {"vendor=x"}}
	ctx, req := tr.Start(context.Background(), in, "messages", "")
	req.Model("claude-opus-4-1", "claude-*")
	req.SetKey("search-team")
	req.Refused("open-one", "open", 0)
	req.Refused("busy-one", "limited", 1500*time.Millisecond)
	if tid, sid := IDs(ctx); tid != clientTrace || sid == clientSpan || len(sid) != 16 {
		t.Errorf("the request's context carries %s/%s, want the client's trace and a span of its own", tid, sid)
	}

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
		a.End(o) // a second End is nothing
	}
	req.End(Answered{Status: 200, Provider: "bedrock-us", Type: "bedrock", Model: "claude-opus-4-1", Attempts: 2,
		Degraded: true, InputTokens: 12, OutputTokens: 34})
	tr.flush()

	spans := col.got()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3 (two attempts, the request)", len(spans))
	}
	a1, a2, server := spans[0], spans[1], spans[2]
	if server.Name != "messages claude-*" || server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span %q kind %v, want \"messages claude-*\" server", server.Name, server.Kind)
	}
	if got := hexID(server.TraceId); got != clientTrace {
		t.Errorf("server span's trace %s, want the client's %s", got, clientTrace)
	}
	if got := hexID(server.ParentSpanId); got != clientSpan || server.Flags&0x300 != 0x300 {
		t.Errorf("server span's parent %s (flags %#x), want the client's span %s, remote", got, server.Flags, clientSpan)
	}
	if server.TraceState != "vendor=x" || server.Flags&0xff != 1 {
		t.Errorf("server span's tracestate %q flags %#x, want the client's, sampled", server.TraceState, server.Flags)
	}
	if server.EndTimeUnixNano < server.StartTimeUnixNano || server.StartTimeUnixNano == 0 {
		t.Errorf("server span from %d to %d", server.StartTimeUnixNano, server.EndTimeUnixNano)
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
		if e.TimeUnixNano < server.StartTimeUnixNano || e.TimeUnixNano > server.EndTimeUnixNano {
			t.Errorf("event %s at %d, outside its span", e.Name, e.TimeUnixNano)
		}
	}
	if got, want := strings.Join(events, "; "), "llmrouter.refused open ; llmrouter.refused limited 1500; llmrouter.backoff  0"; got != want {
		t.Errorf("server events %q, want %q", got, want)
	}
	for i, a := range []*tracepb.Span{a1, a2} {
		if !bytes.Equal(a.ParentSpanId, server.SpanId) || a.Kind != tracepb.Span_SPAN_KIND_CLIENT || a.Name != "messages claude-opus-4-1" ||
			a.Flags&0x300 != 0x100 {
			t.Errorf("attempt %d: %q kind %v parent %x flags %#x, want a client span under the server span, parent local", i+1, a.Name, a.Kind, a.ParentSpanId, a.Flags)
		}
		want := "00-" + clientTrace + "-" + hexID(a.SpanId) + "-01"
		if got := sent[i].Get("traceparent"); got != want {
			t.Errorf("attempt %d sent traceparent %q, want %q", i+1, got, want)
		}
		if got := sent[i].Get("tracestate"); got != "vendor=x" {
			t.Errorf("attempt %d sent tracestate %q, want the client's", i+1, got)
		}
	}
	wantAttrs(t, "failed attempt", a1.Attributes, map[string]string{"error.type": "overloaded", "http.response.status_code": "529",
		"llmrouter.attempt": "1", "gen_ai.provider.name": "anthropic", "llmrouter.tier": "0", "llmrouter.hedge": "false"})
	if a1.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || a1.Status.GetMessage() != "anthropic messages: overloaded" {
		t.Errorf("failed attempt status %+v, want Error with its message", a1.Status)
	}
	wantAttrs(t, "served attempt", a2.Attributes, map[string]string{"llmrouter.key": "search-team", "gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": "34",
		"gen_ai.response.model": "claude-opus-4-1-20250805", "llmrouter.attempt": "2", "llmrouter.degraded": "true"})
	if _, ok := attrs(a2.Attributes)["error.type"]; ok || a2.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("served attempt has an error: %+v", a2.Status)
	}
	if len(a2.Events) != 1 || a2.Events[0].Name != "gen_ai.first_token" || attrs(a2.Events[0].Attributes)["gen_ai.server.time_to_first_token"] != "0.25" {
		t.Errorf("served attempt events %+v, want one gen_ai.first_token at 0.25 s", a2.Events)
	}
	res := attrs(col.resource)
	if res["service.name"] != "llmrouter" || res["service.version"] != "v-test" {
		t.Errorf("resource %v, want service.name llmrouter, service.version v-test", res)
	}
	if col.scope.GetName() != scope || col.scope.GetVersion() != "v-test" || !strings.HasPrefix(col.schema, "https://opentelemetry.io/schemas/") {
		t.Errorf("scope %v schema %q", col.scope, col.schema)
	}
}

// TestSampling: new traces are kept at sample_ratio; a client's
// unsampled traceparent is never kept, but its attempts still send a
// traceparent of that trace.
func TestSampling(t *testing.T) {
	tr, col := newTest(t, 0, nil)
	ctx, req := tr.Start(context.Background(), http.Header{}, "chat", "") // new trace, ratio 0
	_, a := req.Attempt(ctx, Try{Op: "chat", Model: "m"})
	a.End(Outcome{})
	req.End(Answered{Status: 200})
	if !req.On() || req.recording() {
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
	tr.flush()
	if n := len(col.got()); n != 0 {
		t.Errorf("%d spans exported, want none", n)
	}

	tr1, col1 := newTest(t, 1, nil)
	_, req = tr1.Start(context.Background(), http.Header{}, "embeddings", "")
	req.End(Answered{Status: 404, ErrorType: "model_not_found"})
	tr1.flush()
	if s := col1.got(); len(s) != 1 || s[0].Name != "embeddings" || s[0].Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR ||
		attrs(s[0].Attributes)["error.type"] != "model_not_found" || len(s[0].ParentSpanId) != 0 || s[0].Flags != 0x101 {
		t.Errorf("ratio 1: spans %+v, want one root embeddings span, error.type model_not_found, status not an error (a 4xx)", s)
	}
}

// TestRatioAgreesWithTheSDK: a new trace is kept exactly when the
// OpenTelemetry SDK's TraceIDRatioBased sampler at the same ratio keeps
// it, so that a router and the applications around it agree.
func TestRatioAgreesWithTheSDK(t *testing.T) {
	for _, ratio := range []float64{0.01, 0.25, 0.5, 0.9} {
		tr := &Tracer{ratio: ratio, bound: uint64(ratio * (1 << 63))}
		sdk := sdktrace.TraceIDRatioBased(ratio)
		kept := 0
		for range 20000 {
			id := newTraceID()
			want := sdk.ShouldSample(sdktrace.SamplingParameters{TraceID: trace.TraceID(id)}).Decision == sdktrace.RecordAndSample
			if got := tr.keep(&id); got != want {
				t.Fatalf("ratio %v, trace %x: kept %v, the SDK %v", ratio, id, got, want)
			}
			if want {
				kept++
			}
		}
		if share := float64(kept) / 20000; share < ratio*0.8 || share > ratio*1.2 {
			t.Errorf("ratio %v kept %.3f of new traces", ratio, share)
		}
	}
}

// TestTraceparent: W3C Trace Context's rules for reading a traceparent.
func TestTraceparent(t *testing.T) {
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for v, want := range map[string]string{ // "" when ignored; else sampled or not
		"00-" + tid + "-" + sid + "-01":                      "sampled",
		"00-" + tid + "-" + sid + "-00":                      "unsampled",
		"00-" + tid + "-" + sid + "-03":                      "sampled", // the random flag
		"01-" + tid + "-" + sid + "-01-what-comes-later":     "sampled", // a later version may say more
		"01-" + tid + "-" + sid + "-01":                      "sampled",
		"00-" + tid + "-" + sid + "-01-more":                 "",
		"ff-" + tid + "-" + sid + "-01":                      "",
		"00-" + strings.ToUpper(tid) + "-" + sid + "-01":     "",
		"00-00000000000000000000000000000000-" + sid + "-01": "",
		"00-" + tid + "-0000000000000000-01":                 "",
		"00-" + tid + "-" + sid:                              "",
		"00_" + tid + "-" + sid + "-01":                      "",
		"0x-" + tid + "-" + sid + "-01":                      "",
		"":                                                   "",
	} {
		tr, sp, sampled, ok := parseTraceparent(v)
		got := ""
		if ok {
			got = map[bool]string{true: "sampled", false: "unsampled"}[sampled]
			if hexID(tr[:]) != tid || hexID(sp[:]) != sid {
				t.Errorf("%q: read %x-%x", v, tr, sp)
			}
		}
		if got != want {
			t.Errorf("%q: %q, want %q", v, got, want)
		}
	}
	// A traceparent that is ignored starts a new trace, a root (its
	// parent id is not kept: FuzzSpans found that); so do two.
	tr, col := newTest(t, 1, nil)
	for _, h := range []http.Header{
		{"Traceparent": {"00-" + tid + "-" + sid + "-0"}},
		{"Traceparent": {"00-" + tid + "-" + sid + "-01", "00-" + tid + "-" + sid + "-01"}},
		{"Traceparent": {"00-00000000000000000000000000000000-" + sid + "-01"}},
	} {
		ctx, r := tr.Start(context.Background(), h, "chat", "")
		if got, _ := IDs(ctx); got == tid || len(got) != 32 {
			t.Errorf("%v: trace %s, want a new one", h, got)
		}
		r.End(Answered{})
	}
	tr.flush()
	for _, s := range col.got() {
		if len(s.ParentSpanId) != 0 || s.Flags&flagsIsRemote != 0 {
			t.Errorf("a new trace's span has parent %x, flags %#x; want a root", s.ParentSpanId, s.Flags)
		}
	}
	// A tracestate that does not parse is dropped; several lines are one.
	if got := tracestate(http.Header{"Tracestate": {"a=1", "b=2"}}); got != "a=1,b=2" {
		t.Errorf("tracestate of two lines %q", got)
	}
	if got := tracestate(http.Header{"Tracestate": {"not a list member"}}); got != "" {
		t.Errorf("invalid tracestate kept as %q", got)
	}
}

// TestValuesAreCleaned: a client's model name or a provider's message in
// invalid UTF-8, or too long, still makes a span the official decoder
// takes, cut at maxValueLen bytes on a rune's edge.
func TestValuesAreCleaned(t *testing.T) {
	tr, col := newTest(t, 1, nil)
	long := strings.Repeat("é", maxValueLen) // 2 bytes a rune: the cut falls inside one
	ctx, r := tr.Start(context.Background(), nil, "chat", "")
	r.Model("gpt-\xff\xfe", "gpt-*")
	_, a := r.Attempt(ctx, Try{Op: "chat", Provider: "p", Type: "openai", Model: long})
	a.End(Outcome{Kind: "server_error", Status: 500, Message: "bad \xc3\x28 " + long})
	r.End(Answered{Status: 502, ErrorType: "upstream_error"})
	tr.flush()
	spans := col.got()
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want 2", len(spans))
	}
	if got := attrs(spans[1].Attributes)["gen_ai.request.model"]; got != "gpt-\uFFFD" {
		t.Errorf("requested model %q", got)
	}
	if got := attrs(spans[0].Attributes)["gen_ai.request.model"]; len(got) != maxValueLen || got != long[:maxValueLen] {
		t.Errorf("long model: %d bytes", len(got))
	}
	if got := spans[0].Status.GetMessage(); len(got) > maxValueLen || !strings.HasPrefix(got, "bad \uFFFD( ") {
		t.Errorf("status message of %d bytes: %q", len(got), got)
	}
}

// TestEventsBounded: past maxEvents a span's events are counted, not
// kept.
func TestEventsBounded(t *testing.T) {
	tr, col := newTest(t, 1, nil)
	_, r := tr.Start(context.Background(), nil, "chat", "")
	for range maxEvents + 5 {
		r.Backoff(time.Millisecond)
	}
	r.End(Answered{Status: 200})
	tr.flush()
	if s := col.got(); len(s) != 1 || len(s[0].Events) != maxEvents || s[0].DroppedEventsCount != 5 {
		t.Fatalf("spans %v, want one with %d events and 5 dropped", s, maxEvents)
	}
}

// blocking is a collector that holds every export until released.
type blocking struct {
	release chan struct{}
	mu      sync.Mutex
	got     int
}

func (b *blocking) send(ctx context.Context, body []byte) (int64, string, error) {
	select {
	case <-b.release:
	case <-ctx.Done():
		return 0, "", ctx.Err()
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		return 0, "", err
	}
	b.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			b.got += len(ss.Spans)
		}
	}
	b.mu.Unlock()
	return 0, "", nil
}

// TestQueueBound: while the collector does not answer, at most QueueSize
// spans wait; the rest are dropped and counted, and the request path
// never waits.
func TestQueueBound(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	exp := &blocking{release: make(chan struct{})}
	tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, Options{Registerer: reg, send: exp.send})
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
	// Ended after Shutdown: dropped, nothing waits.
	_, r := tr.Start(context.Background(), nil, "chat", "")
	r.End(Answered{Status: 200})
	if got := tr.queued.Load(); got != 0 {
		t.Errorf("a span ended after Shutdown is queued: %d", got)
	}
}

// httpCollector is an OTLP/HTTP collector: it checks what an exporter
// must send, decodes the export and answers with answer(n), n counting
// its posts from 1 (nil: 200, an empty response).
func httpCollector(t *testing.T, answer func(n int, w http.ResponseWriter) bool) (*httptest.Server, *collector, *[]http.Header) {
	col := &collector{t: t}
	var (
		mu  sync.Mutex
		n   int
		hdr []http.Header
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		hdr = append(hdr, r.Header.Clone())
		mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector: %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("collector: %v", err)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Errorf("collector: %v", err)
		}
		if answer != nil && answer(k, w) {
			return
		}
		col.take(b)
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ = proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, col, &hdr
}

// oneRequest makes one request's two spans.
func oneRequest(tr *Tracer) {
	ctx, r := tr.Start(context.Background(), nil, "chat", "")
	r.Model("gpt-4o-mini", "gpt-4o-mini")
	_, a := r.Attempt(ctx, Try{Op: "chat", Model: "gpt-4o-mini-2024-07-18"})
	a.End(Outcome{})
	r.End(Answered{Status: 200})
}

// TestOTLPExport: the real exporter posts protobuf to the endpoint's
// /v1/traces, gzipped when asked, with the headers
// OTEL_EXPORTER_OTLP_HEADERS names; the config's endpoint wins over
// OTEL_EXPORTER_OTLP_ENDPOINT.
func TestOTLPExport(t *testing.T) {
	for _, gz := range []string{"none", "gzip"} {
		t.Run(gz, func(t *testing.T) {
			srv, col, hdr := httpCollector(t, nil)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20collector-token, X-Tenant = a%2Cb")
			t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", gz)
			t.Setenv("OTEL_SERVICE_NAME", "router-eu")
			reg := prometheus.NewPedanticRegistry()
			tr, err := New(Config{OTLPEndpoint: srv.URL, SampleRatio: 1}, Options{Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			oneRequest(tr)
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tr.Shutdown(sctx); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range col.got() {
				names = append(names, s.Name)
			}
			if strings.Join(names, ",") != "chat gpt-4o-mini-2024-07-18,chat gpt-4o-mini" || len(*hdr) != 1 {
				t.Fatalf("collector got spans %v in %d posts; want both spans in one", names, len(*hdr))
			}
			h := (*hdr)[0]
			if h.Get("Authorization") != "Bearer collector-token" || h.Get("X-Tenant") != "a,b" || !strings.HasPrefix(h.Get("User-Agent"), "llmrouter/") {
				t.Errorf("collector got headers %v", h)
			}
			if (h.Get("Content-Encoding") == "gzip") != (gz == "gzip") {
				t.Errorf("Content-Encoding %q with compression %s", h.Get("Content-Encoding"), gz)
			}
			if got := attrs(col.resource)["service.name"]; got != "router-eu" {
				t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", got)
			}
			if got := testutil.ToFloat64(tr.m.exported); got != 2 {
				t.Errorf("exported %v, want 2", got)
			}
		})
	}
}

// TestRetryAndPartialSuccess: a collector that answers 503 with a
// Retry-After gets the batch again; one that takes a batch in part has
// the rest counted as dropped; one that refuses it (400) is not asked
// again.
func TestRetryAndPartialSuccess(t *testing.T) {
	srv, col, hdr := httpCollector(t, func(n int, w http.ResponseWriter) bool {
		switch n {
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		case 2:
			b, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{PartialSuccess: &collectorpb.ExportTracePartialSuccess{
				RejectedSpans: 1, ErrorMessage: "one span too old"}})
			_, _ = w.Write(b)
			return true
		case 3:
			w.WriteHeader(http.StatusBadRequest)
			return true
		}
		return false
	})
	reg := prometheus.NewPedanticRegistry()
	tr, err := New(Config{OTLPEndpoint: srv.URL, SampleRatio: 1}, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	start := time.Now()
	oneRequest(tr)
	tr.flush() // posts 1 (503) and 2 (a partial success)
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("retried after %v, want the collector's Retry-After (1 s)", d)
	}
	oneRequest(tr)
	tr.flush() // post 3: 400, not retried
	oneRequest(tr)
	tr.flush() // post 4: taken
	if len(*hdr) != 4 || len(col.got()) != 2 {
		t.Errorf("%d posts, %d spans taken; want 4 posts, 2 spans", len(*hdr), len(col.got()))
	}
	if e, f := testutil.ToFloat64(tr.m.exported), testutil.ToFloat64(tr.m.exportFailed); e != 3 || f != 3 {
		t.Errorf("exported %v, export_failed %v; want 3 (one of the first pair, the last pair) and 3", e, f)
	}
}

// TestEnv: the OTEL_* variables the exporter honours, and the errors an
// invalid one gives.
func TestEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2500")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1500")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "100000")
	e, err := readEnv()
	if err != nil || e.timeout != 1500*time.Millisecond || e.delay != 50*time.Millisecond || e.batchSize != QueueSize {
		t.Errorf("readEnv = %+v, %v", e, err)
	}
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_COMPRESSION":        "zstd",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":     "novalue",
		"OTEL_EXPORTER_OTLP_TIMEOUT":            "10s",
		"OTEL_BSP_SCHEDULE_DELAY":               "0",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        "/nonexistent/ca.pem",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/nonexistent/cert.pem",
	} {
		t.Run(k, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "")
			t.Setenv(k, v)
			_, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, Options{})
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
			}
		})
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

// TestConcurrentSpans: requests on many goroutines, a hedge's legs
// recording on one request at once; every span is exported whole (run
// with -race).
func TestConcurrentSpans(t *testing.T) {
	tr, col := newTest(t, 1, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				ctx, r := tr.Start(context.Background(), nil, "chat", "")
				r.Model("m", "m")
				var legs sync.WaitGroup
				for leg := range 2 {
					legs.Go(func() {
						_, a := r.Attempt(ctx, Try{Op: "chat", Model: "m", N: leg + 1, Hedge: leg == 1})
						r.Refused("p", "limited", time.Duration(rand.IntN(5))*time.Millisecond)
						a.FirstToken(time.Millisecond)
						a.End(Outcome{InputTokens: int64(g), OutputTokens: int64(i)})
					})
				}
				legs.Wait()
				r.End(Answered{Status: 200, Attempts: 2})
			}
		})
	}
	wg.Wait()
	tr.flush()
	if n := len(col.got()); n != 8*50*3 {
		t.Errorf("%d spans exported, want %d", n, 8*50*3)
	}
}

// BenchmarkRequestSpans is the tracing a request with one attempt costs,
// alone: its server span continued from a traceparent, named after its
// model, an attempt span whose traceparent is injected, both ended with
// their attributes; the loop waits (off the CPU) for the exporter rather
// than let a span be dropped. "encode" hands every batch to a collector that
// discards it (the spans' cost); "otlp" posts each batch to a collector
// in this process that reads and discards it. cpu-ns/op counts every
// goroutine.
func BenchmarkRequestSpans(b *testing.B) {
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer col.Close()
	discard := func(context.Context, []byte) (int64, string, error) { return 0, "", nil }
	for _, c := range []struct {
		name string
		send sendFunc
	}{{"off", nil}, {"encode", discard}, {"otlp", nil}} {
		b.Run(c.name, func(b *testing.B) {
			var tr *Tracer
			if c.name != "off" {
				var err error
				tr, err = New(Config{OTLPEndpoint: col.URL, SampleRatio: 1}, Options{send: c.send})
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
				for tr != nil && tr.queued.Load() > QueueSize-2 {
					// The exporter is behind (a loop this tight makes
					// spans faster than any request does): wait for it,
					// so that every span's export is in cpu-ns/op.
					time.Sleep(20 * time.Microsecond)
				}
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
	tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, Options{send: exp.send})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC() // span buffers pooled by earlier tests are gone
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

// longState is a valid tracestate of n members, each key and value as
// long as W3C allows (about 16 KB for 32).
func longState(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		k := "k" + strconv.Itoa(i)
		b.WriteString(k + strings.Repeat("a", 256-len(k)) + "=" + strings.Repeat("v", 256))
	}
	return b.String()
}

// TestLongTracestate: a client's tracestate reaches every provider as
// received, but one over 512 bytes is exported empty (cut, it would be
// invalid): a 16 KB one was copied into every span (issue 31, finding 5).
func TestLongTracestate(t *testing.T) {
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	short := "k" + strings.Repeat("a", 254) + "=" + strings.Repeat("v", 256) // 512 bytes
	for _, tt := range []struct{ state, exported string }{
		{short, short},
		{short + ",b=1", ""},
		{longState(32), ""},
	} {
		tr, col := newTest(t, 1, nil)
		in := http.Header{"Traceparent": {"00-" + clientTrace + "-" + clientSpan + "-01"}, "Tracestate": {tt.state}}
		ctx, req := tr.Start(context.Background(), in, "chat", "")
		actx, a := req.Attempt(ctx, Try{Op: "chat", Provider: "p", Type: "openai", Model: "m", N: 1})
		h := http.Header{}
		Inject(actx, h)
		a.End(Outcome{})
		req.End(Answered{Status: 200})
		tr.flush()
		if got := h.Get("Tracestate"); got != tt.state {
			t.Errorf("%d bytes: the provider got a tracestate of %d bytes, want it whole", len(tt.state), len(got))
		}
		spans := col.got()
		if len(spans) != 2 {
			t.Fatalf("got %d spans, want 2", len(spans))
		}
		for _, s := range spans {
			if s.TraceState != tt.exported {
				t.Errorf("%d bytes: span %q exported with a tracestate of %d bytes, want %d", len(tt.state), s.Name, len(s.TraceState), len(tt.exported))
			}
		}
	}
}

// TestQueueBytes: while the collector does not answer, the spans waiting
// hold at most QueueBytes: spans of 64 KiB each fill it long before
// QueueSize of them, and the rest are dropped and counted.
func TestQueueBytes(t *testing.T) {
	exp := &blocking{release: make(chan struct{})}
	tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, Options{send: exp.send})
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 10
	for range QueueSize {
		b := make([]byte, 100, size)
		tr.enqueue(&b)
	}
	if got, want := tr.queued.Load(), int64(QueueBytes/size); got != want || tr.queuedBytes.Load() != want*size {
		t.Errorf("queued %d spans of %d bytes, want %d", got, tr.queuedBytes.Load(), want)
	}
	if got := testutil.ToFloat64(tr.m.queueFull); got != float64(QueueSize-QueueBytes/size) {
		t.Errorf("dropped queue_full %v, want %d", got, QueueSize-QueueBytes/size)
	}
	close(exp.release)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tr.queued.Load() != 0 || tr.queuedBytes.Load() != 0 {
		t.Errorf("after Shutdown %d spans of %d bytes wait, want none", tr.queued.Load(), tr.queuedBytes.Load())
	}
}

// TestQueueMemoryLongTracestate is TestQueueMemory with the hostile
// client of issue 31, finding 5: a valid 16 KB tracestate on every
// request, the collector stuck. It held 91 MB.
func TestQueueMemoryLongTracestate(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures differ under -race")
	}
	exp := &blocking{release: make(chan struct{})}
	tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, Options{send: exp.send})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	in := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "Tracestate": {longState(32)}}
	before := heap()
	for range 2 * QueueSize {
		ctx, r := tr.Start(context.Background(), in, "chat", "")
		_, a := r.Attempt(ctx, Try{Op: "chat", Provider: "openai", Type: "openai", Model: "gpt-4o-mini", N: 1})
		a.End(Outcome{})
		r.End(Answered{Status: 200})
	}
	held := heap() - before
	t.Logf("%d spans waiting hold %d KiB", tr.queued.Load(), held>>10)
	if held > 8<<20 {
		t.Errorf("the queue holds %d MiB, want under 8", held>>20)
	}
	close(exp.release)
	_ = tr.Shutdown(context.Background())
}

// TestSpanPassesOn: an attempt's span passes on the cause of the
// context it rides on (internal/reqctx's, which context.Cause cannot
// see) and links contexts derived from it through that context's
// AfterFunc (docs/ARCHITECTURE.md, "Request contexts").
func TestSpanPassesOn(t *testing.T) {
	tr, _ := newTest(t, 1, nil)
	var attempt reqctx.Ctx
	rctx, req := tr.Start(context.Background(), http.Header{}, "chat", "")
	attempt.Init(rctx)
	actx, a := req.Attempt(&attempt, Try{Op: "chat", Model: "m"})
	defer req.End(Answered{Status: 200})
	defer a.End(Outcome{})
	derived, cancel := context.WithCancel(actx)
	defer cancel()
	cause := errors.New("no first token")
	attempt.Cancel(cause)
	if got := actx.(interface{ Cause() error }).Cause(); got != cause {
		t.Errorf("span's Cause() = %v, want %v", got, cause)
	}
	<-derived.Done() // ended through AfterFunc
	if derived.Err() != context.Canceled {
		t.Errorf("derived context's err %v, want Canceled", derived.Err())
	}
}

// TestSpanPassesWatchOn: a span over a context that watches without an
// allocation (internal/reqctx's Watch, which the upstream exchange looks
// for) is such a context too, and its watches are that context's; a span
// over any other context is not one. Without it, tracing sent every
// upstream exchange's watch through context.AfterFunc
// (TestAllocationBudgets' served-traced in internal/proxy).
func TestSpanPassesWatchOn(t *testing.T) {
	type watcherCtx interface {
		context.Context
		Watch(f func()) uint64
		Unwatch(id uint64) bool
	}
	tr, _ := newTest(t, 0, nil)
	var server, attempt reqctx.Ctx
	server.Init(context.Background())
	rctx, req := tr.Start(&server, http.Header{}, "chat", "")
	defer req.End(Answered{Status: 200})
	if _, ok := rctx.(watcherCtx); !ok {
		t.Errorf("the request's span over a reqctx.Ctx (%T) does not pass Watch on", rctx)
	}
	attempt.Init(rctx)
	actx, a := req.Attempt(&attempt, Try{Op: "chat", Model: "m"})
	defer a.End(Outcome{})
	w, ok := actx.(watcherCtx)
	if !ok {
		t.Fatalf("the attempt's span over a reqctx.Ctx (%T) does not pass Watch on", actx)
	}
	kept := w.Watch(func() { t.Error("an unwatched function ran") })
	if !w.Unwatch(kept) {
		t.Error("Unwatch of a live watch reported it had run")
	}
	rang := make(chan struct{})
	w.Watch(func() { close(rang) })
	attempt.Cancel(errors.New("attempt over"))
	select {
	case <-rang:
	default:
		t.Error("the attempt ended and its span's watch did not run")
	}
	if got := w.Watch(func() {}); got != 0 {
		t.Errorf("Watch on an ended context gave id %d, want 0", got)
	}
	plain, req2 := tr.Start(context.Background(), http.Header{}, "chat", "")
	defer req2.End(Answered{Status: 200})
	if _, ok := plain.(watcherCtx); ok {
		t.Errorf("a span over context.Background (%T) claims to watch", plain)
	}
}
