package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	oaresp "github.com/openai/openai-go/v3/responses"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/responses/api"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// tiered is a fake provider and the tier of its target for model "m":
// f (a chat provider) or rf (an OpenAI or Azure provider with its own
// Responses API).
type tiered struct {
	f    *llmFake
	rf   *respFake
	tier int
}

// responsesRouter is the router in-process over fakes (real adapters:
// anthropic for the Anthropic dialect, openai_compatible for the OpenAI
// one), the official Go SDK pointed at it, and its metrics registry.
type responsesRouter struct {
	front  *httptest.Server
	client oai.Client
	reg    *prometheus.Registry
}

func newResponsesRouter(t *testing.T, fakes ...tiered) *responsesRouter {
	t.Helper()
	return newResponsesRouterWith(t, nil, fakes...)
}

// newResponsesRouterWith is newResponsesRouter with opts, when not nil,
// changing the proxy's and the Responses API's options first.
func newResponsesRouterWith(t *testing.T, opts func(*routing.Options, *api.Options), fakes ...tiered) *responsesRouter {
	t.Helper()
	mc := route.ModelConfig{Name: "m"}
	var ps []provider.Descriptor
	for _, p := range fakes {
		var pc provider.Config
		switch {
		case p.rf != nil && p.rf.azure:
			pc = provider.Config{Name: p.rf.name, Type: "azure", BaseURL: p.rf.srv.URL}
		case p.rf != nil:
			pc = provider.Config{Name: p.rf.name, Type: "openai", BaseURL: p.rf.srv.URL + "/v1"}
		case p.f.d == anthropicAPI:
			pc = provider.Config{Name: p.f.name, Type: "anthropic", BaseURL: p.f.srv.URL}
		default:
			pc = provider.Config{Name: p.f.name, Type: "openai_compatible", BaseURL: p.f.srv.URL + "/v1"}
		}
		name := pc.Name
		hc := provider.NewHTTPClient(pc)
		t.Cleanup(hc.CloseIdleConnections)
		var (
			a   provider.Adapter
			err error
		)
		switch pc.Type {
		case "azure":
			a, err = openai.New(openai.Azure, pc, "az-key", openai.Config{}, hc)
		case "openai":
			a, err = openai.New(openai.OpenAI, pc, "sk-test", openai.Config{}, hc)
		case "anthropic":
			a, err = anthropic.New(pc, "sk-ant-test", anthropic.Config{}, hc)
		default:
			a, err = openai.New(openai.Compatible, pc, "", openai.Config{}, hc)
		}
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, provider.Descriptor{Name: name, Type: pc.Type, Adapter: a, Config: pc})
		mc.Targets = append(mc.Targets, route.Target{Provider: name, Model: "model-of-" + name, Tier: p.tier})
	}
	table, err := route.NewTable([]route.ModelConfig{mc})
	if err != nil {
		t.Fatal(err)
	}
	rr := &responsesRouter{reg: prometheus.NewRegistry()}
	o := routing.Options{Providers: ps, Models: table, Routing: policy.Config{Retry: policy.Retry{Config: fastRetry}}, Registerer: rr.reg,
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30 * time.Second}}
	ao := api.Options{Registerer: rr.reg}
	if opts != nil {
		opts(&o, &ao)
	}
	s, err := proxy.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	a, err := api.New(ao)
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux, a.Dialect())
	rr.front = httptest.NewServer(mux)
	hc := &http.Client{}
	rr.client = oai.NewClient(option.WithBaseURL(rr.front.URL+"/v1/"), option.WithAPIKey("unused"),
		option.WithMaxRetries(0), option.WithHTTPClient(hc))
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		rr.front.Close()
		s.Close()
	})
	return rr
}

func userText(s string) oaresp.ResponseNewParamsInputUnion {
	return oaresp.ResponseNewParamsInputUnion{OfString: oai.String(s)}
}

func items(its ...oaresp.ResponseInputItemUnionParam) oaresp.ResponseNewParamsInputUnion {
	return oaresp.ResponseNewParamsInputUnion{OfInputItemList: its}
}

// TestResponsesSDK drives POST /v1/responses, GET and DELETE with the
// official Go SDK against the router in-process, over fake providers
// behind the real adapters (docs/ARCHITECTURE.md, "Responses API").
func TestResponsesSDK(t *testing.T) {
	ctx := context.Background()

	t.Run("text with instructions through anthropic; then GET and DELETE", func(t *testing.T) {
		ant := newLLMFake(t, "ant", anthropicAPI)
		ant.always(llmReply{text: "Paris is the capital of France."})
		rr := newResponsesRouter(t, tiered{f: ant})
		var hdr http.Header
		resp, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{
			Model: "m", Instructions: oai.String("Answer in one sentence."), Input: userText("What is the capital of France?"),
			MaxOutputTokens: oai.Int(100), Temperature: oai.Float(0.2), Metadata: map[string]string{"session": "s1"},
		}, option.WithResponseInto(new(*http.Response)), option.WithMiddleware(headerInto(&hdr)))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.OutputText(); got != "Paris is the capital of France." {
			t.Errorf("OutputText() = %q", got)
		}
		if resp.Status != oaresp.ResponseStatusCompleted || resp.Usage.InputTokens != fakeInputTokens || resp.Usage.OutputTokens != fakeOutputTokens ||
			resp.Usage.TotalTokens != fakeInputTokens+fakeOutputTokens || !strings.HasPrefix(resp.ID, "resp_") || resp.Metadata["session"] != "s1" {
			t.Errorf("status %q usage %+v id %q metadata %v", resp.Status, resp.Usage, resp.ID, resp.Metadata)
		}
		if hdr.Get("X-LLMRouter-Provider") != "ant" || hdr.Get("X-LLMRouter-Overhead-Ms") == "" {
			t.Errorf("headers %v", hdr)
		}
		got := ant.received()
		if len(got) != 1 {
			t.Fatalf("anthropic got %d requests", len(got))
		}
		if m := join(ant.messages(got[0])); m != "system: Answer in one sentence. | user: What is the capital of France?" {
			t.Errorf("anthropic got %s", m)
		}
		if got[0].Get("model").Str != "model-of-ant" || got[0].Get("max_tokens").Int() != 100 || got[0].Get("temperature").Float() != 0.2 {
			t.Errorf("anthropic request %s", got[0].Raw)
		}

		again, err := rr.client.Responses.Get(ctx, resp.ID, oaresp.ResponseGetParams{})
		if err != nil || again.OutputText() != resp.OutputText() || again.ID != resp.ID {
			t.Fatalf("GET: %v %+v", err, again)
		}
		if err := rr.client.Responses.Delete(ctx, resp.ID); err != nil {
			t.Fatalf("DELETE: %v", err)
		}
		for _, op := range []func() error{
			func() error { _, err := rr.client.Responses.Get(ctx, resp.ID, oaresp.ResponseGetParams{}); return err },
			func() error { return rr.client.Responses.Delete(ctx, resp.ID) },
		} {
			var apiErr *oai.Error
			if err := op(); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(apiErr.Message, resp.ID) {
				t.Errorf("after DELETE: got %v, want 404 naming the id", err)
			}
		}
		// The request line and metrics follow the answer: wait for them.
		for _, c := range []struct {
			model, code string
			want        float64
		}{{"m", "200", 1}, {"", "200", 2}, {"", "404", 2}} { // POST; GET and DELETE; GET and DELETE after DELETE
			labels := map[string]string{"api": "responses", "model": c.model, "code": c.code}
			if !eventually(hangBound, func() bool { return counter(t, rr.reg, "llmrouter_requests_total", labels) == c.want }) {
				t.Errorf("requests_total%v = %v, want %v", labels, counter(t, rr.reg, "llmrouter_requests_total", labels), c.want)
			}
		}
	})

	t.Run("stream through an openai-compatible provider", func(t *testing.T) {
		oc := newLLMFake(t, "local", openaiAPI)
		const answer = "Streaming works: one, two, three."
		oc.always(llmReply{text: answer})
		rr := newResponsesRouter(t, tiered{f: oc})
		stream := rr.client.Responses.NewStreaming(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("count")})
		var (
			types  []string
			deltas strings.Builder
			last   oaresp.ResponseStreamEventUnion
		)
		for stream.Next() {
			ev := stream.Current()
			if ev.SequenceNumber != int64(len(types)) {
				t.Errorf("event %d has sequence_number %d", len(types), ev.SequenceNumber)
			}
			types = append(types, ev.Type)
			if ev.Type == "response.output_text.delta" {
				deltas.WriteString(ev.Delta)
			}
			last = ev
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v (events %v)", err, types)
		}
		if len(types) < 4 || types[0] != "response.created" || types[1] != "response.in_progress" || types[len(types)-1] != "response.completed" {
			t.Fatalf("events %v", types)
		}
		if deltas.String() != answer {
			t.Errorf("deltas add up to %q, want %q", deltas.String(), answer)
		}
		done := last.AsResponseCompleted().Response
		if done.OutputText() != answer || done.Usage.InputTokens != fakeInputTokens || done.Usage.OutputTokens != fakeOutputTokens || done.Status != "completed" {
			t.Errorf("completed: text %q usage %+v status %q", done.OutputText(), done.Usage, done.Status)
		}
		got := oc.received()
		if len(got) != 1 || !got[0].Get("stream").Bool() || !got[0].Get("stream_options.include_usage").Bool() {
			t.Fatalf("provider got %v", got)
		}
		// Stored at the end of the stream: GET has it.
		if again, err := rr.client.Responses.Get(ctx, done.ID, oaresp.ResponseGetParams{}); err != nil || again.OutputText() != answer {
			t.Errorf("GET after the stream: %v", err)
		}
	})

	t.Run("stream cut after the commit", func(t *testing.T) {
		oc := newLLMFake(t, "local", openaiAPI)
		oc.always(llmReply{text: "this answer is cut short", cut: true})
		rr := newResponsesRouter(t, tiered{f: oc})
		stream := rr.client.Responses.NewStreaming(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("x")})
		var types []string
		for stream.Next() {
			types = append(types, stream.Current().Type)
		}
		// openai-go ends the stream at the error event, with a StreamError.
		var se *ssestream.StreamError
		if err := stream.Err(); !errors.As(err, &se) || se.Event.Type != "error" || !strings.Contains(se.Message, "upstream_error") {
			t.Fatalf("got %v after %v; want the error event", err, types)
		}
		if len(types) == 0 || types[0] != "response.created" || types[len(types)-1] != "response.output_text.delta" {
			t.Errorf("events before the error: %v", types)
		}
		if n := len(oc.received()); n != 1 {
			t.Errorf("provider got %d requests; after the commit nothing fails over", n)
		}
	})

	t.Run("function call through anthropic, answered through previous_response_id", func(t *testing.T) {
		for _, streamed := range []bool{false, true} {
			name := "plain"
			if streamed {
				name = "streamed"
			}
			t.Run(name, func(t *testing.T) {
				ant := newLLMFake(t, "ant", anthropicAPI)
				ant.script(func(n int) llmReply {
					if n == 1 {
						return llmReply{call: &llmCall{id: "toolu_01", name: "get_weather", args: `{"city":"Paris"}`}}
					}
					return llmReply{text: "It is 18C in Paris."}
				})
				rr := newResponsesRouter(t, tiered{f: ant})
				weather := oaresp.ToolParamOfFunction("get_weather", map[string]any{"type": "object",
					"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}, false)
				first := oaresp.ResponseNewParams{Model: "m", Input: userText("Weather in Paris?"), Tools: []oaresp.ToolUnionParam{weather}}
				var call oaresp.ResponseOutputItemUnion
				var firstID string
				if streamed {
					stream := rr.client.Responses.NewStreaming(ctx, first)
					var args strings.Builder
					for stream.Next() {
						ev := stream.Current()
						switch ev.Type {
						case "response.function_call_arguments.delta":
							args.WriteString(ev.Delta)
						case "response.completed":
							done := ev.AsResponseCompleted().Response
							firstID, call = done.ID, done.Output[0]
						}
					}
					if err := stream.Err(); err != nil {
						t.Fatal(err)
					}
					if args.String() != `{"city":"Paris"}` {
						t.Errorf("argument deltas add up to %q", args.String())
					}
				} else {
					resp, err := rr.client.Responses.New(ctx, first)
					if err != nil {
						t.Fatal(err)
					}
					if len(resp.Output) != 1 {
						t.Fatalf("output %+v", resp.Output)
					}
					firstID, call = resp.ID, resp.Output[0]
				}
				if call.Type != "function_call" || call.CallID != "toolu_01" || call.Name != "get_weather" ||
					call.Arguments.OfString != `{"city":"Paris"}` || !strings.HasPrefix(call.ID, "fc_") {
					t.Fatalf("function call item %+v", call)
				}
				out := oaresp.ResponseInputItemUnionParam{OfFunctionCallOutput: &oaresp.ResponseInputItemFunctionCallOutputParam{
					CallID: oai.String(call.CallID), Output: oaresp.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: oai.String("18C, sunny")}}}
				final, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(firstID),
					Input: items(out), Tools: []oaresp.ToolUnionParam{weather}})
				if err != nil {
					t.Fatal(err)
				}
				if final.OutputText() != "It is 18C in Paris." || final.PreviousResponseID != firstID {
					t.Errorf("final %q previous %q", final.OutputText(), final.PreviousResponseID)
				}
				got := ant.received()
				if len(got) != 2 {
					t.Fatalf("anthropic got %d requests", len(got))
				}
				want := `user: Weather in Paris? | assistant calls get_weather({"city":"Paris"}) | tool toolu_01: 18C, sunny`
				if m := join(ant.messages(got[1])); m != want {
					t.Errorf("second turn sent\n%s\nwant\n%s", m, want)
				}
				if got[1].Get("tools.0.name").Str != "get_weather" {
					t.Errorf("second turn tools %s", got[1].Get("tools").Raw)
				}
			})
		}
	})

	t.Run("conversation continued after the first provider failed", func(t *testing.T) {
		primary := newLLMFake(t, "primary", openaiAPI)
		backup := newLLMFake(t, "backup", anthropicAPI)
		primary.always(llmReply{text: "Nice to meet you, Ada."})
		backup.always(llmReply{text: "Your name is Ada."})
		rr := newResponsesRouter(t, tiered{f: primary, tier: 0}, tiered{f: backup, tier: 1})
		first, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Instructions: oai.String("Be kind."), Input: userText("I am Ada.")})
		if err != nil || first.OutputText() != "Nice to meet you, Ada." {
			t.Fatalf("first turn: %v %q", err, first.OutputText())
		}
		primary.always(llmReply{status: http.StatusServiceUnavailable})
		var hdr http.Header
		second, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(first.ID),
			Input: userText("What is my name?")}, option.WithMiddleware(headerInto(&hdr)))
		if err != nil || second.OutputText() != "Your name is Ada." {
			t.Fatalf("second turn: %v %q", err, second.OutputText())
		}
		if hdr.Get("X-LLMRouter-Provider") != "backup" || hdr.Get("X-LLMRouter-Degraded") != "true" {
			t.Errorf("second turn headers: provider %q degraded %q", hdr.Get("X-LLMRouter-Provider"), hdr.Get("X-LLMRouter-Degraded"))
		}
		if n := len(primary.received()); n < 2 {
			t.Errorf("the primary got %d requests; want the first turn and at least one failed attempt", n)
		}
		got := backup.received()
		if len(got) != 1 {
			t.Fatalf("backup got %d requests", len(got))
		}
		// Instructions are not inherited through previous_response_id.
		want := "user: I am Ada. | assistant: Nice to meet you, Ada. | user: What is my name?"
		if m := join(backup.messages(got[0])); m != want {
			t.Errorf("backup got\n%s\nwant\n%s", m, want)
		}
		recovered := map[string]string{"api": "responses", "model": "m"}
		if !eventually(hangBound, func() bool { return counter(t, rr.reg, "llmrouter_recovered_requests_total", recovered) == 1 }) {
			t.Errorf(`recovered_requests_total{api="responses"} = %v, want 1`, counter(t, rr.reg, "llmrouter_recovered_requests_total", recovered))
		}
	})

	t.Run("bad input is a 4xx naming the field; nothing is sent", func(t *testing.T) {
		ant := newLLMFake(t, "ant", anthropicAPI)
		rr := newResponsesRouter(t, tiered{f: ant})
		computerOutput := oaresp.ResponseInputItemUnionParam{OfComputerCallOutput: &oaresp.ResponseInputItemComputerCallOutputParam{CallID: "c1",
			Output: oaresp.ResponseComputerToolCallOutputScreenshotParam{ImageURL: oai.String("https://x/s.png")}}}
		tests := []struct {
			name      string
			params    oaresp.ResponseNewParams
			status    int
			param     string
			code      string
			inMessage string
		}{
			{"unknown item type", oaresp.ResponseNewParams{Model: "m", Input: items(computerOutput)}, 400, "input[0].type", "invalid_request_error", "computer_call_output"},
			{"forced built-in tool on an anthropic target", oaresp.ResponseNewParams{Model: "m", Input: userText("search"),
				Tools: webSearch, ToolChoice: forceSearch}, 400, "tool_choice.type", "invalid_request_error", "web_search"},
			{"background", oaresp.ResponseNewParams{Model: "m", Input: userText("x"), Background: oai.Bool(true)}, 400, "background", "invalid_request_error", "background"},
			{"unknown previous response", oaresp.ResponseNewParams{Model: "m", Input: userText("x"), PreviousResponseID: oai.String("resp_expired")},
				400, "previous_response_id", "previous_response_not_found", "resp_expired"},
			{"unknown model", oaresp.ResponseNewParams{Model: "nope", Input: userText("x")}, 404, "model", "model_not_found", "nope"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := rr.client.Responses.New(ctx, tt.params)
				var apiErr *oai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || apiErr.Param != tt.param || apiErr.Code != tt.code ||
					!strings.Contains(apiErr.Message, tt.inMessage) {
					t.Fatalf("got %v; want %d param %q code %q", err, tt.status, tt.param, tt.code)
				}
			})
		}
		_, err := rr.client.Responses.Get(ctx, "resp_unknown", oaresp.ResponseGetParams{})
		var apiErr *oai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("GET unknown: %v", err)
		}
		if n := len(ant.received()); n != 0 {
			t.Errorf("the provider got %d requests, want none", n)
		}
	})
}

// headerInto is SDK middleware that keeps the answer's headers.
func headerInto(h *http.Header) option.Middleware {
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil {
			*h = resp.Header
		}
		return resp, err
	}
}

// counter is the value of a counter family's series with exactly labels
// (0 while it has none).
func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
