package e2e

import (
	"context"
	"errors"
	"net/http"
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
			Container: oaresp.ToolCodeInterpreterContainerUnionParam{OfString: oai.String("auto")}}}}})
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "tools[0].type" {
		t.Errorf("built-in tool: got %v, want 400 param tools[0].type", err)
	}
	if n := len(primary.received()) + len(backup.received()); n != calls {
		t.Errorf("a refused request reached a provider (%d calls, were %d)", n, calls)
	}
}
