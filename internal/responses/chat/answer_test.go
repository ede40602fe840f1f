package chat

import (
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/turn"
)

func gjsonString(t testing.TB, b []byte, path string) string {
	t.Helper()
	r := gjson.GetBytes(b, path)
	if !r.Exists() {
		t.Fatalf("%s missing in %s", path, b)
	}
	return r.String()
}

// translate decodes body, makes its turn over s and translates it.
func translate(t testing.TB, s store.Store, body string) *Translation {
	t.Helper()
	d, e := responses.Decode([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	tn, e := turn.New(context.Background(), d, s, nil)
	if e != nil {
		t.Fatal(e)
	}
	tr, e := Translate(tn)
	if e != nil {
		t.Fatal(e)
	}
	return tr
}

// stored is the Response JSON s holds for id; nil when none.
func stored(t testing.TB, s store.Store, id string) []byte {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		return nil
	}
	return r.Response
}

// TestAnswer: a chat completion → the Response object.
func TestAnswer(t *testing.T) {
	tests := []struct {
		name, chat string
		// want: gjson path → value (as gjson's String)
		want map[string]string
	}{
		{"text", `{"id":"x","object":"chat.completion","model":"claude-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":3}}}`,
			map[string]string{"object": "response", "status": "completed", "model": "claude-x", "error": "", "incomplete_details": "",
				"output.#": "1", "output.0.type": "message", "output.0.role": "assistant", "output.0.status": "completed",
				"output.0.content.0.type": "output_text", "output.0.content.0.text": "Hello.", "output.0.content.0.annotations": "[]",
				"usage.input_tokens": "7", "usage.output_tokens": "2", "usage.total_tokens": "9", "usage.input_tokens_details.cached_tokens": "3",
				"usage.output_tokens_details.reasoning_tokens": "0", "instructions": "be brief", "metadata.k": "v", "tool_choice": "auto",
				"text.format.type": "text", "truncation": "disabled", "store": "true", "temperature": "1"}},
		{"tool calls", `{"model":"gpt","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"","type":"function","function":{"name":"g","arguments":"{}"}}]},
			"finish_reason":"tool_calls"}]}`,
			map[string]string{"status": "completed", "output.#": "2", "output.0.type": "function_call", "output.0.call_id": "call_a",
				"output.0.name": "f", "output.0.arguments": `{"x":1}`, "output.0.status": "completed", "output.1.name": "g", "usage": ""}},
		{"cut by the token limit", `{"model":"gpt","choices":[{"message":{"content":"Once upon"},"finish_reason":"length"}]}`,
			map[string]string{"status": "incomplete", "incomplete_details.reason": "max_output_tokens", "output.0.status": "incomplete"}},
		{"refusal", `{"model":"gpt","choices":[{"message":{"content":null,"refusal":"I can't."},"finish_reason":"stop"}]}`,
			map[string]string{"output.0.content.0.type": "refusal", "output.0.content.0.refusal": "I can't."}},
		{"empty answer is an empty message", `{"model":"gpt","choices":[{"message":{"content":""},"finish_reason":"stop"}]}`,
			map[string]string{"output.#": "1", "output.0.content.0.text": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := store.NewMemory(store.Config{}, nil)
			tr := translate(t, s, `{"model":"m","input":"hi","instructions":"be brief","metadata":{"k":"v"}}`)
			b, err := tr.Answer([]byte(tt.chat))
			if err != nil {
				t.Fatal(err)
			}
			if got := gjson.GetBytes(b, "id").Str; got != tr.t.ID() || !strings.HasPrefix(got, "resp_") {
				t.Errorf("id = %q, want the turn's %q", got, tr.t.ID())
			}
			for path, want := range tt.want {
				if got := gjson.GetBytes(b, path).String(); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
			for _, it := range gjson.GetBytes(b, "output").Array() {
				prefix := map[string]string{"message": "msg_", "function_call": "fc_"}[it.Get("type").Str]
				if !strings.HasPrefix(it.Get("id").Str, prefix) {
					t.Errorf("item id %q, want prefix %q", it.Get("id").Str, prefix)
				}
				if it.Get("type").Str == "function_call" && it.Get("call_id").Str == "" {
					t.Error("function call without call_id")
				}
			}
			if got := stored(t, s, tr.t.ID()); string(got) != string(b) {
				t.Errorf("stored %s, want the answer", got)
			}
		})
	}
	t.Run("not a chat completion", func(t *testing.T) {
		tr := translate(t, store.NewMemory(store.Config{}, nil), `{"model":"m","input":"hi"}`)
		for _, bad := range []string{`<html>`, `{"choices":[]}`} {
			if _, err := tr.Answer([]byte(bad)); err == nil {
				t.Errorf("%s: no error", bad)
			}
		}
	})
}
