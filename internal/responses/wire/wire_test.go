package wire

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestOutputItem: an output item is written in its type's shape, as
// OpenAI's API writes it; a message's text parts carry the empty arrays
// clients require.
func TestOutputItem(t *testing.T) {
	for _, tc := range []struct {
		name string
		item OutputItem
		want string
	}{
		{name: "message", item: OutputItem{Item: Item{Type: TypeMessage, ID: "msg_1", Parts: []Part{{Type: PartOutputText, Text: "hi"}}}, Status: StatusCompleted},
			want: `{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[],"logprobs":[]}]}`},
		{name: "refusal", item: OutputItem{Item: Item{Type: TypeMessage, ID: "msg_2", Parts: []Part{{Type: PartRefusal, Text: "no"}}}, Status: StatusCompleted},
			want: `{"id":"msg_2","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"no"}]}`},
		{name: "function call", item: OutputItem{Item: Item{Type: TypeFunctionCall, ID: "fc_1", CallID: "call_1", Name: "f", Arguments: `{"a":1}`}, Status: "in_progress"},
			want: `{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}`},
		{name: "raw kept", item: OutputItem{Item: Item{Type: "web_search_call", Raw: json.RawMessage(`{"type":"web_search_call","id":"ws_1"}`)}},
			want: `{"type":"web_search_call","id":"ws_1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.item)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}

// TestInputItem: an item sent on to a provider's own Responses API has no
// router-minted id, and an assistant message goes as its text.
func TestInputItem(t *testing.T) {
	for _, tc := range []struct {
		name string
		item Item
		want string
	}{
		{name: "easy user message", item: Item{Type: TypeMessage, ID: "msg_x", Role: "user", Text: "hi"},
			want: `{"type":"message","role":"user","content":"hi"}`},
		{name: "parts", item: Item{Type: TypeMessage, Role: "user", Parts: []Part{{Type: PartInputText, Text: "a"}, {Type: PartInputImage, ImageURL: "https://x/y.png", Detail: "low"}}},
			want: `{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://x/y.png","detail":"low"}]}`},
		{name: "assistant as its text", item: Item{Type: TypeMessage, ID: "msg_y", Role: "assistant", Parts: []Part{{Type: PartOutputText, Text: "a"}, {Type: PartRefusal, Text: "b"}}},
			want: `{"type":"message","role":"assistant","content":"ab"}`},
		{name: "function call", item: Item{Type: TypeFunctionCall, ID: "fc_1", CallID: "c", Name: "f", Arguments: "{}"},
			want: `{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`},
		{name: "function output", item: Item{Type: TypeFunctionCallOutput, CallID: "c", Text: "42"},
			want: `{"type":"function_call_output","call_id":"c","output":"42"}`},
		{name: "raw", item: Item{Type: TypeReasoning, Raw: json.RawMessage(`{"type":"reasoning","encrypted_content":"e"}`)},
			want: `{"type":"reasoning","encrypted_content":"e"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(InputItem(tc.item)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestListedItem: input_items lists every item with its id and status
// completed, a user message's string content as an input_text part.
func TestListedItem(t *testing.T) {
	for _, tc := range []struct {
		name string
		item Item
		want string
	}{
		{name: "user text", item: Item{Type: TypeMessage, ID: "msg_1", Role: "user", Text: "hi"},
			want: `{"id":"msg_1","type":"message","role":"user","status":"completed","content":[{"type":"input_text","text":"hi"}]}`},
		{name: "assistant text", item: Item{Type: TypeMessage, ID: "msg_2", Role: "assistant", Text: "yo"},
			want: `{"id":"msg_2","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"yo","annotations":[],"logprobs":[]}]}`},
		{name: "function call", item: Item{Type: TypeFunctionCall, ID: "fc_1", CallID: "c", Name: "f", Arguments: "{}"},
			want: `{"id":"fc_1","type":"function_call","status":"completed","call_id":"c","name":"f","arguments":"{}"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(ListedItem(tc.item))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}

// TestEmitter: events are numbered in order and written as one SSE event
// each, the type as its name, the JSON on one data line.
func TestEmitter(t *testing.T) {
	var e Emitter
	var out []byte
	for _, text := range []string{"a", "line\nbreak"} {
		out = e.Emit(out, &TextDeltaEvent{Type: "response.output_text.delta", SequenceNumber: e.Next(), Delta: text})
	}
	events := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	if len(events) != 2 || e.Seq != 2 {
		t.Fatalf("got %d events and Seq %d from %q", len(events), e.Seq, out)
	}
	for i, ev := range events {
		lines := strings.Split(ev, "\n")
		if len(lines) != 2 || lines[0] != "event: response.output_text.delta" || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("event %d: %q", i, ev)
		}
		var v struct {
			Seq int `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &v); err != nil || v.Seq != i {
			t.Errorf("event %d: sequence %d, err %v", i, v.Seq, err)
		}
	}
}

// TestIDs: ids carry OpenAI's prefixes and are unguessable and distinct;
// call ids are OpenAI's shape.
func TestIDs(t *testing.T) {
	a, b := NewID("resp_"), NewID("resp_")
	if a == b || !regexp.MustCompile(`^resp_[0-9a-f]{48}$`).MatchString(a) {
		t.Errorf("NewID: %q, %q", a, b)
	}
	c := NewCallID()
	if !regexp.MustCompile(`^call_[A-Za-z0-9]{24}$`).MatchString(c) || c == NewCallID() {
		t.Errorf("NewCallID: %q", c)
	}
}
