//go:build unix

package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPathTracing is BenchmarkPath's plain and stream paths with
// tracing off, and on at sample_ratio 1 exporting over OTLP/HTTP to a
// collector in this process that reads and discards each export (its
// cost is counted too); "traceparent" sends a client's trace context;
// "unsampled" is sample_ratio 0 (what a request that is not kept costs).
// cpu-ns/op is the process's CPU time per request, the exporter's
// goroutine and the final flush included: the difference between off and
// on is what tracing costs a request (docs/BENCHMARKS.md, "Tracing").
func BenchmarkPathTracing(b *testing.B) {
	var exports atomic.Int64
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		exports.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer col.Close()
	for _, c := range []struct {
		name, path string
		on         bool
		ratio      float64
		hdr        []string
	}{
		{"off/plain", "plain", false, 1, nil},
		{"on/plain", "plain", true, 1, nil},
		{"on/plain-traceparent", "plain", true, 1, []string{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		{"on/plain-unsampled", "plain", true, 0, nil},
		{"off/stream", "stream", false, 1, nil},
		{"on/stream", "stream", true, 1, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, body := pathServer(b, c.path)
			reg := prometheus.NewRegistry()
			var tr *tracing.Tracer
			if c.on {
				var err error
				if tr, err = tracing.New(tracing.Config{OTLPEndpoint: col.URL, SampleRatio: c.ratio}, tracing.Options{Registerer: reg}); err != nil {
					b.Fatal(err)
				}
				s.trace = tr
			}
			h := s.Handler()
			w := &statusWriter{}
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				servePath(b, h, body, w, c.hdr...)
				for tr.Waiting() > tracing.QueueSize-4 {
					// The exporter is behind (a machine this busy starves
					// its goroutine): wait off the CPU rather than let a
					// span be dropped, so every export is counted.
					time.Sleep(20 * time.Microsecond)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := tr.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(exports.Swap(0)), "exports")
			if c.on {
				dropped := 0.0
				if mfs, err := reg.Gather(); err == nil {
					for _, mf := range mfs {
						if mf.GetName() == "llmrouter_tracing_spans_dropped_total" {
							for _, m := range mf.Metric {
								dropped += m.GetCounter().GetValue()
							}
						}
					}
				}
				b.ReportMetric(dropped/float64(b.N), "dropped/op")
			}
		})
	}
}

// TestTracingExportsBothSpans: with a Tracer, a request's two spans (the
// request's and its attempt's) are exported; without one, nothing is
// (TestAllocationBudgets measures that path).
func TestTracingExportsBothSpans(t *testing.T) {
	var got atomic.Int64
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Add(1)
	}))
	defer col.Close()
	reg := prometheus.NewPedanticRegistry()
	tr, err := tracing.New(tracing.Config{OTLPEndpoint: col.URL, SampleRatio: 1}, tracing.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s, body := pathServer(t, "plain")
	s.trace = tr
	servePath(t, s.Handler(), body, &statusWriter{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "llmrouter_tracing_spans_exported_total"); err != nil || n != 1 {
		t.Fatalf("exported series %d, %v", n, err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "llmrouter_tracing_spans_exported_total" {
			if v := mf.Metric[0].GetCounter().GetValue(); v != 2 {
				t.Errorf("exported %v spans, want 2 (the request and its attempt)", v)
			}
		}
	}
	if got.Load() == 0 {
		t.Error("the collector got no export")
	}
}

// TestTracingKeySpans: a named key's request is a span with its key
// (llmrouter.key on the request and its attempt); a request its key's
// RPM refuses is a span with a llmrouter.refused event (reason rate) and
// no attempt; a 4xx is not an error status.
func TestTracingKeySpans(t *testing.T) {
	col := newCollector(t)
	tr, err := tracing.New(tracing.Config{OTLPEndpoint: col.URL, SampleRatio: 1}, tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &fake{do: ok(`{"ok":true}`)}
	s := keysServer(t, a, nil, namedKey("team-a", "secret-a", clientkeys.Limits{RPM: 1}))
	s.trace = tr
	h := s.Handler()
	for _, want := range []int{200, 429} {
		w := do(h, "POST", "/v1/chat/completions", "application/json", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			"Authorization", "Bearer secret-a")
		if w.Code != want {
			t.Fatalf("status %d, want %d", w.Code, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sp := range col.Spans() {
		a := spanAttrs(sp)
		line := sp.Name + " " + sp.Kind.String() + " key=" + a["llmrouter.key"] + " status=" + a["http.response.status_code"] + " error.type=" + a["error.type"]
		for _, e := range sp.Events {
			for _, kv := range e.Attributes {
				if kv.Key == "llmrouter.reason" {
					line += " " + e.Name + ":" + kv.Value.GetStringValue()
				}
			}
		}
		if sp.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			line += " ERROR"
		}
		got = append(got, line)
	}
	want := []string{
		"chat p-model SPAN_KIND_CLIENT key=team-a status= error.type=",
		"chat m SPAN_KIND_SERVER key=team-a status=200 error.type=",
		"chat m SPAN_KIND_SERVER key=team-a status=429 error.type=rate_limit_exceeded llmrouter.refused:rate",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("spans:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// collector is an OTLP/HTTP collector in the process that keeps the spans
// it is sent.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span // guarded by mu
}

func newCollector(t testing.TB) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("collector: %v", err)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
	}))
	t.Cleanup(c.Close)
	return c
}

// Spans are the spans received so far, in the order they came.
func (c *collector) Spans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans)
}

// spanAttrs are a span's string and integer attributes, as strings.
func spanAttrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		}
	}
	return m
}

// TestTracingResponseModel: gen_ai.response.model, on the attempt's span
// and on the request's, is the model the provider named in its answer (a
// dated snapshot of the one asked for), whole or streamed, through a real
// adapter; an answer that names none records the target's model.
func TestTracingResponseModel(t *testing.T) {
	const snapshot = "gpt-4o-mini-2024-07-18"
	named := func(chunk string) string { return `{"model":"` + snapshot + `",` + chunk[1:] }
	stream := "data: " + named(roleChunk) + "\n\ndata: " + named(textChunk) + "\n\ndata: " + named(stopChunk) + "\n\ndata: [DONE]\n\n"
	for _, c := range []struct {
		name, ctype, answer, req, want string
	}{
		{"plain", "application/json", strings.Replace(benchAnswer, `"gpt-4o-mini"`, `"`+snapshot+`"`, 1), benchReq, snapshot},
		{"stream", "text/event-stream", stream, benchStreamReq, snapshot},
		{"plain naming none", "application/json", strings.Replace(benchAnswer, `"model":"gpt-4o-mini",`, "", 1), benchReq, "up-model"},
		{"stream naming none", "text/event-stream", openaiStreamBody(2), benchStreamReq, "up-model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := newCollector(t)
			tr, err := tracing.New(tracing.Config{OTLPEndpoint: col.URL, SampleRatio: 1}, tracing.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pc := provider.Config{Name: "up", MaxConcurrency: 4, BaseURL: "http://upstream.invalid/v1"}
			a, err := openai.New(openai.Compatible, pc, "", openai.Config{},
				&http.Client{Transport: providertest.Canned{ContentType: c.ctype, Body: c.answer}})
			if err != nil {
				t.Fatal(err)
			}
			table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "up", Model: "up-model"}}}})
			s, err := Open(routing.Options{Providers: []provider.Descriptor{{Name: "up", Adapter: a, Config: pc}},
				Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30e9}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.trace = tr
			servePath(t, s.Handler(), c.req, &statusWriter{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tr.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			spans := col.Spans()
			if len(spans) != 2 {
				t.Fatalf("got %d spans, want the request's and its attempt's", len(spans))
			}
			for _, sp := range spans {
				a := spanAttrs(sp)
				if got := a["gen_ai.response.model"]; got != c.want {
					t.Errorf("%s span: gen_ai.response.model %q, want %q", sp.Kind, got, c.want)
				}
				if got := a["gen_ai.request.model"]; sp.Kind == tracepb.Span_SPAN_KIND_CLIENT && got != "up-model" {
					t.Errorf("attempt span: gen_ai.request.model %q, want the target's up-model", got)
				}
			}
		})
	}
}
