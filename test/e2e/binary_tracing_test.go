package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: it decodes every export
// request's protobuf and keeps the spans.
type collector struct {
	srv *httptest.Server

	mu       sync.Mutex // guards spans, resource
	spans    []*tracepb.Span
	resource map[string]string
}

func newCollector(t testing.TB) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collectorpb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector: %s %s (%s), want POST /v1/traces in protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("collector: decoding an export: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			c.resource = attrMap(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = fmt.Sprint(x.DoubleValue)
		}
	}
	return m
}

// trace waits up to 10 s for the spans of trace id (hex) to include a
// server span and want spans in all, and returns them: the server span
// and its children, in start order.
func (c *collector) trace(t testing.TB, id string, want int) (server *tracepb.Span, children []*tracepb.Span) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var all []*tracepb.Span
		c.mu.Lock()
		for _, s := range c.spans {
			if hex.EncodeToString(s.TraceId) == id {
				all = append(all, s)
			}
		}
		c.mu.Unlock()
		server, children = nil, nil
		for _, s := range all {
			if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				server = s
			}
		}
		if server != nil && len(all) >= want {
			for _, s := range all {
				if s != server && string(s.ParentSpanId) == string(server.SpanId) {
					children = append(children, s)
				}
			}
			slices.SortFunc(children, func(a, b *tracepb.Span) int { return int(a.StartTimeUnixNano - b.StartTimeUnixNano) })
			return server, children
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d spans after 10 s, want %d with a server span", id, len(all), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverTraces returns the trace ids of the server spans received so far.
func (c *collector) serverTraces() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, s := range c.spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			ids = append(ids, hex.EncodeToString(s.TraceId))
		}
	}
	return ids
}

// postTraced sends one chat request for "m" with the headers h and reads
// the whole answer.
func postTraced(t testing.TB, p *routerProc, stream bool, h map[string]string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.api+"/v1/chat/completions", strings.NewReader(chatBody(stream)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("got %d %s, want 200", resp.StatusCode, body)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// traceparent makes a sampled W3C traceparent of trace n with client
// span n.
func traceparent(n int) (header, traceID, spanID string) {
	traceID = fmt.Sprintf("4bf92f3577b34da6a3ce929d%08x", n)
	spanID = fmt.Sprintf("00f067aa%08x", n)
	return "00-" + traceID + "-" + spanID + "-01", traceID, spanID
}

func wantSpanAttrs(t *testing.T, what string, s *tracepb.Span, want map[string]string) {
	t.Helper()
	got := attrMap(s.Attributes)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s %q: %s = %q, want %q", what, s.Name, k, got[k], v)
		}
	}
}

// testBinaryTracing: the binary with tracing.otlp_endpoint on a collector
// of the test's (docs/ARCHITECTURE.md, "Tracing"): an OpenAI-compatible
// provider in tier 0, an Anthropic one in tier 1. Checked: every request
// is a server span with the GenAI attributes and its attempt spans (the
// response model the one the provider's answer named: the fakes' gpt-test
// and claude-test, not the targets' model-of-a and model-of-b); a
// client's traceparent is continued and its provider receives a
// traceparent of that trace; a failover is two attempt spans, the failed
// one with error.type, the served one with usage; a stream's attempt has
// its first-token event; log lines say trace_id; with the collector down,
// 200 requests are served at the p99 of a router without tracing.
func testBinaryTracing(t *testing.T, bin string) {
	col := newCollector(t)
	a := newBinFake(t, "a", openaiAPI)
	b := newBinFake(t, "b", anthropicAPI)
	cfg := binConfig{
		providers: []binProvider{{fake: a, typ: "openai_compatible", tier: 0}, {fake: b, typ: "anthropic", tier: 1}},
		top:       "tracing: {otlp_endpoint: " + col.srv.URL + ", sample_ratio: 1.0}",
		logLevel:  "info",
		// Batches every 50 ms, so the test sees its spans at once.
		env: []string{"OTEL_BSP_SCHEDULE_DELAY=50"},
		// A 503 fails over at once: two attempt spans.
		tierWait: "0s",
	}
	p := startRouter(t, bin, cfg)

	t.Run("three requests, three server spans", func(t *testing.T) {
		for i := range 3 {
			tp, id, _ := traceparent(100 + i)
			postTraced(t, p, false, map[string]string{"traceparent": tp})
			server, attempts := col.trace(t, id, 2)
			if server.Name != "chat m" {
				t.Errorf("server span %q, want \"chat m\"", server.Name)
			}
			wantSpanAttrs(t, "server", server, map[string]string{
				"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.response.model": "gpt-test",
				"gen_ai.provider.name": "openai_compatible", "gen_ai.usage.input_tokens": "5", "gen_ai.usage.output_tokens": "3",
				"llmrouter.attempt": "1", "llmrouter.degraded": "false", "http.response.status_code": "200",
			})
			if len(attempts) != 1 {
				t.Fatalf("%d attempt spans, want 1", len(attempts))
			}
			at := attempts[0]
			if at.Name != "chat model-of-a" || at.Kind != tracepb.Span_SPAN_KIND_CLIENT {
				t.Errorf("attempt span %q kind %v, want \"chat model-of-a\", client", at.Name, at.Kind)
			}
			wantSpanAttrs(t, "attempt", at, map[string]string{
				"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai_compatible", "gen_ai.request.model": "model-of-a",
				"gen_ai.response.model": "gpt-test", "gen_ai.usage.input_tokens": "5", "gen_ai.usage.output_tokens": "3",
				"llmrouter.provider": "a", "llmrouter.tier": "0", "llmrouter.attempt": "1", "llmrouter.hedge": "false",
			})
		}
		col.mu.Lock()
		res := col.resource
		col.mu.Unlock()
		if res["service.name"] != "llmrouter" || res["service.version"] == "" {
			t.Errorf("resource %v, want service.name llmrouter and a service.version", res)
		}
	})

	t.Run("the client's trace continues to the provider", func(t *testing.T) {
		tp, id, clientSpan := traceparent(200)
		postTraced(t, p, false, map[string]string{"traceparent": tp, "tracestate": "app=checkout"})
		server, attempts := col.trace(t, id, 2)
		if got := hex.EncodeToString(server.ParentSpanId); got != clientSpan {
			t.Errorf("server span's parent %s, want the client's span %s", got, clientSpan)
		}
		if len(attempts) != 1 {
			t.Fatalf("%d attempt spans, want 1", len(attempts))
		}
		want := "00-" + id + "-" + hex.EncodeToString(attempts[0].SpanId) + "-01"
		tl := a.timeline()
		if got := tl[len(tl)-1].traceparent; got != want {
			t.Errorf("provider received traceparent %q, want %q (the attempt's span in the client's trace)", got, want)
		}
	})

	t.Run("failover is two attempt spans", func(t *testing.T) {
		a.setAPI(func(int, bool) binFault { return binFault{fault: oaiError(503, "server_error", "", "overloaded")} })
		defer a.setAPI(func(int, bool) binFault { return binFault{} })
		tp, id, _ := traceparent(300)
		rep := postTraced(t, p, false, map[string]string{"traceparent": tp})
		if got := rep.header.Get("X-LLMRouter-Provider"); got != "b" {
			t.Fatalf("served by %q, want b", got)
		}
		server, attempts := col.trace(t, id, 3)
		if len(attempts) != 2 {
			t.Fatalf("%d attempt spans, want 2", len(attempts))
		}
		failed, served := attempts[0], attempts[1]
		wantSpanAttrs(t, "failed attempt", failed, map[string]string{"llmrouter.provider": "a", "llmrouter.attempt": "1",
			"error.type": "overloaded", "http.response.status_code": "503"})
		if failed.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("failed attempt's status %v, want error", failed.Status)
		}
		if served.Name != "chat model-of-b" {
			t.Errorf("served attempt %q, want \"chat model-of-b\"", served.Name)
		}
		wantSpanAttrs(t, "served attempt", served, map[string]string{"llmrouter.provider": "b", "llmrouter.attempt": "2",
			"llmrouter.tier": "1", "llmrouter.degraded": "true", "gen_ai.provider.name": "anthropic",
			"gen_ai.response.model": "claude-test", "gen_ai.usage.input_tokens": "5", "gen_ai.usage.output_tokens": "3"})
		if _, ok := attrMap(served.Attributes)["error.type"]; ok {
			t.Errorf("served attempt has error.type")
		}
		wantSpanAttrs(t, "server", server, map[string]string{"llmrouter.attempt": "2", "gen_ai.provider.name": "anthropic",
			"gen_ai.response.model": "claude-test", "llmrouter.degraded": "true"})
	})

	t.Run("a stream's first token", func(t *testing.T) {
		tp, id, _ := traceparent(400)
		postTraced(t, p, true, map[string]string{"traceparent": tp})
		_, attempts := col.trace(t, id, 2)
		if len(attempts) != 1 {
			t.Fatalf("%d attempt spans, want 1", len(attempts))
		}
		var names []string
		for _, e := range attempts[0].Events {
			names = append(names, e.Name)
		}
		if !slices.Contains(names, "gen_ai.first_token") {
			t.Errorf("stream attempt's events %v, want gen_ai.first_token", names)
		}
	})

	t.Run("log lines say the trace", func(t *testing.T) {
		_, id, _ := traceparent(200)
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(p.stderr.String(), "trace_id="+id) {
			if time.Now().After(deadline) {
				t.Fatalf("no log line says trace_id=%s:\n%s", id, p.stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("requests without a traceparent are new traces", func(t *testing.T) {
		before := len(col.serverTraces())
		postTraced(t, p, false, nil)
		deadline := time.Now().Add(10 * time.Second)
		for len(col.serverTraces()) == before {
			if time.Now().After(deadline) {
				t.Fatal("no server span for a request without traceparent")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	p.stop()

	t.Run("a hedge is two attempt spans", func(t *testing.T) { testTracingHedge(t, bin, col) })
	t.Run("collector down", func(t *testing.T) { testTracingCollectorDown(t, bin) })
}

// testTracingHedge: a stream whose provider is slow to its first token
// is hedged on the other (routing.hedge, docs/ARCHITECTURE.md,
// "Hedging"): its trace shows both legs as attempt spans, the twin with
// llmrouter.hedge true and its first token, the slow one ended canceled, and
// the request's span says a hedge answered.
func testTracingHedge(t *testing.T, bin string, col *collector) {
	slow, fast := newBinFake(t, "slow", openaiAPI), newBinFake(t, "fast", openaiAPI)
	slow.setAPI(func(int, bool) binFault { return binFault{fault: fault{kind: slowFirstToken, delay: 3 * time.Second}} })
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: slow, typ: "openai_compatible", tier: 0}, {fake: fast, typ: "openai_compatible", tier: 1}},
		routing:   "hedge: {after: 200ms, max_share: 1}",
		top:       "tracing: {otlp_endpoint: " + col.srv.URL + ", sample_ratio: 1.0}",
		env:       []string{"OTEL_BSP_SCHEDULE_DELAY=50"},
	})
	defer p.stop()
	tp, id, _ := traceparent(500)
	start := time.Now()
	rep := postTraced(t, p, true, map[string]string{"traceparent": tp})
	if d := time.Since(start); d > 2*time.Second || rep.header.Get("X-LLMRouter-Hedged") != "true" || rep.header.Get("X-LLMRouter-Provider") != "fast" {
		t.Fatalf("answered in %v by %q (hedged %q), want the hedge on fast well before the slow first token",
			d, rep.header.Get("X-LLMRouter-Provider"), rep.header.Get("X-LLMRouter-Hedged"))
	}
	server, attempts := col.trace(t, id, 3)
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans, want 2 (the slow leg, the hedge)", len(attempts))
	}
	lost, won := attempts[0], attempts[1]
	wantSpanAttrs(t, "the slow leg", lost, map[string]string{"llmrouter.provider": "slow", "llmrouter.attempt": "1",
		"llmrouter.hedge": "false", "error.type": "canceled"})
	if lost.Status.GetMessage() != "lost the hedge race" {
		t.Errorf("the slow leg's status %v, want \"lost the hedge race\"", lost.Status)
	}
	wantSpanAttrs(t, "the hedge", won, map[string]string{"llmrouter.provider": "fast", "llmrouter.attempt": "2",
		"llmrouter.hedge": "true", "llmrouter.tier": "1"})
	if _, ok := attrMap(won.Attributes)["error.type"]; ok || len(won.Events) != 1 || won.Events[0].Name != "gen_ai.first_token" {
		t.Errorf("the hedge that answered: error.type %q, events %v; want none, its first token", attrMap(won.Attributes)["error.type"], won.Events)
	}
	if won.StartTimeUnixNano < lost.StartTimeUnixNano+uint64(150*time.Millisecond) || won.StartTimeUnixNano > lost.EndTimeUnixNano {
		t.Errorf("the hedge began %v after the slow leg, which ended %v after its start; want about 200ms, within the slow leg",
			time.Duration(won.StartTimeUnixNano-lost.StartTimeUnixNano), time.Duration(lost.EndTimeUnixNano-lost.StartTimeUnixNano))
	}
	wantSpanAttrs(t, "server", server, map[string]string{"llmrouter.attempt": "2", "llmrouter.hedge": "true",
		"llmrouter.degraded": "true", "http.response.status_code": "200"})
}

// testTracingCollectorDown: 200 sequential requests through a router
// without tracing, then through one whose collector is a closed port:
// all served, at a p99 within twice the untraced one (plus 10 ms for a
// shared machine's noise), the spans dropped and counted.
func testTracingCollectorDown(t *testing.T, bin string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	a := newBinFake(t, "a", openaiAPI)
	run := func(top string) (p99 time.Duration, p *routerProc) {
		p = startRouter(t, bin, binConfig{providers: []binProvider{{fake: a, typ: "openai_compatible"}}, top: top,
			env: []string{"OTEL_BSP_SCHEDULE_DELAY=50"}})
		var took []time.Duration
		for i := range 200 {
			start := time.Now()
			rep, err := p.chatOK(i%4 == 0)
			if err != nil {
				t.Fatalf("request %d: %v (%d %s)", i, err, rep.status, rep.body)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[len(took)*99/100-1], p
	}
	off, p := run("")
	p.stop()
	on, p := run("tracing: {otlp_endpoint: http://" + closed + "}")
	t.Logf("p99 of 200 requests: %v without tracing, %v with the collector down", off, on)
	if on > 2*off+10*time.Millisecond {
		t.Errorf("p99 %v with the collector down, %v without tracing", on, off)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.metric(t, `llmrouter_tracing_spans_dropped_total{reason="export_failed"}`) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no span counted as dropped with the collector down")
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	p.stop()
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("stopping took %v with the collector down", d)
	}
}
