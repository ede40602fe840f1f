package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	oaresp "github.com/openai/openai-go/v3/responses"
)

// webSearch is the built-in tool the native scenarios ask for.
var webSearch = []oaresp.ToolUnionParam{{OfWebSearch: &oaresp.WebSearchToolParam{Type: oaresp.WebSearchToolTypeWebSearch}}}

// forceSearch forces the built-in tool: only a native target can honour
// that (a declared one is left out of a translated request).
var forceSearch = oaresp.ResponseNewParamsToolChoiceUnion{OfHostedTool: &oaresp.ToolChoiceTypesParam{Type: "web_search"}}

// searchCall is a web_search_call output item, as OpenAI returns it.
var searchCall = map[string]any{"type": "web_search_call", "id": "ws_1", "status": "completed",
	"action": map[string]any{"type": "search", "query": "weather in Paris"}}

// TestResponsesNative: a request that needs a provider's own Responses
// API (a forced built-in tool here) goes natively to the model's openai and
// azure targets only, with the same attempt loop; the other targets are
// skipped without counting as failures (docs/ARCHITECTURE.md, "Responses
// API"). Checked with the official Go SDK and fake OpenAI and Azure
// upstreams that record what they receive.
func TestResponsesNative(t *testing.T) {
	ctx := context.Background()

	t.Run("plain: the openai target gets the client's body with its model", func(t *testing.T) {
		ant := newLLMFake(t, "ant", anthropicAPI)
		oa := newRespFake(t, "oa", false)
		oa.always(respReply{text: "Sunny, 18C.", extra: []map[string]any{searchCall}})
		rr := newResponsesRouter(t, tiered{f: ant}, tiered{rf: oa})
		var hdr http.Header
		resp, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("Weather in Paris?"), Tools: webSearch, ToolChoice: forceSearch,
			Include: []oaresp.ResponseIncludable{"web_search_call.action.sources"}},
			option.WithJSONSet("future_field", map[string]any{"kept": true}), option.WithMiddleware(headerInto(&hdr)))
		if err != nil {
			t.Fatal(err)
		}
		if resp.OutputText() != "Sunny, 18C." || resp.ID != "resp_oa_1" || len(resp.Output) != 2 || resp.Output[0].Type != "web_search_call" {
			t.Errorf("got %s", resp.RawJSON())
		}
		if hdr.Get("X-LLMRouter-Provider") != "oa" || hdr.Get("X-LLMRouter-Model") != "model-of-oa" || hdr.Get("X-LLMRouter-Overhead-Ms") == "" {
			t.Errorf("headers %v", hdr)
		}
		if n := len(ant.received()); n != 0 {
			t.Errorf("the anthropic target got %d requests; a native request goes to openai and azure targets only", n)
		}
		got := oa.received(false)
		if len(got) != 1 {
			t.Fatalf("the openai target got %d Responses requests", len(got))
		}
		b := got[0].body
		if b.Get("model").Str != "model-of-oa" || b.Get("tools.0.type").Str != "web_search" || b.Get("input").Str != "Weather in Paris?" ||
			b.Get("include.0").Str != "web_search_call.action.sources" || !b.Get("future_field.kept").Bool() ||
			got[0].header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("the provider got %s (%v)", b.Raw, got[0].header)
		}
		// Stored in the router too: GET and input_items have it.
		again, err := rr.client.Responses.Get(ctx, resp.ID, oaresp.ResponseGetParams{})
		if err != nil || again.OutputText() != "Sunny, 18C." {
			t.Errorf("GET: %v %s", err, again.RawJSON())
		}
		page, err := rr.client.Responses.InputItems.List(ctx, resp.ID, oaresp.InputItemListParams{})
		if err != nil || len(page.Data) != 1 || itemText(page.Data[0]) != "Weather in Paris?" {
			t.Errorf("input_items: %v %+v", err, page)
		}
		labels := map[string]string{"api": "responses", "model": "m", "code": "200"}
		if !eventually(hangBound, func() bool { return counter(t, rr.reg, "llmrouter_requests_total", labels) == 1 }) {
			t.Errorf("requests_total%v = %v, want 1", labels, counter(t, rr.reg, "llmrouter_requests_total", labels))
		}
	})

	t.Run("failover from openai to azure before the first byte", func(t *testing.T) {
		oa := newRespFake(t, "oa", false)
		az := newRespFake(t, "az", true)
		oa.always(respReply{status: http.StatusServiceUnavailable})
		rr := newResponsesRouter(t, tiered{rf: oa, tier: 0}, tiered{rf: az, tier: 1})
		for _, streamed := range []bool{false, true} {
			var (
				hdr  http.Header
				text string
			)
			params := oaresp.ResponseNewParams{Model: "m", Input: userText("search"), Tools: webSearch}
			if streamed {
				stream := rr.client.Responses.NewStreaming(ctx, params, option.WithMiddleware(headerInto(&hdr)))
				for stream.Next() {
					if ev := stream.Current(); ev.Type == "response.completed" {
						text = ev.AsResponseCompleted().Response.OutputText()
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				resp, err := rr.client.Responses.New(ctx, params, option.WithMiddleware(headerInto(&hdr)))
				if err != nil {
					t.Fatal(err)
				}
				text = resp.OutputText()
			}
			if text != "native answer from az" || hdr.Get("X-LLMRouter-Provider") != "az" || hdr.Get("X-LLMRouter-Attempts") != "2" ||
				hdr.Get("X-LLMRouter-Degraded") != "true" {
				t.Errorf("streamed %v: text %q headers %v", streamed, text, hdr)
			}
		}
		got := az.received(false)
		if len(got) != 2 {
			t.Fatalf("azure got %d Responses requests, want 2", len(got))
		}
		for _, r := range got {
			if r.path != "/openai/v1/responses" || r.query != "" || r.header.Get("Api-Key") != "az-key" || r.body.Get("model").Str != "model-of-az" {
				t.Errorf("azure got %s?%s %v %s", r.path, r.query, r.header, r.body.Raw)
			}
		}
	})

	t.Run("streamed: every event relayed with its name, stored before the end", func(t *testing.T) {
		oa := newRespFake(t, "oa", false)
		oa.always(respReply{text: "Sunny in Paris.", extra: []map[string]any{searchCall}})
		rr := newResponsesRouter(t, tiered{rf: oa})
		stream := rr.client.Responses.NewStreaming(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("Weather?"), Tools: webSearch})
		var (
			types  []string
			deltas strings.Builder
			done   oaresp.Response
		)
		for stream.Next() {
			ev := stream.Current()
			if ev.SequenceNumber != int64(len(types)) {
				t.Errorf("event %d has sequence_number %d", len(types), ev.SequenceNumber)
			}
			types = append(types, ev.Type)
			switch ev.Type {
			case "response.output_text.delta":
				deltas.WriteString(ev.Delta)
			case "response.completed":
				done = ev.AsResponseCompleted().Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := "response.created response.in_progress response.output_item.added response.output_item.done response.output_item.added " +
			"response.content_part.added response.output_text.delta response.output_text.delta response.output_text.delta response.output_text.done " +
			"response.content_part.done response.output_item.done response.completed"
		if strings.Join(types, " ") != want || deltas.String() != "Sunny in Paris." || done.OutputText() != "Sunny in Paris." || done.Usage.OutputTokens != fakeOutputTokens {
			t.Errorf("events %v, deltas %q, completed %s", types, deltas.String(), done.RawJSON())
		}
		if again, err := rr.client.Responses.Get(ctx, done.ID, oaresp.ResponseGetParams{}); err != nil || again.OutputText() != "Sunny in Paris." {
			t.Errorf("GET after the stream: %v", err)
		}
	})

	t.Run("stream cut after the commit", func(t *testing.T) {
		oa := newRespFake(t, "oa", false)
		oa.always(respReply{text: "this answer is cut short", cut: true})
		rr := newResponsesRouter(t, tiered{rf: oa})
		stream := rr.client.Responses.NewStreaming(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("x"), Tools: webSearch})
		var types []string
		for stream.Next() {
			types = append(types, stream.Current().Type)
		}
		var se *ssestream.StreamError
		if err := stream.Err(); !errors.As(err, &se) || se.Event.Type != "error" || !strings.Contains(se.Message, "upstream_error") {
			t.Fatalf("got %v after %v; want the error event", err, types)
		}
		if len(types) == 0 || types[0] != "response.created" || types[len(types)-1] != "response.output_text.delta" {
			t.Errorf("events before the error: %v", types)
		}
		if n := len(oa.received(false)); n != 1 {
			t.Errorf("the provider got %d requests; after the commit nothing fails over", n)
		}
	})

	t.Run("previous_response_id across translated and native turns", func(t *testing.T) {
		ant := newLLMFake(t, "ant", anthropicAPI)
		oa := newRespFake(t, "oa", false)
		ant.script(func(n int) llmReply { return llmReply{text: []string{"", "Hello Ada.", "You asked about Paris."}[n]} })
		oa.always(respReply{text: "Sunny in Paris.", extra: []map[string]any{searchCall}})
		rr := newResponsesRouter(t, tiered{f: ant, tier: 0}, tiered{rf: oa, tier: 1})
		first, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Instructions: oai.String("Be brief."), Input: userText("I am Ada.")})
		if err != nil || first.OutputText() != "Hello Ada." {
			t.Fatalf("first turn (translated, anthropic): %v", err)
		}
		second, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(first.ID),
			Input: userText("Weather in Paris?"), Tools: webSearch, ToolChoice: forceSearch})
		if err != nil || second.OutputText() != "Sunny in Paris." || second.PreviousResponseID != first.ID {
			t.Fatalf("second turn (native): %v %s", err, second.RawJSON())
		}
		got := oa.received(false)[0].body
		if got.Get("previous_response_id").Exists() {
			t.Errorf("the router held the previous response but sent previous_response_id: %s", got.Raw)
		}
		var sent []string
		for _, it := range got.Get("input").Array() {
			sent = append(sent, it.Get("role").Str+": "+it.Get("content").String())
		}
		if want := `user: I am Ada. | assistant: Hello Ada. | user: Weather in Paris?`; join(sent) != want {
			t.Errorf("the native provider got input\n%s\nwant\n%s", join(sent), want)
		}
		for _, it := range got.Get("input").Array() {
			if it.Get("id").Exists() {
				t.Errorf("an item the router minted went with its id: %s", it.Raw)
			}
		}
		third, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(second.ID),
			Input: userText("What did I ask?")})
		if err != nil || third.OutputText() != "You asked about Paris." {
			t.Fatalf("third turn (translated, anthropic): %v", err)
		}
		msgs := ant.received()
		if m, want := join(ant.messages(msgs[len(msgs)-1])), "user: I am Ada. | assistant: Hello Ada. | user: Weather in Paris? | "+
			"assistant: Sunny in Paris. | user: What did I ask?"; m != want {
			t.Errorf("anthropic got\n%s\nwant\n%s (the built-in tool's call left out)", m, want)
		}
	})

	t.Run("an id the router does not hold is left to the provider", func(t *testing.T) {
		oa := newRespFake(t, "oa", false)
		rr := newResponsesRouter(t, tiered{rf: oa})
		if _, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String("resp_made_at_openai"),
			Input: items(oaresp.ResponseInputItemUnionParam{OfItemReference: &oaresp.ResponseInputItemItemReferenceParam{ID: "msg_at_openai"}}),
			Tools: webSearch}); err != nil {
			t.Fatal(err)
		}
		b := oa.received(false)[0].body
		if b.Get("previous_response_id").Str != "resp_made_at_openai" || b.Get("input.0.id").Str != "msg_at_openai" {
			t.Errorf("the provider got %s", b.Raw)
		}
	})

	t.Run("store false is not kept", func(t *testing.T) {
		oa := newRespFake(t, "oa", false)
		rr := newResponsesRouter(t, tiered{rf: oa})
		unstored, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("x"), Tools: webSearch, Store: oai.Bool(false)})
		if err != nil {
			t.Fatal(err)
		}
		var apiErr *oai.Error
		if _, err := rr.client.Responses.Get(ctx, unstored.ID, oaresp.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("GET: %v, want 404", err)
		}
		if n := gauge(t, rr.reg, "llmrouter_responses_stored"); n != 0 {
			t.Errorf("%v responses stored, want none", n)
		}
	})

	t.Run("background: reads go to the provider until it finishes", func(t *testing.T) {
		ant := newLLMFake(t, "ant", anthropicAPI)
		oa := newRespFake(t, "oa", false)
		ant.always(llmReply{text: "Continued."})
		oa.always(respReply{queued: true})
		rr := newResponsesRouter(t, tiered{f: ant, tier: 0}, tiered{rf: oa, tier: 1})
		queued, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("Write a long essay."), Background: oai.Bool(true)})
		if err != nil || queued.Status != "queued" || !oa.received(false)[0].body.Get("background").Bool() {
			t.Fatalf("background: %v %s", err, queued.RawJSON())
		}
		var hdr http.Header
		running, err := rr.client.Responses.Get(ctx, queued.ID, oaresp.ResponseGetParams{}, option.WithMiddleware(headerInto(&hdr)))
		if err != nil || running.Status != "in_progress" || hdr.Get("X-LLMRouter-Provider") != "oa" {
			t.Fatalf("GET while running: %v %s %v", err, running.RawJSON(), hdr)
		}
		if got := oa.stored(); len(got) != 1 || got[0].path != "/v1/responses/"+queued.ID || got[0].header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("the provider got %+v", got)
		}
		page, err := rr.client.Responses.InputItems.List(ctx, queued.ID, oaresp.InputItemListParams{Limit: oai.Int(5)})
		if err != nil || len(page.Data) != 1 || itemText(page.Data[0]) != "held at oa" || oa.stored()[1].query != "limit=5" {
			t.Errorf("input_items while running: %v %+v", err, page)
		}
		_, err = rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(queued.ID), Input: userText("next")})
		var apiErr *oai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "previous_response_id" || !strings.Contains(apiErr.Message, "background") {
			t.Errorf("continuing a running response on chat: %v, want 400 naming previous_response_id", err)
		}
		done, err := rr.client.Responses.Get(ctx, queued.ID, oaresp.ResponseGetParams{})
		if err != nil || done.Status != "completed" || done.OutputText() != "background answer from oa" {
			t.Fatalf("GET once finished: %v %s", err, done.RawJSON())
		}
		next, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(queued.ID), Input: userText("next")})
		if err != nil || next.OutputText() != "Continued." {
			t.Fatalf("continued once finished: %v", err)
		}
		if m, want := join(ant.messages(ant.received()[0])), "user: Write a long essay. | assistant: background answer from oa | user: next"; m != want {
			t.Errorf("anthropic got\n%s\nwant\n%s", m, want)
		}
		polls := len(oa.stored())
		if again, err := rr.client.Responses.Get(ctx, queued.ID, oaresp.ResponseGetParams{}); err != nil || again.OutputText() != "background answer from oa" || len(oa.stored()) != polls {
			t.Errorf("GET of the finished response went to the provider again (%v)", err)
		}
		if _, err := rr.client.Responses.Cancel(ctx, queued.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Errorf("cancelling a finished response: %v, want 400", err)
		}

		other, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("again"), Background: oai.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if c, err := rr.client.Responses.Cancel(ctx, other.ID); err != nil || c.Status != "cancelled" {
			t.Errorf("cancel: %v %s", err, c.RawJSON())
		}
		if err := rr.client.Responses.Delete(ctx, other.ID); err != nil {
			t.Errorf("DELETE: %v", err)
		}
		last := oa.stored()
		if r := last[len(last)-1]; r.path != "/v1/responses/"+other.ID {
			t.Errorf("DELETE reached the provider at %s", r.path)
		}
		if _, err := rr.client.Responses.Get(ctx, other.ID, oaresp.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			t.Errorf("GET after DELETE: %v, want 404", err)
		}
	})

	t.Run("no openai or azure target: the 400 naming the field", func(t *testing.T) {
		ant := newLLMFake(t, "ant", anthropicAPI)
		oc := newLLMFake(t, "local", openaiAPI)
		rr := newResponsesRouter(t, tiered{f: ant}, tiered{f: oc})
		_, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("x"), Tools: webSearch, ToolChoice: forceSearch})
		var apiErr *oai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "tool_choice.type" || !strings.Contains(apiErr.Message, "openai or azure") {
			t.Errorf("got %v", err)
		}
		if n := len(ant.received()) + len(oc.received()); n != 0 {
			t.Errorf("providers got %d requests", n)
		}
		// Declared, not forced: left out, the request served (Codex
		// declares web_search on every request).
		if _, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("x"), Tools: webSearch}); err != nil {
			t.Errorf("a declared built-in tool: %v, want it left out and the request served", err)
		}
		for _, got := range append(ant.received(), oc.received()...) {
			if strings.Contains(got.Raw, "web_search") {
				t.Errorf("a translated request carried the built-in tool: %s", got.Raw)
			}
		}
	})
}
