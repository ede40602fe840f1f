package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	oaresp "github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// TestResponsesInputItems: GET /v1/responses/{id}/input_items with the
// official Go SDK over a two-turn conversation: the list and the auto
// pager return what the response was given (the first turn's input and
// output, then its own input), newest first by default, in pages whose
// cursor is the last item's id (docs/ARCHITECTURE.md, "Responses API").
func TestResponsesInputItems(t *testing.T) {
	ctx := context.Background()
	oc := newLLMFake(t, "local", openaiAPI)
	oc.script(func(n int) llmReply { return llmReply{text: []string{"", "Hi Ada.", "Ada."}[n]} })
	rr := newResponsesRouter(t, tiered{f: oc})
	first, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("I am Ada.")})
	if err != nil {
		t.Fatal(err)
	}
	second, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(first.ID),
		Input: userText("Who am I?")})
	if err != nil {
		t.Fatal(err)
	}
	page, err := rr.client.Responses.InputItems.List(ctx, second.ID, oaresp.InputItemListParams{})
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, it := range page.Data {
		desc = append(desc, it.Type+"/"+it.Role+"/"+itemText(it))
	}
	if want := "message/user/Who am I? | message/assistant/Hi Ada. | message/user/I am Ada."; strings.Join(desc, " | ") != want || page.HasMore {
		t.Errorf("input items\ngot  %s (has_more %v)\nwant %s", strings.Join(desc, " | "), page.HasMore, want)
	}
	for _, it := range page.Data {
		if it.ID == "" {
			t.Errorf("an item without id: %s", it.RawJSON())
		}
	}

	pager := rr.client.Responses.InputItems.ListAutoPaging(ctx, second.ID, oaresp.InputItemListParams{Limit: oai.Int(1), Order: oaresp.InputItemListParamsOrderAsc})
	var asc []string
	for pager.Next() {
		asc = append(asc, itemText(pager.Current()))
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	if want := "I am Ada. | Hi Ada. | Who am I?"; strings.Join(asc, " | ") != want {
		t.Errorf("pages of one, ascending: got %s, want %s", strings.Join(asc, " | "), want)
	}
}

// itemText is a listed message's text.
func itemText(it oaresp.ResponseItemUnion) string {
	var b strings.Builder
	for _, c := range gjson.Get(it.RawJSON(), "content").Array() {
		b.WriteString(c.Get("text").Str)
	}
	return b.String()
}

// TestResponsesNotFoundShapes: an id the router does not hold gets
// exactly OpenAI's answers (RESPONSES.md §4): GET, DELETE and input_items
// a 404 {"message":"Response with id '…' not found.","type":
// "invalid_request_error","param":null,"code":null}; previous_response_id
// a 400 with param previous_response_id and code
// previous_response_not_found; an item_reference a 400 with param input
// and code null. The SDK maps each to its error.
func TestResponsesNotFoundShapes(t *testing.T) {
	ctx := context.Background()
	oc := newLLMFake(t, "local", openaiAPI)
	rr := newResponsesRouter(t, tiered{f: oc})
	const id = "resp_0123456789abcdef"
	for _, c := range []struct {
		method, path, body string
		status             int
		message            string
		param, code        any // nil: null
	}{
		{"GET", "/v1/responses/" + id, "", 404, "Response with id '" + id + "' not found.", nil, nil},
		{"DELETE", "/v1/responses/" + id, "", 404, "Response with id '" + id + "' not found.", nil, nil},
		{"GET", "/v1/responses/" + id + "/input_items", "", 404, "Response with id '" + id + "' not found.", nil, nil},
		{"POST", "/v1/responses", `{"model":"m","input":"x","previous_response_id":"` + id + `"}`, 400,
			"Previous response with id '" + id + "' not found.", "previous_response_id", "previous_response_not_found"},
		{"POST", "/v1/responses", `{"model":"m","input":[{"type":"item_reference","id":"msg_gone"}]}`, 400,
			"Item with id 'msg_gone' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", "input", nil},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, rr.front.URL+c.path, strings.NewReader(c.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			e := gjson.GetBytes(b, "error")
			want := func(v any) string {
				if v == nil {
					return "null"
				}
				return `"` + v.(string) + `"`
			}
			if resp.StatusCode != c.status || e.Get("message").Str != c.message || e.Get("type").Str != "invalid_request_error" ||
				e.Get("param").Raw != want(c.param) || e.Get("code").Raw != want(c.code) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("got %d %s", resp.StatusCode, b)
			}
		})
	}
	_, err := rr.client.Responses.InputItems.List(ctx, id, oaresp.InputItemListParams{})
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("SDK input_items of an unknown id: %v", err)
	}
	if n := len(oc.received()); n != 0 {
		t.Errorf("the provider got %d requests", n)
	}
	http.DefaultClient.CloseIdleConnections()
}
