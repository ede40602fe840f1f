package provider

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestContinuing: a continuation is the conversation with the prefix as a
// trailing assistant message, streamed, without what asks for thinking;
// chat adds vLLM's continue_final_message; the model can still be
// swapped; the original is untouched.
func TestContinuing(t *testing.T) {
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"reasoning_effort":"high","continue_final_message":false,"max_tokens":9}`
	msgs := `{"messages":[{"role":"user","content":"hi"}],"model":"claude","thinking":{"type":"enabled","budget_tokens":1024},"max_tokens":9,"stream":true}`
	for _, tc := range []struct {
		name, body, prefix string
		op                 Op
		want               string // the body AppendBody gives with model "x"
	}{
		{name: "chat", op: OpChat, body: chat, prefix: `say "hi"`,
			want: `{"model":"x","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"say \"hi\""}],"stream":true,"max_tokens":9,"continue_final_message":true,"add_generation_prompt":false}`},
		{name: "chat, no prefix", op: OpChat, body: chat, prefix: "",
			want: `{"model":"x","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":9}`},
		{name: "messages", op: OpMessages, body: msgs, prefix: "Sure",
			want: `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure"}],"model":"x","max_tokens":9,"stream":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{Op: tc.op, Body: []byte(tc.body), Stream: true}
			m := gjson.Get(tc.body, "model")
			r.ModelStart, r.ModelEnd = m.Index, m.Index+len(m.Raw)
			c, ok := r.Continuing(tc.prefix)
			if !ok {
				t.Fatal("not continued")
			}
			c.Model = "x"
			if got := string(c.AppendBody(nil)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if string(r.Body) != tc.body || !c.Stream || c.Op != tc.op {
				t.Errorf("the original changed, or the continuation is not a %s stream", tc.op)
			}
		})
	}
	if _, ok := (&Request{Op: OpResponses, Body: []byte(`{"input":"hi"}`)}).Continuing("x"); ok {
		t.Error("a Responses request was continued")
	}
	if _, ok := (&Request{Op: OpChat, Body: []byte(`{"prompt":"hi"}`)}).Continuing("x"); ok {
		t.Error("a body without messages was continued")
	}
}

// TestStructured: structured output is asked for by a JSON schema or
// JSON object response format (chat) or an output format (Messages).
func TestStructured(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		body string
		want bool
	}{
		{OpChat, `{"response_format":{"type":"json_schema","json_schema":{}}}`, true},
		{OpChat, `{"response_format":{"type":"json_object"}}`, true},
		{OpChat, `{"response_format":{"type":"text"}}`, false},
		{OpChat, `{}`, false},
		{OpMessages, `{"output_format":{"type":"json_schema"}}`, true},
		{OpMessages, `{"output_config":{"format":{"type":"json_schema"}}}`, true},
		{OpMessages, `{"output_config":{"effort":"high"}}`, false},
	} {
		if got := (&Request{Op: tc.op, Body: []byte(tc.body)}).Structured(); got != tc.want {
			t.Errorf("%s %s: got %v, want %v", tc.op, tc.body, got, tc.want)
		}
	}
}
