package chat

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/messages"
)

// sameJSON fails unless got and want are the same JSON value.
func sameJSON(t testing.TB, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON (%v): %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad test: want is not JSON (%v): %s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		gc, _ := json.Marshal(g)
		wc, _ := json.Marshal(w)
		t.Errorf("got  %s\nwant %s", gc, wc)
	}
}

// translate decodes and translates body, failing the test on a refusal.
func translate(t testing.TB, body string) *Translation {
	t.Helper()
	req, e := messages.Decode([]byte(body))
	if e != nil {
		t.Fatalf("Decode refused the test body: %v", e)
	}
	tr, e := Translate([]byte(body), req)
	if e != nil {
		t.Fatalf("Translate refused: %v", e)
	}
	return tr
}

// TestTranslate: Messages requests → the chat completions request a
// provider gets.
func TestTranslate(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"string system and content",
			`{"model":"claude-x","max_tokens":64,"system":"be brief","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"bye"}]}`,
			`{"model":"claude-x","max_tokens":64,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"bye"}]}`},
		{"system blocks joined in order, cache_control dropped; an empty system is no message",
			`{"model":"m","max_tokens":1,"system":[{"type":"text","text":"one","cache_control":{"type":"ephemeral"}},{"type":"text","text":""},{"type":"text","text":"two"}],"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"one\n\ntwo"},{"role":"user","content":"hi"}]}`},
		{"system turns inside messages stay where they stand",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"# Environment"}]},{"role":"system","content":"note"},{"role":"user","content":"go"}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"# Environment"},{"role":"system","content":"note"},{"role":"user","content":"go"}]}`},
		{"empty system string and blocks",
			`{"model":"m","max_tokens":1,"system":[],"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`},
		{"one text block is a string",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`},
		{"text blocks and images are parts",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},
			  {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"image","source":{"type":"url","url":"https://x/cat.png"}},
			  {"type":"image","source":{"type":"file","file_id":"file_1"}},{"type":"text","text":"and this?"}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},
			  {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://x/cat.png"}},
			  {"type":"text","text":"and this?"}]}]}`},
		{"one image alone is parts",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/a.png"}}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]}`},
		{"documents: text kept, PDFs dropped; unknown blocks keep their text",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"the doc"}},
			  {"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}},{"type":"newer_block","text":"kept"},{"type":"newer_block","data":"x"},
			  {"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"r"}]}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"the doc"},{"type":"text","text":"kept"}]}]}`},
		{"a user turn of nothing chat can carry stays a turn",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":""}]}`},
		{"assistant blocks: texts joined, thinking dropped, tool_use as tool_calls",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"weather?"},
			  {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xx"},{"type":"text","text":"Let me "},{"type":"text","text":"check."},
			   {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris","days":[1,2]}},{"type":"tool_use","id":"toolu_2","name":"noop","input":{}},
			   {"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"},{"type":"tool_result","tool_use_id":"toolu_2","content":[]}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"weather?"},
			  {"role":"assistant","content":"Let me check.","tool_calls":[
			    {"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"days\":[1,2]}"}},
			    {"id":"toolu_2","type":"function","function":{"name":"noop","arguments":"{}"}}]},
			  {"role":"tool","tool_call_id":"toolu_1","content":"sunny"},{"role":"tool","tool_call_id":"toolu_2","content":""}]}`},
		{"an assistant turn of tool calls only has null content",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":"x\ny"}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"go"},
			  {"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":\"x\\ny\"}"}}]},
			  {"role":"tool","tool_call_id":"t1","content":"done"}]}`},
		{"an assistant turn of thinking only is empty text",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"}]},{"role":"user","content":"b"}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":""},{"role":"user","content":"b"}]}`},
		{"tool results come before the turn's text; blocks' texts joined; images and is_error dropped",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"go"},
			  {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"f","input":{}}]},
			  {"role":"user","content":[{"type":"text","text":"here:"},{"type":"tool_result","tool_use_id":"a","is_error":true,"content":"boom"},
			   {"type":"tool_result","tool_use_id":"b","content":[{"type":"text","text":"line 1"},{"type":"image","source":{"type":"url","url":"https://x"}},{"type":"text","text":"line 2"}]},
			   {"type":"text","text":"go on"}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"go"},
			  {"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},
			  {"role":"tool","tool_call_id":"a","content":"boom"},{"role":"tool","tool_call_id":"b","content":"line 1\nline 2"},
			  {"role":"user","content":[{"type":"text","text":"here:"},{"type":"text","text":"go on"}]}]}`},
		{"tools: custom ones as functions, server tools dropped",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[
			  {"name":"get_weather","description":"Weather by city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"cache_control":{"type":"ephemeral"},"strict":true},
			  {"type":"custom","name":"noop","input_schema":{"type":"object"}},
			  {"type":"web_search_20250305","name":"web_search","max_uses":3},{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"}],
			  "tool_choice":{"type":"auto"}}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[
			  {"type":"function","function":{"name":"get_weather","description":"Weather by city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
			  {"type":"function","function":{"name":"noop","parameters":{"type":"object"}}}],"tool_choice":"auto"}`},
		{"tool_choice any, no parallel calls",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"required","parallel_tool_calls":false}`},
		{"tool_choice tool",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{}},{"name":"g","input_schema":{}}],"tool_choice":{"type":"tool","name":"g"}}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}},{"type":"function","function":{"name":"g","parameters":{}}}],
			  "tool_choice":{"type":"function","function":{"name":"g"}}}`},
		{"tool_choice tool naming a dropped server tool is auto",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"tool","name":"web_search"}}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto"}`},
		{"tool_choice none",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"none"}}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"none"}`},
		{"only server tools: no tools, no tool_choice",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`},
		{"parameters: sampling and stop copied, the rest dropped",
			`{"model":"m","max_tokens":300,"messages":[{"role":"user","content":"hi"}],"temperature":0.7,"top_p":0.9,"top_k":40,"stop_sequences":["END","\n\nHuman:"],
			  "metadata":{"user_id":"{\"device_id\":\"d\"}"},"thinking":{"type":"enabled","budget_tokens":1024},"service_tier":"auto","container":"c",
			  "mcp_servers":[{"type":"url","url":"https://mcp","name":"x"}],"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},"output_config":{"effort":"high"}}`,
			`{"model":"m","max_tokens":300,"messages":[{"role":"user","content":"hi"}],"temperature":0.7,"top_p":0.9,"stop":["END","\n\nHuman:"]}`},
		{"stream asks for usage",
			`{"model":"m","max_tokens":5,"stream":true,"temperature":0,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","max_tokens":5,"temperature":0,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
		{"strings escaped",
			`{"model":"m\"\u2028<x>","max_tokens":5,"messages":[{"role":"user","content":"a\"b\\c\u0001 <&> \ud83d\ude00"}]}`,
			`{"model":"m\"\u2028<x>","max_tokens":5,"messages":[{"role":"user","content":"a\"b\\c\u0001 <&> 😀"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := translate(t, tt.body)
			sameJSON(t, tr.Body, tt.want)
			checkModel(t, tr, tt.body)
		})
	}
}

// checkModel checks that the model literal sits at the offsets, as the
// client's model.
func checkModel(t testing.TB, tr *Translation, body string) {
	t.Helper()
	var want struct{ Model string }
	_ = json.Unmarshal([]byte(body), &want)
	var got string
	if err := json.Unmarshal(tr.Body[tr.ModelStart:tr.ModelEnd], &got); err != nil || got != want.Model {
		t.Errorf("offsets hold %q, want the model %q", tr.Body[tr.ModelStart:tr.ModelEnd], want.Model)
	}
	if tr.model != want.Model {
		t.Errorf("translation keeps model %q, want %q", tr.model, want.Model)
	}
}

// claudeCodeBody is a request as Claude Code sends it: system blocks with
// cache_control, twelve tools with schemas, adaptive thinking, context
// management, effort, metadata, and a tool_use/tool_result round trip.
func claudeCodeBody() string {
	var tools []string
	names := []string{"Task", "Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "Write", "NotebookEdit", "WebFetch", "TodoWrite", "BashOutput"}
	for _, n := range names {
		tools = append(tools, fmt.Sprintf(`{"name":%q,"description":"The %s tool.\nUsage:\n - be careful","input_schema":{"type":"object","properties":{"command":{"type":"string","description":"what to run"},"timeout":{"type":"number"}},"required":["command"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}}`, n, n))
	}
	return `{"model":"claude-opus-5-5","max_tokens":128000,"stream":true,
	  "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328"},{"type":"text","text":"You are Claude Code, Anthropic's official CLI for Claude.","cache_control":{"type":"ephemeral"}},
	    {"type":"text","text":"Environment:\n<env>cwd: /src</env>","cache_control":{"type":"ephemeral","ttl":"1h"}}],
	  "tools":[` + strings.Join(tools, ",") + `],
	  "thinking":{"type":"adaptive","display":"omitted"},
	  "context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
	  "output_config":{"effort":"medium"},
	  "metadata":{"user_id":"{\"device_id\":\"abc\",\"session_id\":\"7f1c\"}"},
	  "messages":[
	    {"role":"user","content":[{"type":"text","text":"<system-reminder>\nContext\n</system-reminder>"},{"type":"text","text":"list the files","cache_control":{"type":"ephemeral"}}]},
	    {"role":"assistant","content":[{"type":"thinking","thinking":"","signature":"EpYB"},{"type":"text","text":"I'll list them."},{"type":"tool_use","id":"toolu_01A","name":"Bash","input":{"command":"ls","description":"List files"}}]},
	    {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A","content":"a.go\nb.go","is_error":false,"cache_control":{"type":"ephemeral"}}]}
	  ]}`
}

// TestTranslateClaudeCode: what Claude Code sends reaches a chat target
// with its system prompt, tools and round trip, and nothing chat cannot
// take.
func TestTranslateClaudeCode(t *testing.T) {
	body := claudeCodeBody()
	tr := translate(t, body)
	checkModel(t, tr, body)
	if !tr.Stream || tr.estimate < 100 {
		t.Errorf("Stream %v, estimate %d", tr.Stream, tr.estimate)
	}
	var got struct {
		Model     string
		MaxTokens int64 `json:"max_tokens"`
		Stream    bool
		Options   map[string]bool `json:"stream_options"`
		Messages  []map[string]any
		Tools     []struct {
			Type     string
			Function struct {
				Name, Description string
				Parameters        map[string]any
			}
		}
	}
	if err := json.Unmarshal(tr.Body, &got); err != nil {
		t.Fatalf("%v: %s", err, tr.Body)
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(tr.Body, &keys)
	for k := range keys {
		switch k {
		case "model", "max_tokens", "stream", "stream_options", "messages", "tools":
		default:
			t.Errorf("unexpected key %q in the chat request", k)
		}
	}
	if got.MaxTokens != 128000 || !got.Stream || !got.Options["include_usage"] || len(got.Tools) != 12 {
		t.Errorf("max_tokens %d, stream %v %v, %d tools", got.MaxTokens, got.Stream, got.Options, len(got.Tools))
	}
	if f := got.Tools[1].Function; got.Tools[1].Type != "function" || f.Name != "Bash" || f.Description != "The Bash tool.\nUsage:\n - be careful" ||
		f.Parameters["additionalProperties"] != false || f.Parameters["$schema"] == nil {
		t.Errorf("tool 1 = %+v", got.Tools[1])
	}
	wantMsgs := `[
	  {"role":"system","content":"x-anthropic-billing-header: cc_version=2.1.328\n\nYou are Claude Code, Anthropic's official CLI for Claude.\n\nEnvironment:\n<env>cwd: /src</env>"},
	  {"role":"user","content":[{"type":"text","text":"<system-reminder>\nContext\n</system-reminder>"},{"type":"text","text":"list the files"}]},
	  {"role":"assistant","content":"I'll list them.","tool_calls":[{"id":"toolu_01A","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\",\"description\":\"List files\"}"}}]},
	  {"role":"tool","tool_call_id":"toolu_01A","content":"a.go\nb.go"}]`
	msgs, _ := json.Marshal(got.Messages)
	sameJSON(t, msgs, wantMsgs)
}

// TestTranslateRefusesNonObject: the one refusal.
func TestTranslateRefusesNonObject(t *testing.T) {
	if _, e := Translate([]byte(`[]`), messages.Request{Model: "m"}); e == nil || e.Status != 400 || e.Type != "invalid_request_error" {
		t.Errorf("got %v", e)
	}
}

// BenchmarkDecodeTranslate: a Claude Code request checked and translated.
func BenchmarkDecodeTranslate(b *testing.B) {
	body := []byte(claudeCodeBody())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, e := messages.Decode(body)
		if e != nil {
			b.Fatal(e)
		}
		if _, e := Translate(body, req); e != nil {
			b.Fatal(e)
		}
	}
}

// conversationBody is a Claude Code request late in a session, about
// 100 KB: 16 tools and a system prompt of 2 KB paragraphs (escaped quotes
// and newlines, as Claude Code's are), 20 rounds of tool calls and
// results.
func conversationBody() string {
	para := strings.Repeat(`Use this tool to run a command. Do not use it for \"dangerous\" things.\n - Always quote paths with spaces.\n`, 20)
	var tools, msgs []string
	for i := range 16 {
		tools = append(tools, fmt.Sprintf(`{"name":"T%d","description":"%s","input_schema":{"type":"object","properties":{"command":{"type":"string","description":"what to run"},"timeout":{"type":"number"}},"required":["command"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}}`, i, para))
	}
	for i := range 20 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]}`, i, para),
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"%s"},{"type":"tool_use","id":"toolu_%d","name":"T1","input":{"command":"ls -la /src"}}]}`, para[:400], i+1))
	}
	return `{"model":"claude-x","max_tokens":32000,"stream":true,"system":[{"type":"text","text":"` + strings.Repeat(para, 5) + `","cache_control":{"type":"ephemeral"}}],"tools":[` +
		strings.Join(tools, ",") + `],"messages":[{"role":"user","content":"start"},` + strings.Join(msgs, ",") + `]}`
}

// BenchmarkTranslate: a 100 KB Claude Code request translated (Decode,
// and the stream's estimate, apart).
func BenchmarkTranslate(b *testing.B) {
	body := []byte(conversationBody())
	req, e := messages.Decode(body)
	if e != nil {
		b.Fatal(e)
	}
	req.Stream = false
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, e := Translate(body, req); e != nil {
			b.Fatal(e)
		}
	}
}
