package responses

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// TestDecodeRefuses: what is invalid whatever the provider is a 400
// naming the field.
func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name, body string
		wantParam  string
		wantInMsg  string
	}{
		{"no model", `{"input":"hi"}`, "model", "model"},
		{"model under another case", `{"mOdel":"m","input":"hi"}`, "model", "model"},
		{"model and a second spelling", `{"model":"a","MODEL":"b","input":"hi"}`, "model", "model"},
		{"no input", `{"model":"m"}`, "input", "input"},
		{"wrong type", `{"model":"m","input":"hi","temperature":"hot"}`, "temperature", "a number"},
		{"nested wrong type", `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{},"strict":"yes"}}}`, "text.format.strict", "a boolean"},
		{"function tool without name", `{"model":"m","input":"hi","tools":[{"type":"function"}]}`, "tools[0].name", "name"},
		{"bad tool choice", `{"model":"m","input":"hi","tool_choice":"sometimes"}`, "tool_choice", "sometimes"},
		{"item without type or role", `{"model":"m","input":[{"content":"hi"}]}`, "input[0].type", "type"},
		{"bad role", `{"model":"m","input":[{"role":"robot","content":"hi"}]}`, "input[0].role", "robot"},
		{"message without content", `{"model":"m","input":[{"role":"user"}]}`, "input[0].content", "content"},
		{"image in assistant message", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"https://x/y.png"}]}]}`, "input[0].content[0].type", "input_image"},
		{"function call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id", "call_id"},
		{"function call without arguments", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f"}]}`, "input[0].arguments", "arguments"},
		{"json schema without name", `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name", "name"},
		{"unknown format", `{"model":"m","input":"hi","text":{"format":{"type":"yaml"}}}`, "text.format.type", "yaml"},
		{"max_output_tokens 9e18", `{"model":"m","input":"hi","max_output_tokens":9000000000000000000}`, "max_output_tokens", "2147483648"},
		{"max_output_tokens 1e999", `{"model":"m","input":"hi","max_output_tokens":1e999}`, "max_output_tokens", "integer"},
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
		{"easy messages, reasoning and ids LangChain re-sends", `{"model":"m","input":[{"role":"user","content":"hi"},
			{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[]}]},
			{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"call_1","output":"42"}],"text":{},"tools":[{"type":"function","name":"f","parameters":null,"strict":null}],"stream":false}`,
			5, false, true},
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
			if d.Native != nil {
				t.Errorf("needs a native Responses API: %v", d.Native)
			}
			if len(d.Items) != tt.wantItems || d.stream != tt.wantStream || d.store != tt.wantKeep {
				t.Errorf("got %d items, stream %v, store %v; want %d, %v, %v", len(d.Items), d.stream, d.store, tt.wantItems, tt.wantStream, tt.wantKeep)
			}
		})
	}
}

// TestDecodeNative: what only a provider's own Responses API honours is
// not refused: Decoded.Native names the field (the 400 for a model
// without an openai or azure target), the rest is still checked, and the
// items chat cannot take are kept as sent.
func TestDecodeNative(t *testing.T) {
	tests := []struct {
		name, body string
		wantParam  string
		wantInMsg  string
	}{
		{"background", `{"model":"m","input":"hi","background":true}`, "background", "background"},
		{"conversation", `{"model":"m","input":"hi","conversation":"conv_1"}`, "conversation", "previous_response_id"},
		{"hosted prompt", `{"model":"m","input":"hi","prompt":{"id":"pmpt_1"}}`, "prompt", "prompt"},
		{"built-in tool choice", `{"model":"m","input":"hi","tool_choice":{"type":"code_interpreter"}}`, "tool_choice.type", "code_interpreter"},
		{"unknown item type", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"computer_call_output","call_id":"c"}]}`, "input[1].type", `"computer_call_output"`},
		{"image by file id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "input[0].content[0].file_id", "file ids"},
		{"include", `{"model":"m","input":"hi","include":["file_search_call.results"]}`, "include[0]", "file_search_call.results"},
		{"truncation auto", `{"model":"m","input":"hi","truncation":"auto"}`, "truncation", "auto"},
		{"logprobs", `{"model":"m","input":"hi","top_logprobs":3}`, "top_logprobs", "top_logprobs"},
		{"file URL", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`, "input[0].content[0].file_url", "file URLs"},
		{"required built-in tools only", `{"model":"m","input":"hi","tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"web_search"}]}}`, "tool_choice.tools[0].type", "web_search"},
		{"the first of several", `{"model":"m","background":true,"input":"hi","tool_choice":{"type":"web_search"}}`, "background", "background"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, e := Decode([]byte(tt.body))
			if e != nil {
				t.Fatalf("refused: %v", e)
			}
			n := d.Native
			if n == nil || n.Status != 400 || n.Param != tt.wantParam || !strings.Contains(n.Message, tt.wantInMsg) || !strings.Contains(n.Message, "openai or azure") {
				t.Errorf("got %+v; want 400 param %q, message containing %q", n, tt.wantParam, tt.wantInMsg)
			}
		})
	}
	t.Run("invalid past a native field is still refused", func(t *testing.T) {
		if _, e := Decode([]byte(`{"model":"m","background":true,"input":[{"role":"robot","content":"x"}]}`)); e == nil || e.Param != "input[0].role" {
			t.Errorf("got %v, want the 400 for input[0].role", e)
		}
	})
	t.Run("items chat cannot take are kept as sent", func(t *testing.T) {
		d, e := Decode([]byte(`{"model":"m","input":[{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"https://x"}},
			{"role":"user","content":[{"type":"input_text","text":"see"},{"type":"input_image","file_id":"file_1"}]},{"role":"user","content":"plain"}]}`))
		if e != nil {
			t.Fatal(e)
		}
		if len(d.Items) != 3 || len(d.Sent) != 3 {
			t.Fatalf("got %d items, %d sent", len(d.Items), len(d.Sent))
		}
		if it := d.Items[0]; it.Type != "computer_call_output" || string(it.Raw) != string(d.Sent[0]) {
			t.Errorf("item 0: %+v", it)
		}
		if it := d.Items[1]; it.Raw == nil || len(it.Parts) != 1 || it.Parts[0].Text != "see" {
			t.Errorf("item 1 (a file id): %+v; want Raw and the text part", it)
		}
		if it := d.Items[2]; it.Raw != nil {
			t.Errorf("item 2 (plain) kept raw: %s", it.Raw)
		}
	})
}

// codexRequest is what Codex CLI 0.171 sends (captured, trimmed): its
// tool types (function, namespace, web_search, custom), its session
// fields, and a later turn's items (a namespaced call, a custom tool's
// call and output, an encrypted reasoning item).
const codexRequest = `{"model":"gpt-5.1-codex","stream":true,"store":false,"include":["reasoning.encrypted_content"],
"reasoning":{"summary":"auto"},"parallel_tool_calls":true,"tool_choice":"auto","prompt_cache_key":"0195-session",
"client_metadata":{"session_id":"0195-session"},
"input":[{"type":"message","id":"msg_0195-a","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},
{"type":"message","id":"msg_0195-b","role":"user","content":[{"type":"input_text","text":"run echo"}]},
{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},
{"type":"function_call","id":"fc_1","call_id":"call_1","name":"close_agent","namespace":"multi_agent_v1","arguments":"{\"target\":\"a\"}","status":"completed"},
{"type":"function_call_output","id":"fco_0195-c","call_id":"call_1","output":"closed"},
{"type":"custom_tool_call","id":"ctc_1","call_id":"call_2","name":"exec","input":"await tools.exec_command({cmd:'ls'})","status":"completed"},
{"type":"custom_tool_call_output","call_id":"call_2","output":"a.txt"}],
"tools":[{"type":"function","name":"exec_command","description":"Runs a command.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}},
{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[
 {"type":"function","name":"close_agent","strict":false,"parameters":{"type":"object","properties":{"target":{"type":"string"}},"required":["target"]}},
 {"type":"function","name":"spawn_agent","parameters":{"type":"object","properties":{}}}]},
{"type":"web_search","external_web_access":false},
{"type":"custom","name":"exec","description":"Run JavaScript.","format":{"type":"grammar","syntax":"lark","definition":"start: SOURCE"}}]}`

// TestDecodeCodex: a Codex request needs no native Responses API: its
// namespace's functions carry their namespace, its custom tool is Custom
// with its grammar, web_search is left for a native target, and its
// items are typed (a namespaced call keeps its namespace, a custom tool
// call its input), the reasoning item kept as sent.
func TestDecodeCodex(t *testing.T) {
	d, e := Decode([]byte(codexRequest))
	if e != nil {
		t.Fatal(e)
	}
	if d.Native != nil {
		t.Fatalf("needs a native Responses API: %v", d.Native)
	}
	var got []string
	for _, f := range d.Functions {
		got = append(got, fmt.Sprintf("%s/%s custom=%v grammar=%q", f.Namespace, f.Name, f.Custom, f.Grammar))
	}
	want := []string{`/exec_command custom=false grammar=""`, `multi_agent_v1/close_agent custom=false grammar=""`,
		`multi_agent_v1/spawn_agent custom=false grammar=""`, `/exec custom=true grammar="lark grammar:\nstart: SOURCE"`}
	if !slices.Equal(got, want) {
		t.Errorf("functions\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if it := d.Items[3]; it.Type != wire.TypeFunctionCall || it.Namespace != "multi_agent_v1" || it.Name != "close_agent" {
		t.Errorf("namespaced call: %+v", it)
	}
	if it := d.Items[5]; it.Type != wire.TypeCustomToolCall || it.Name != "exec" || it.Arguments != "await tools.exec_command({cmd:'ls'})" {
		t.Errorf("custom tool call: %+v", it)
	}
	if it := d.Items[6]; it.Type != wire.TypeCustomToolCallOutput || it.CallID != "call_2" || it.Text != "a.txt" {
		t.Errorf("custom tool call output: %+v", it)
	}
	if it := d.Items[2]; it.Type != wire.TypeReasoning || it.Raw == nil {
		t.Errorf("reasoning: %+v", it)
	}
	if d.Stored() {
		t.Error("store: false is stored")
	}
}
