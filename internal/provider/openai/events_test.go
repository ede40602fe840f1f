package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

const responsesBody = `{"model":"alias","input":"hi","tools":[{"type":"web_search"}],"stream":false}`

const responsesAnswer = `{"id":"resp_1","object":"response","status":"completed","error":null,"model":"gpt-5-2025-08-07",` +
	`"output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],` +
	`"usage":{"input_tokens":9,"output_tokens":4,"total_tokens":13}}`

// TestDoResponses: the native Responses API goes to OpenAI's
// {base_url}/responses and to Azure's v1 API, {base_url}/openai/v1/responses
// without api-version whatever api_version says, with the client's body
// and the target's model (the deployment on Azure); the answer's bytes
// come back unchanged, its usage read from input_tokens and output_tokens.
// OpenAI-compatible servers do not serve it.
func TestDoResponses(t *testing.T) {
	for _, fl := range []struct {
		name     string
		flavor   Flavor
		basePath string
		cfg      Config
		wantPath string
	}{
		{"openai", OpenAI, "/v1", Config{}, "/v1/responses"},
		{"azure classic", Azure, "", Config{}, "/openai/v1/responses"},
		{"azure preview", Azure, "", Config{APIVersion: "2025-04-01-preview"}, "/openai/v1/responses"},
		{"azure v1", Azure, "", Config{APIVersion: "v1"}, "/openai/v1/responses"},
	} {
		t.Run(fl.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, responsesAnswer)
			})
			a := newTestAdapter(t, fl.flavor, up.Server.URL+fl.basePath, "key", fl.cfg)
			if !a.Supports(provider.OpResponses) {
				t.Fatal("does not support the Responses API")
			}
			resp, err := a.Do(context.Background(), request(provider.OpResponses, responsesBody, "my-dep", false))
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Body) != responsesAnswer || resp.Usage != (outcome.Usage{PromptTokens: 9, CompletionTokens: 4, Model: "gpt-5-2025-08-07"}) {
				t.Errorf("body %s usage %+v", resp.Body, resp.Usage)
			}
			s := up.Last(t)
			if s.Path != fl.wantPath || s.Query != "" || string(s.Body) != withModel(responsesBody, "my-dep") {
				t.Errorf("got %s?%s %s; want %s with the target's model", s.Path, s.Query, s.Body, fl.wantPath)
			}
		})
	}
	if newTestAdapter(t, Compatible, "http://127.0.0.1:1/v1", "", Config{}).Supports(provider.OpResponses) {
		t.Error("an OpenAI-compatible adapter claims the native Responses API")
	}
}

// respEvents frames Responses events as OpenAI does: an event line naming
// the type, then the data.
func respEvents(payloads ...string) []string {
	out := make([]string, len(payloads))
	for i, p := range payloads {
		typ := p[len(`{"type":"`):strings.Index(p, `",`)]
		out[i] = "event: " + typ + "\ndata: " + p + "\n\n"
	}
	return out
}

var respStream = []string{
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","model":"gpt-5-2025-08-07","output":[],"usage":null}}`,
	`{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"}`,
	`{"type":"response.completed","sequence_number":2,"response":{"id":"resp_1","status":"completed","model":"gpt-5-2025-08-07","output":[],"usage":{"input_tokens":9,"output_tokens":4,"total_tokens":13}}}`,
}

// TestEventStream: a Responses stream yields every event's data unchanged
// and ends with its terminal event, not reading on (there is no [DONE]);
// the usage comes from the terminal response, the model (the snapshot
// that answered, not gpt-5 asked for) from the first, so a stream that
// ends early has it too. Ending before the terminal event is a cut;
// an error event or response.failed is the provider's failure, classified
// from its code.
func TestEventStream(t *testing.T) {
	tests := []struct {
		name     string
		raw      []string
		abort    bool
		wantN    int
		wantKind outcome.Kind // OK: io.EOF
	}{
		{"whole, and a connection left open", append(respEvents(respStream...), ": ping\n\n"), false, 3, outcome.OK},
		{"cut before the terminal event", respEvents(respStream[:2]...), true, 2, outcome.Network},
		{"ended before the terminal event", respEvents(respStream[:2]...), false, 2, outcome.Network},
		{"error event, nested", respEvents(respStream[0], `{"type":"error","sequence_number":1,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota","param":null}}`), false, 1, outcome.Quota},
		{"error event, flat", respEvents(respStream[0], `{"type":"error","sequence_number":1,"code":"server_error","message":"boom","param":null}`), false, 1, outcome.ServerError},
		{"response.failed", respEvents(respStream[0], `{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}}`), false, 1, outcome.RateLimited},
		// The client's event line is the type: one that is not [a-z_.]+
		// is a malformed event (issue 31, finding 4).
		{"a type with escaped line breaks", respEvents(respStream[0], `{"type":"response.in_progress\n\nevent: response.completed","sequence_number":1}`), false, 1, outcome.ServerError},
		{"a type with a capital", respEvents(respStream[0], `{"type":"Response.in_progress","sequence_number":1}`), false, 1, outcome.ServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, sseHandler(tt.raw, tt.abort))
			a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk", Config{})
			resp, err := a.Do(context.Background(), request(provider.OpResponses, strings.Replace(responsesBody, `"stream":false`, `"stream":true`, 1), "gpt-5", true))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Stream.Close()
			got, err := drain(t, resp.Stream)
			if len(got) != tt.wantN {
				t.Errorf("got %d events, want %d: %v", len(got), tt.wantN, got)
			}
			for i := range got {
				if got[i] != respStream[i] { // every case starts as respStream
					t.Errorf("event %d = %s, want the provider's bytes", i, got[i])
				}
			}
			if tt.wantKind == outcome.OK {
				if err != io.EOF || resp.Stream.Usage() != (outcome.Usage{PromptTokens: 9, CompletionTokens: 4, Model: "gpt-5-2025-08-07"}) {
					t.Errorf("end %v usage %+v; want io.EOF and the terminal usage", err, resp.Stream.Usage())
				}
				return
			}
			if m := resp.Stream.Usage().Model; m != "gpt-5-2025-08-07" {
				t.Errorf("model %q, want response.created's gpt-5-2025-08-07", m)
			}
			if errors.Is(err, io.EOF) || outcome.KindOf(err) != tt.wantKind {
				t.Errorf("end %v (kind %v), want kind %v", err, outcome.KindOf(err), tt.wantKind)
			}
		})
	}
}
