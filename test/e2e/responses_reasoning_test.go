package e2e

import (
	"context"
	"testing"

	oai "github.com/openai/openai-go/v3"
	oaresp "github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// reasoningItem is an encrypted reasoning output item, as OpenAI returns
// it with include: ["reasoning.encrypted_content"].
var reasoningItem = map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{map[string]any{"type": "summary_text", "text": "Look it up."}},
	"encrypted_content": "gAAAAABencrypted"}

// TestResponsesReasoningFollowUp: the follow-ups standard clients send
// after a reasoning model's turn are served (docs/ARCHITECTURE.md,
// "Responses API"). The openai-go pattern of sending every output item
// back (ToParam) with store: false, encrypted reasoning included, goes to
// a translated provider without the reasoning item and without error,
// and to a native one with the reasoning item as the client sent it; the
// Vercel AI SDK's item_reference to a reasoning item the router does not
// hold is no 400 on a translated turn.
func TestResponsesReasoningFollowUp(t *testing.T) {
	ctx := context.Background()
	ant := newLLMFake(t, "ant", anthropicAPI)
	oa := newRespFake(t, "oa", false)
	ant.always(llmReply{text: "It is 18C in Paris."})
	call := map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": `{"city":"Paris"}`, "status": "completed"}
	oa.always(respReply{text: "Checking.", extra: []map[string]any{reasoningItem, call}})
	rr := newResponsesRouter(t, tiered{f: ant, tier: 0}, tiered{rf: oa, tier: 1})
	weather := oaresp.ToolParamOfFunction("get_weather", map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}, false)

	first, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("Weather in Paris?"), Store: oai.Bool(false),
		Include: []oaresp.ResponseIncludable{oaresp.ResponseIncludableReasoningEncryptedContent}, Tools: append([]oaresp.ToolUnionParam{weather}, webSearch...),
		ToolChoice: forceSearch})
	if err != nil || len(first.Output) != 3 || first.Output[0].Type != "reasoning" {
		t.Fatalf("first turn (native): %v %s", err, first.RawJSON())
	}
	// Every output item back, as openai-go's ToParam makes them, and the
	// function's output.
	in := []oaresp.ResponseInputItemUnionParam{oaresp.ResponseInputItemParamOfMessage("Weather in Paris?", oaresp.EasyInputMessageRoleUser)}
	for _, o := range first.Output {
		switch o.Type {
		case "reasoning":
			p := o.AsReasoning().ToParam()
			in = append(in, oaresp.ResponseInputItemUnionParam{OfReasoning: &p})
		case "function_call":
			p := o.AsFunctionCall().ToParam()
			in = append(in, oaresp.ResponseInputItemUnionParam{OfFunctionCall: &p})
		case "message":
			p := o.AsMessage().ToParam()
			in = append(in, oaresp.ResponseInputItemUnionParam{OfOutputMessage: &p})
		}
	}
	in = append(in, oaresp.ResponseInputItemUnionParam{OfFunctionCallOutput: &oaresp.ResponseInputItemFunctionCallOutputParam{
		CallID: oai.String("call_1"), Output: oaresp.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: oai.String("18C, sunny")}}})

	translated, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: items(in...), Store: oai.Bool(false),
		Include: []oaresp.ResponseIncludable{oaresp.ResponseIncludableReasoningEncryptedContent}, Tools: []oaresp.ToolUnionParam{weather}})
	if err != nil || translated.OutputText() != "It is 18C in Paris." {
		t.Fatalf("the follow-up on a translated turn: %v", err)
	}
	want := `user: Weather in Paris? | assistant calls get_weather({"city":"Paris"}) | tool call_1: 18C, sunny | assistant: Checking.`
	if m := join(ant.messages(ant.received()[0])); m != want {
		t.Errorf("anthropic got\n%s\nwant\n%s", m, want)
	}

	if _, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: items(in...), Store: oai.Bool(false),
		Include: []oaresp.ResponseIncludable{oaresp.ResponseIncludableReasoningEncryptedContent},
		Tools:   append([]oaresp.ToolUnionParam{weather}, webSearch...), ToolChoice: forceSearch}); err != nil {
		t.Fatalf("the follow-up on a native turn: %v", err)
	}
	sent := oa.received(false)[1].body.Get("input").Array()
	if len(sent) != 5 || sent[1].Get("type").Str != "reasoning" || sent[1].Get("id").Str != "rs_1" ||
		sent[1].Get("encrypted_content").Str != "gAAAAABencrypted" || sent[1].Get("summary.0.text").Str != "Look it up." {
		t.Errorf("the native provider got input %s", oa.received(false)[1].body.Get("input").Raw)
	}

	vercel, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: items(
		oaresp.ResponseInputItemParamOfMessage("Weather in Paris?", oaresp.EasyInputMessageRoleUser),
		oaresp.ResponseInputItemUnionParam{OfItemReference: &oaresp.ResponseInputItemItemReferenceParam{ID: "rs_not_held"}},
		oaresp.ResponseInputItemParamOfMessage("And now?", oaresp.EasyInputMessageRoleUser))})
	if err != nil || vercel.OutputText() != "It is 18C in Paris." {
		t.Fatalf("an item_reference to a reasoning item the router does not hold: %v", err)
	}
	if m := join(ant.messages(ant.received()[1])); m != "user: Weather in Paris? | user: And now?" {
		t.Errorf("anthropic got %s", m)
	}
	// Stored: input_items lists the reference as sent.
	page, err := rr.client.Responses.InputItems.List(ctx, vercel.ID, oaresp.InputItemListParams{})
	if err != nil || len(page.Data) != 3 || gjson.Get(page.Data[1].RawJSON(), "id").Str != "rs_not_held" {
		t.Errorf("input_items: %v %+v", err, page.Data)
	}
}
