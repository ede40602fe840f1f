package collector

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/llmrouter/llmrouter/internal/tracing"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// export is an ExportTraceServiceRequest whose resources hold scopes of
// the given numbers of spans, each resource and span with attributes the
// walk must skip.
func export(tb testing.TB, resources ...[]int) []byte {
	tb.Helper()
	attr := []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "llmrouter"}}}}
	req := &collectorpb.ExportTraceServiceRequest{}
	for _, scopes := range resources {
		rs := &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: attr}, SchemaUrl: "https://opentelemetry.io/schemas/1.40.0"}
		for _, n := range scopes {
			ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: "github.com/llmrouter/llmrouter"}}
			for range n {
				ss.Spans = append(ss.Spans, &tracepb.Span{TraceId: make([]byte, 16), SpanId: make([]byte, 8), Name: "chat bench-model",
					Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: 1, EndTimeUnixNano: 2, Attributes: attr})
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		req.ResourceSpans = append(req.ResourceSpans, rs)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestCountSpans(t *testing.T) {
	two := export(t, []int{2})
	tests := []struct {
		name    string
		body    []byte
		want    int
		wantErr bool
	}{
		{"empty request", export(t), 0, false},
		{"one resource, one scope", two, 2, false},
		{"a resource without spans", export(t, []int{}), 0, false},
		{"resources and scopes add up", export(t, []int{1, 2}, []int{3}, []int{0, 4}), 10, false},
		{"truncated", two[:len(two)-3], 0, true},
		{"not protobuf", []byte("{\"resourceSpans\":[]}"), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := countSpans(tt.body)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %d spans, want %d", got, tt.want)
			}
		})
	}
}

// TestSinkTakesTheRoutersExports sends spans through the router's own
// OTLP/HTTP exporter (internal/tracing), plain and gzipped: the sink
// answers as a collector that took them, and counts every span.
func TestSinkTakesTheRoutersExports(t *testing.T) {
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			h, stop := serve(t)
			defer stop()
			t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", compression)
			t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "3")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tr, err := tracing.New(tracing.Config{OTLPEndpoint: h.Endpoint(), SampleRatio: 1}, tracing.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for range 7 {
				_, r := tr.Start(ctx, nil, "chat", "")
				r.End(tracing.Answered{Status: http.StatusOK})
			}
			// Shutdown exports what is queued.
			if err := tr.Shutdown(ctx); err != nil {
				t.Fatalf("shutting the exporter down: %v", err)
			}
			got, err := h.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.Spans != 7 || got.Exports < 3 || got.Bytes == 0 || got.Errors != 0 {
				t.Errorf("got %+v, want 7 spans in at least 3 exports (batches of 3), some bytes, no errors", got)
			}
		})
	}
}

// TestSinkRefusesWhatItCannotRead: a body it cannot count is answered 400
// and counted as an error, never as an export.
func TestSinkRefusesWhatItCannotRead(t *testing.T) {
	h, stop := serve(t)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range []struct {
		name, contentType, encoding, body string
	}{
		{"json", "application/json", "", "{}"},
		{"truncated protobuf", "application/x-protobuf", "", string(export(t, []int{2})[:20])},
		{"gzip header, plain body", "application/x-protobuf", "gzip", string(export(t, []int{1}))},
		{"unknown encoding", "application/x-protobuf", "br", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.Endpoint()+TracesPath, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.contentType)
			if tt.encoding != "" {
				req.Header.Set("Content-Encoding", tt.encoding)
			}
			resp, err := h.control.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("got status %d, want 400", resp.StatusCode)
			}
		})
	}
	got, err := h.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stats{Errors: 4}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// serve runs the sink in this process on a loopback port; stop ends it.
func serve(tb testing.TB) (*Handle, func()) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln) }()
	h := &Handle{base: "http://" + ln.Addr().String(), control: &http.Client{Transport: &http.Transport{}}}
	return h, func() {
		h.Close()
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	}
}
