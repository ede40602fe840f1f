package chat

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// toolIDPattern is what Anthropic's clients require of a tool_use id.
var toolIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// TestAnswer: chat completions → the Messages answer.
func TestAnswer(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	tests := []struct {
		name, chat, want string
	}{
		{"text",
			`{"id":"chatcmpl-abc","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],
			  "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
			`{"id":"msg_chatcmpl-abc","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","stop_sequence":null,
			  "usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}`},
		{"cached tokens leave input; reasoning dropped; length",
			`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hel","reasoning_content":"thinking..."},"finish_reason":"length"}],
			  "usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":80},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			`{"id":"msg_x","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hel"}],"stop_reason":"max_tokens","stop_sequence":null,
			  "usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":80,"output_tokens":5}}`},
		{"tool calls: ids made valid, arguments parsed",
			`{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
			  {"id":"call_a.b:c","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
			  {"id":"call_2","type":"function","function":{"name":"bad","arguments":"{\"city\": "}},
			  {"id":"call_3","type":"function","function":{"name":"empty","arguments":""}},
			  {"id":"call_4","type":"function","function":{"name":"array","arguments":"[1]"}},
			  {"id":"call_5","type":"function","function":{"name":"object","arguments":{"k":1}}}]},"finish_reason":"tool_calls"}]}`,
			`{"id":"msg_chatcmpl-1","type":"message","role":"assistant","model":"claude-x","content":[
			  {"type":"tool_use","id":"call_a_b_c","name":"get_weather","input":{"city":"Paris"}},
			  {"type":"tool_use","id":"call_2","name":"bad","input":{}},
			  {"type":"tool_use","id":"call_3","name":"empty","input":{}},
			  {"type":"tool_use","id":"call_4","name":"array","input":{}},
			  {"type":"tool_use","id":"call_5","name":"object","input":{"k":1}}],
			  "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"text and a call finished with stop is tool_use",
			`{"id":"msg_01XYZ","choices":[{"index":0,"message":{"role":"assistant","content":"Checking.","tool_calls":[{"id":"toolu_01","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}]}`,
			`{"id":"msg_01XYZ","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_01","name":"f","input":{}}],
			  "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"content filter, empty content omitted",
			`{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}]}`,
			`{"id":"msg_c","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":"refusal","stop_sequence":null,
			  "usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"a refusal is text; function_call is tool_use",
			`{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't."},"finish_reason":"function_call"}]}`,
			`{"id":"msg_c","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"I can't."}],"stop_reason":"tool_use","stop_sequence":null,
			  "usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
		{"unknown finish reason is end_turn; id made valid",
			`{"id":"gen/1 2","choices":[{"index":0,"message":{"content":"x"},"finish_reason":"eos"}]}`,
			`{"id":"msg_gen_1_2","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,
			  "usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tr.Answer([]byte(tt.chat))
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, got, tt.want)
		})
	}
}

// TestAnswerMintsIDs: a message and tool calls without ids get valid,
// distinct ones.
func TestAnswerMintsIDs(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	chat := `{"choices":[{"index":0,"message":{"tool_calls":[{"function":{"name":"f","arguments":"{}"}},{"id":"","function":{"name":"g"}}]},"finish_reason":"tool_calls"}]}`
	got, err := tr.Answer([]byte(chat))
	if err != nil {
		t.Fatal(err)
	}
	doc := gjson.ParseBytes(got)
	if id := doc.Get("id").Str; !strings.HasPrefix(id, "msg_") || len(id) != 28 || !toolIDPattern.MatchString(id) {
		t.Errorf("message id %q", id)
	}
	a, b := doc.Get("content.0.id").Str, doc.Get("content.1.id").Str
	for _, id := range []string{a, b} {
		if !strings.HasPrefix(id, "toolu_") || len(id) != 30 || !toolIDPattern.MatchString(id) {
			t.Errorf("tool_use id %q", id)
		}
	}
	if a == b {
		t.Errorf("two calls share the id %q", a)
	}
}

// TestAnswerErrors: an answer that is not a chat completion is an error.
func TestAnswerErrors(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	for _, chat := range []string{``, `{"choices":`, `[1]`, `"x"`, `{}`, `{"choices":[]}`, `{"choices":[1]}`, `{"choices":{"0":{}}}`} {
		if got, err := tr.Answer([]byte(chat)); err == nil {
			t.Errorf("Answer(%s) = %s, want an error", chat, got)
		}
	}
}

// BenchmarkAnswer: a chat completion with text and a tool call answered
// as a Messages message.
func BenchmarkAnswer(b *testing.B) {
	tr := translate(b, `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	chat := []byte(`{"id":"chatcmpl-B9","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"Let me look at the weather there.","tool_calls":[{"id":"call_12345xyz","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris, France\"}"}}],"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":null}`)
	b.SetBytes(int64(len(chat)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.Answer(chat); err != nil {
			b.Fatal(err)
		}
	}
}
