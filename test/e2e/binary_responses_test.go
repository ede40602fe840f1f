package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oaresp "github.com/openai/openai-go/v3/responses"
)

// testBinaryResponses: the Responses API on the real binary, with the
// official Go SDK, over an OpenAI-compatible provider in tier 0 and an
// Anthropic one in tier 1 (docs/ARCHITECTURE.md, "Responses API"). A
// first turn with instructions is served by tier 0; tier 0 then fails
// every call, and a streamed second turn through previous_response_id is
// served by tier 1, which receives the whole conversation (without the
// first turn's instructions); the stream starts with response.created and
// ends with response.completed carrying usage, its deltas adding up to
// the answer; GET returns the stored second response; a built-in tool is
// a 400 naming the field that reaches no provider.
func testBinaryResponses(t *testing.T, bin string) {
	primary := newLLMFake(t, "primary", openaiAPI)
	backup := newLLMFake(t, "backup", anthropicAPI)
	primary.always(llmReply{text: "Noted: your name is Grace."})
	const answer = "You told me your name is Grace."
	backup.always(llmReply{text: answer})
	bf := func(f *llmFake) *binFake { return &binFake{upstream: &upstream{name: f.name, d: f.d, srv: f.srv}} }
	p := startRouter(t, bin, binConfig{providers: []binProvider{
		{fake: bf(primary), typ: "openai_compatible", tier: 0},
		{fake: bf(backup), typ: "anthropic", tier: 1},
	}})
	defer p.stop()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	client := oai.NewClient(option.WithBaseURL(p.api+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0), option.WithHTTPClient(hc))
	ctx, cancel := context.WithTimeout(context.Background(), 3*hangBound)
	defer cancel()

	first, err := client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Instructions: oai.String("Remember names."),
		Input: userText("My name is Grace.")})
	if err != nil || first.OutputText() != "Noted: your name is Grace." || first.Status != "completed" || first.Usage.TotalTokens == 0 {
		t.Fatalf("first turn: %v %+v", err, first)
	}
	if got := join(primary.messages(primary.received()[0])); got != "system: Remember names. | user: My name is Grace." {
		t.Errorf("primary got %s", got)
	}

	primary.always(llmReply{status: http.StatusServiceUnavailable})
	stream := client.Responses.NewStreaming(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(first.ID),
		Input: userText("What is my name?")})
	var (
		types  []string
		deltas strings.Builder
		done   oaresp.Response
	)
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			done = ev.AsResponseCompleted().Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(types) == 0 || types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Fatalf("events %v", types)
	}
	if deltas.String() != answer || done.OutputText() != answer || done.Usage.InputTokens == 0 || done.Usage.OutputTokens == 0 {
		t.Errorf("deltas %q, completed %q, usage %+v", deltas.String(), done.OutputText(), done.Usage)
	}
	got := backup.received()
	if len(got) != 1 {
		t.Fatalf("backup got %d requests", len(got))
	}
	want := "user: My name is Grace. | assistant: Noted: your name is Grace. | user: What is my name?"
	if m := join(backup.messages(got[0])); m != want {
		t.Errorf("backup got\n%s\nwant\n%s", m, want)
	}

	again, err := client.Responses.Get(ctx, done.ID, oaresp.ResponseGetParams{})
	if err != nil || again.OutputText() != answer || again.PreviousResponseID != first.ID {
		t.Errorf("GET: %v %+v", err, again)
	}

	calls := len(primary.received()) + len(backup.received())
	_, err = client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("x"),
		Tools: []oaresp.ToolUnionParam{{OfCodeInterpreter: &oaresp.ToolCodeInterpreterParam{
			Container: oaresp.ToolCodeInterpreterContainerUnionParam{OfString: oai.String("auto")}}}},
		ToolChoice: oaresp.ResponseNewParamsToolChoiceUnion{OfHostedTool: &oaresp.ToolChoiceTypesParam{Type: oaresp.ToolChoiceTypesTypeCodeInterpreter}}})
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "tool_choice.type" {
		t.Errorf("forced built-in tool: got %v, want 400 param tool_choice.type", err)
	}
	if n := len(primary.received()) + len(backup.received()); n != calls {
		t.Errorf("a refused request reached a provider (%d calls, were %d)", n, calls)
	}
}

// testBinaryResponsesNative: the native Responses API on the real binary,
// with the official Go SDK, over an Anthropic provider in tier 0, an
// OpenAI one in tier 1 and an Azure one in tier 2 (docs/ARCHITECTURE.md,
// "Responses API"). A plain first turn is translated and served by
// Anthropic; a second turn forcing a built-in tool continues it natively at
// OpenAI (Anthropic skipped), which receives the conversation as input
// and no previous_response_id; with OpenAI failing, a streamed third turn
// fails over to Azure's v1 Responses API before the first byte; a last
// plain turn continues the chain on Anthropic without the built-in
// tool's call. Metrics count the native requests under api="responses".
func testBinaryResponsesNative(t *testing.T, bin string) {
	ant := newLLMFake(t, "ant", anthropicAPI)
	oa := newRespFake(t, "oa", false)
	az := newRespFake(t, "az", true)
	ant.script(func(n int) llmReply {
		return llmReply{text: []string{"", "Hello Ada.", "You asked about the weather."}[n]}
	})
	oa.always(respReply{text: "Sunny in Paris.", extra: []map[string]any{searchCall}})
	az.always(respReply{text: "Rain in Rome."})
	bf := func(name string, srv *httptest.Server) *binFake {
		return &binFake{upstream: &upstream{name: name, srv: srv}}
	}
	p := startRouter(t, bin, binConfig{providers: []binProvider{
		{fake: bf(ant.name, ant.srv), typ: "anthropic", tier: 0},
		{fake: bf(oa.name, oa.srv), typ: "openai", tier: 1},
		{fake: bf(az.name, az.srv), typ: "azure", tier: 2},
	}, tierWait: "0s"}) // the third turn fails over from oa's 503 to az at once
	defer p.stop()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	client := oai.NewClient(option.WithBaseURL(p.api+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0), option.WithHTTPClient(hc))
	ctx, cancel := context.WithTimeout(context.Background(), 3*hangBound)
	defer cancel()

	first, err := client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("I am Ada.")})
	if err != nil || first.OutputText() != "Hello Ada." {
		t.Fatalf("first turn: %v", err)
	}
	var hdr http.Header
	second, err := client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(first.ID),
		Input: userText("Weather in Paris?"), Tools: webSearch, ToolChoice: forceSearch}, option.WithMiddleware(headerInto(&hdr)))
	if err != nil || second.OutputText() != "Sunny in Paris." || second.PreviousResponseID != first.ID || hdr.Get("X-LLMRouter-Provider") != "oa" {
		t.Fatalf("second turn: %v %s %v", err, second.RawJSON(), hdr)
	}
	if n := len(ant.received()); n != 1 {
		t.Errorf("anthropic got %d requests, want only the first turn", n)
	}
	got := oa.received(false)
	if len(got) != 1 {
		t.Fatalf("openai got %d Responses requests", len(got))
	}
	b := got[0].body
	var sent []string
	for _, it := range b.Get("input").Array() {
		sent = append(sent, it.Get("role").Str+": "+it.Get("content").String())
	}
	if want := "user: I am Ada. | assistant: Hello Ada. | user: Weather in Paris?"; join(sent) != want || b.Get("previous_response_id").Exists() ||
		b.Get("model").Str != "model-of-oa" || b.Get("tools.0.type").Str != "web_search" || got[0].header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("openai got %s (input %s)", b.Raw, join(sent))
	}

	oa.always(respReply{status: http.StatusServiceUnavailable})
	stream := client.Responses.NewStreaming(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(second.ID),
		Input: userText("And in Rome?"), Tools: webSearch, ToolChoice: forceSearch}, option.WithMiddleware(headerInto(&hdr)))
	var third oaresp.Response
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "response.completed" {
			third = ev.AsResponseCompleted().Response
		}
	}
	if err := stream.Err(); err != nil || third.OutputText() != "Rain in Rome." || hdr.Get("X-LLMRouter-Provider") != "az" || hdr.Get("X-LLMRouter-Attempts") != "2" {
		t.Fatalf("third turn: %v %s %v", err, third.RawJSON(), hdr)
	}
	azGot := az.received(false)
	if len(azGot) != 1 || azGot[0].path != "/openai/v1/responses" || azGot[0].header.Get("Api-Key") != "az-key" || azGot[0].body.Get("model").Str != "model-of-az" ||
		len(azGot[0].body.Get("input").Array()) != 6 || azGot[0].body.Get("input.3.type").Str != "web_search_call" {
		t.Errorf("azure got %v", azGot)
	}

	last, err := client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(third.ID), Input: userText("What did I ask?")})
	if err != nil || last.OutputText() != "You asked about the weather." {
		t.Fatalf("last turn: %v", err)
	}
	msgs := ant.received()
	want := "user: I am Ada. | assistant: Hello Ada. | user: Weather in Paris? | assistant: Sunny in Paris. | user: And in Rome? | " +
		"assistant: Rain in Rome. | user: What did I ask?"
	if m := join(ant.messages(msgs[len(msgs)-1])); m != want {
		t.Errorf("anthropic got\n%s\nwant\n%s", m, want)
	}
	// Four turns answered 200, the request line and metrics follow the
	// answer; the upstream counts by provider; four stored.
	series := `llmrouter_requests_total{api="responses",code="200",model="m"}`
	if !eventually(hangBound, func() bool { return p.metricValue(t, series) == 4 }) {
		t.Errorf("%s = %v, want 4", series, p.metricValue(t, series))
	}
	for series, want := range map[string]float64{
		`llmrouter_upstream_requests_total{kind="ok",provider="oa"}`:         1,
		`llmrouter_upstream_requests_total{kind="overloaded",provider="oa"}`: 1,
		`llmrouter_upstream_requests_total{kind="ok",provider="az"}`:         1,
		`llmrouter_recovered_requests_total{api="responses",model="m"}`:      1,
		"llmrouter_responses_stored":                                         4,
	} {
		if got := p.metricValue(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}
