package responses

import (
	"strings"
	"testing"
)

func TestDecodeRefusesWhatItCannotHonour(t *testing.T) {
	tests := []struct {
		name, body string
		wantParam  string
		wantInMsg  string
	}{
		{"no model", `{"input":"hi"}`, "model", "model"},
		{"no input", `{"model":"m"}`, "input", "input"},
		{"wrong type", `{"model":"m","input":"hi","temperature":"hot"}`, "temperature", "a number"},
		{"nested wrong type", `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{},"strict":"yes"}}}`, "text.format.strict", "a boolean"},
		{"background", `{"model":"m","input":"hi","background":true}`, "background", "background"},
		{"conversation", `{"model":"m","input":"hi","conversation":"conv_1"}`, "conversation", "previous_response_id"},
		{"hosted prompt", `{"model":"m","input":"hi","prompt":{"id":"pmpt_1"}}`, "prompt", "prompt"},
		{"built-in tool", `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`, "tools[1].type", `"web_search"`},
		{"function tool without name", `{"model":"m","input":"hi","tools":[{"type":"function"}]}`, "tools[0].name", "name"},
		{"built-in tool choice", `{"model":"m","input":"hi","tool_choice":{"type":"code_interpreter"}}`, "tool_choice.type", "code_interpreter"},
		{"bad tool choice", `{"model":"m","input":"hi","tool_choice":"sometimes"}`, "tool_choice", "sometimes"},
		{"unknown item type", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"computer_call_output","call_id":"c"}]}`, "input[1].type", `"computer_call_output"`},
		{"item without type or role", `{"model":"m","input":[{"content":"hi"}]}`, "input[0].type", "type"},
		{"bad role", `{"model":"m","input":[{"role":"robot","content":"hi"}]}`, "input[0].role", "robot"},
		{"message without content", `{"model":"m","input":[{"role":"user"}]}`, "input[0].content", "content"},
		{"image by file id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "input[0].content[0].file_id", "file ids"},
		{"image in assistant message", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"https://x/y.png"}]}]}`, "input[0].content[0].type", "input_image"},
		{"function call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id", "call_id"},
		{"function call without arguments", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f"}]}`, "input[0].arguments", "arguments"},
		{"json schema without name", `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name", "name"},
		{"unknown format", `{"model":"m","input":"hi","text":{"format":{"type":"yaml"}}}`, "text.format.type", "yaml"},
		{"include", `{"model":"m","input":"hi","include":["file_search_call.results"]}`, "include[0]", "file_search_call.results"},
		{"truncation auto", `{"model":"m","input":"hi","truncation":"auto"}`, "truncation", "auto"},
		{"logprobs", `{"model":"m","input":"hi","top_logprobs":3}`, "top_logprobs", "top_logprobs"},
		{"max_output_tokens", `{"model":"m","input":"hi","max_output_tokens":0}`, "max_output_tokens", "positive"},
		{"metadata", `{"model":"m","input":"hi","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata", "512"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := Decode([]byte(tt.body))
			if e == nil {
				t.Fatal("got no error")
			}
			if e.Status != 400 || e.Param != tt.wantParam || !strings.Contains(e.Message, tt.wantInMsg) {
				t.Errorf("got %d param %q %q; want 400 param %q, message containing %q", e.Status, e.Param, e.Message, tt.wantParam, tt.wantInMsg)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name, body           string
		wantItems            int
		wantStream, wantKeep bool
	}{
		{"string input", `{"model":"m","input":"hi"}`, 1, false, true},
		{"easy messages and ids LangChain re-sends", `{"model":"m","input":[{"role":"user","content":"hi"},
			{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[]}]},
			{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"42"}],"text":{},"tools":[{"type":"function","name":"f","parameters":null,"strict":null}],"stream":false}`,
			4, false, true},
		{"item reference without type", `{"model":"m","input":[{"id":"msg_1"}],"store":false,"stream":true}`, 1, true, false},
		{"continuation without input", `{"model":"m","previous_response_id":"resp_1"}`, 0, false, true},
		{"encrypted reasoning asked for", `{"model":"m","input":"hi","include":["reasoning.encrypted_content"],"truncation":"disabled","background":false,"reasoning":{"effort":"low","summary":"auto"}}`, 1, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, e := Decode([]byte(tt.body))
			if e != nil {
				t.Fatalf("got %v", e)
			}
			if len(d.Items) != tt.wantItems || d.stream != tt.wantStream || d.store != tt.wantKeep {
				t.Errorf("got %d items, stream %v, store %v; want %d, %v, %v", len(d.Items), d.stream, d.store, tt.wantItems, tt.wantStream, tt.wantKeep)
			}
		})
	}
}
