package tracing

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzSpans: whatever a client (its traceparent, tracestate, model name)
// and a provider (its model, its error message) put into a request's
// spans, the export is a request the official OTLP types decode, with
// valid UTF-8 of at most maxValueLen bytes in every attribute and status,
// the client's trace continued only when its traceparent is valid, and
// nothing exported (but a traceparent sent) when it is valid and
// unsampled.
func FuzzSpans(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=x", "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "overloaded", 3)
	f.Add("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=\xff", "claude-\xc3(", strings.Repeat("é", 300), "", 40)
	f.Add("", "", "", "", "bad \xed\xa0\x80 surrogate", 0)
	f.Fuzz(func(t *testing.T, tp, ts, requested, model, message string, events int) {
		var out []byte
		tr, err := New(Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, Options{
			send: func(_ context.Context, body []byte) (int64, string, error) {
				out = append(out, body...)
				return 0, "", nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{"Traceparent": {tp}, "Tracestate": {ts}}
		ctx, r := tr.Start(context.Background(), h, "chat", "")
		r.Model(requested, requested)
		r.SetKey(model)
		for i := range min(max(events, 0), 2*maxEvents) {
			r.Refused(model, message, time.Duration(i)*time.Millisecond)
		}
		actx, a := r.Attempt(ctx, Try{Op: "chat", Provider: model, Type: "openai", Model: model, N: 1})
		sent := http.Header{}
		Inject(actx, sent)
		kind := ""
		if message != "" {
			kind = "server_error"
		}
		a.End(Outcome{Kind: kind, Status: 500, Message: message, Model: model})
		r.End(Answered{Status: 502, ErrorType: message, Provider: model, Type: model, Model: model})
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(out, &req); err != nil {
			t.Fatalf("the export does not decode: %v", err)
		}
		var spans []*tracepb.Span
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		_, _, sampled, valid := parseTraceparent(tp)
		if want := map[bool]int{true: 2, false: 0}[sampled || !valid]; len(spans) != want {
			t.Fatalf("%d spans exported, want %d (traceparent valid %v, sampled %v)", len(spans), want, valid, sampled)
		}
		if got := sent.Get("Traceparent"); len(got) != 55 || !strings.HasPrefix(got, "00-") {
			t.Errorf("the attempt sent traceparent %q", got)
		}
		if len(spans) == 0 {
			return // the client's trace, not sampled: its attempt still sent a traceparent
		}
		check := func(what, v string) {
			limit := maxValueLen
			if what == "name" {
				limit = 2*maxValueLen + 1 // `{api} {model}`, each part cut
			}
			if !utf8.ValidString(v) || len(v) > limit {
				t.Errorf("%s: %d bytes, valid UTF-8 %v", what, len(v), utf8.ValidString(v))
			}
		}
		for _, s := range spans {
			check("name", s.Name)
			check("status", s.Status.GetMessage())
			for _, kv := range s.Attributes {
				check(kv.Key, kv.Value.GetStringValue())
			}
			if len(s.Events) > maxEvents {
				t.Errorf("%d events", len(s.Events))
			}
		}
		server := spans[1]
		if continued := len(server.ParentSpanId) > 0; continued != valid {
			t.Errorf("traceparent %q valid %v, but the server span continued it: %v", tp, valid, continued)
		}
	})
}
