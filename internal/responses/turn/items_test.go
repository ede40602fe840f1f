package turn

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// TestInputItems: GET /v1/responses/{id}/input_items over a chained
// response: the earlier turn's input and output, then its own input,
// newest first by default; order, limit and after page through them as
// OpenAI's cursor pages do; every item in OpenAI's Item shape with its
// id; bad parameters are 400s naming them.
func TestInputItems(t *testing.T) {
	first := &store.Turn{
		Input:  []wire.Item{{Type: wire.TypeMessage, ID: "msg_u1", Role: "user", Text: "weather?"}},
		Output: []wire.Item{{Type: wire.TypeFunctionCall, ID: "fc_1", CallID: "call_1", Name: "w", Arguments: `{"city":"Paris"}`}},
	}
	second := &store.Turn{Prev: first, Input: []wire.Item{
		{Type: wire.TypeFunctionCallOutput, ID: "fco_1", CallID: "call_1", Text: "18C"},
		{Type: wire.TypeMessage, ID: "msg_a", Role: "assistant", Parts: []wire.Part{{Type: wire.PartOutputText, Text: "noted"}}},
		{Type: wire.TypeMessage, ID: "msg_u2", Role: "user", Parts: []wire.Part{{Type: wire.PartInputText, Text: "and"},
			{Type: wire.PartInputImage, ImageURL: "https://x/y.png", Detail: "auto"}}},
	}}
	rec := &store.Record{ID: "resp_2", Turn: second}
	tests := []struct {
		query                string
		wantIDs              string
		wantFirst, wantLast  string
		wantMore             bool
		wantParam, wantInMsg string
	}{
		{"", "msg_u2 msg_a fco_1 fc_1 msg_u1", "msg_u2", "msg_u1", false, "", ""},
		{"order=asc", "msg_u1 fc_1 fco_1 msg_a msg_u2", "msg_u1", "msg_u2", false, "", ""},
		{"limit=2", "msg_u2 msg_a", "msg_u2", "msg_a", true, "", ""},
		{"limit=2&after=msg_a", "fco_1 fc_1", "fco_1", "fc_1", true, "", ""},
		{"limit=2&after=fc_1", "msg_u1", "msg_u1", "msg_u1", false, "", ""},
		{"order=asc&after=msg_u2", "", "", "", false, "", ""},
		{"include[]=message.input_image.image_url&limit=100", "msg_u2 msg_a fco_1 fc_1 msg_u1", "msg_u2", "msg_u1", false, "", ""},
		{"limit=0", "", "", "", false, "limit", "1 to 100"},
		{"limit=101", "", "", "", false, "limit", "1 to 100"},
		{"order=newest", "", "", "", false, "order", "newest"},
		{"after=msg_nope", "", "", "", false, "after", "msg_nope"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			b, e := InputItems(rec, q)
			if tt.wantParam != "" {
				if e == nil || e.Status != 400 || e.Param != tt.wantParam || !strings.Contains(e.Message, tt.wantInMsg) {
					t.Fatalf("got %+v; want 400 param %q", e, tt.wantParam)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			list := gjson.ParseBytes(b)
			var ids []string
			for _, it := range list.Get("data").Array() {
				ids = append(ids, it.Get("id").Str)
			}
			if got := strings.Join(ids, " "); got != tt.wantIDs || list.Get("object").Str != "list" ||
				list.Get("first_id").Str != tt.wantFirst || list.Get("last_id").Str != tt.wantLast || list.Get("has_more").Bool() != tt.wantMore {
				t.Errorf("got %s; want ids %q first %q last %q has_more %v", b, tt.wantIDs, tt.wantFirst, tt.wantLast, tt.wantMore)
			}
			if tt.wantIDs == "" && (list.Get("first_id").Type != gjson.Null || list.Get("data").Raw != "[]") {
				t.Errorf("an empty page: %s; want data [] and first_id null", b)
			}
		})
	}
	t.Run("shapes", func(t *testing.T) {
		b, e := InputItems(rec, url.Values{"order": {"asc"}})
		if e != nil {
			t.Fatal(e)
		}
		for path, want := range map[string]string{
			"data.0.type": "message", "data.0.role": "user", "data.0.status": "completed",
			"data.0.content.0.type": "input_text", "data.0.content.0.text": "weather?",
			"data.1.type": "function_call", "data.1.call_id": "call_1", "data.1.name": "w", "data.1.arguments": `{"city":"Paris"}`, "data.1.status": "completed",
			"data.2.type": "function_call_output", "data.2.call_id": "call_1", "data.2.output": "18C", "data.2.status": "completed",
			"data.3.role": "assistant", "data.3.content.0.type": "output_text", "data.3.content.0.text": "noted", "data.3.content.0.annotations": "[]",
			"data.4.content.1.type": "input_image", "data.4.content.1.image_url": "https://x/y.png", "data.4.content.1.detail": "auto",
		} {
			if got := gjson.GetBytes(b, path).String(); got != want {
				t.Errorf("%s = %q, want %q", path, got, want)
			}
		}
	})
}
