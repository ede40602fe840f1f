package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/intake"
)

// FuzzMessages: any body posted to /v1/messages gets exactly one
// well-formed answer: a served message (translated onto the simulated
// provider), or an Anthropic error of a 4xx status (the bounded check's
// when it refuses the body); never a panic, never a 5xx the request
// caused.
func FuzzMessages(f *testing.F) {
	for _, s := range []string{hello, strings.Replace(hello, `"max_tokens"`, `"stream":true,"max_tokens"`, 1),
		`{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`,
		`{"model":"claude-x","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a.b","name":"f","input":{}}]}]}`,
		`{}`, `[]`, `{"model":1}`, "\xff"} {
		f.Add(s)
	}
	h := router(f, nil, sim(f), nil)
	f.Fuzz(func(t *testing.T, body string) {
		w := send(h, "POST", "/v1/messages", body)
		if want := intake.Check([]byte(body)); want != nil && body != "" { // "": the body reader refuses it
			// The bounded check's refusal, whatever else the walk met.
			var e struct {
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != want.Status || e.Error.Type != want.Type || e.Error.Message != want.Message {
				t.Fatalf("body %q: got %d %s, want the check's %d %q", body, w.Code, w.Body, want.Status, want.Message)
			}
		}
		switch {
		case w.Code == 200:
			if ct := w.Header().Get("Content-Type"); ct == "application/json" && !json.Valid(w.Body.Bytes()) {
				t.Fatalf("200 with invalid JSON: %q", w.Body)
			}
		case w.Code >= 400 && w.Code < 500:
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Type != "error" || e.Error.Type == "" {
				t.Fatalf("%d not an Anthropic error: %q", w.Code, w.Body)
			}
		default:
			t.Fatalf("status %d for body %q: %s", w.Code, body, w.Body)
		}
	})
}
