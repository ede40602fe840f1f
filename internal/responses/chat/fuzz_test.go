package chat

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/turn"
)

// FuzzTurn: whatever JSON object a client sends, Decode, turn.New and
// Translate either refuse it with a 4xx naming a field or build a chat
// request that is valid JSON with the client's model at the offsets the
// adapters swap; nothing panics.
func FuzzTurn(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi","instructions":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"required"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://x"}]},
		  {"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"model":"m","input":[{"type":"item_reference","id":"msg_1"}],"previous_response_id":"resp_1"}`,
		`{"model":"m\u0000\"","input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{}}},"stream":true,"metadata":{"a":"b"}}`,
	} {
		f.Add([]byte(s))
	}
	s := store.NewMemory(store.Config{}, nil)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) || !gjson.ParseBytes(body).IsObject() {
			return // the proxy's own check (intake.Check) refuses these
		}
		d, e := responses.Decode(body)
		if e == nil {
			var tn *turn.Turn
			if tn, e = turn.New(ctx, d, s, nil); e == nil {
				var tr *Translation
				if tr, e = Translate(tn); e == nil {
					if !json.Valid(tr.Body) {
						t.Fatalf("chat request is not JSON: %s", tr.Body)
					}
					var model string
					if err := json.Unmarshal(tr.Body[tr.ModelStart:tr.ModelEnd], &model); err != nil || model != d.Model {
						t.Fatalf("offsets hold %q, want the model %q", tr.Body[tr.ModelStart:tr.ModelEnd], d.Model)
					}
					return
				}
			}
		}
		if e.Status < 400 || e.Status > 499 || e.Message == "" {
			t.Fatalf("refusal %+v", e)
		}
	})
}

// FuzzEvents: whatever chunks a provider streams, the events are well
// framed, numbered from 0, and end with exactly one terminal event.
func FuzzEvents(f *testing.F) {
	f.Add([]byte(`{"model":"x","choices":[{"index":0,"delta":{"content":"hi"}}]}`), []byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]},"finish_reason":"tool_calls"}]}`), false)
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"refusal":"no"}}]}`), []byte(`{"choices":[],"usage":{"prompt_tokens":1}}`), true)
	f.Fuzz(func(t *testing.T, a, b []byte, fail bool) {
		tr := translate(t, store.NewMemory(store.Config{}, nil), `{"model":"m","input":"hi","stream":true}`)
		ev := tr.Events()
		var out []byte
		for _, c := range [][]byte{a, b} {
			var err error
			if out, err = ev.Chunk(out, c); err != nil {
				fail = true
				break
			}
		}
		if fail {
			out = ev.Fail(out, outcome.Network)
		} else {
			out = ev.End(out)
		}
		evs := parseEvents(t, out)
		terminal := 0
		for _, e := range evs {
			switch e.name {
			case "response.completed", "response.incomplete", "response.failed":
				terminal++
			}
		}
		if terminal != 1 || !strings.HasPrefix(evs[len(evs)-1].name, "response.") {
			t.Fatalf("%d terminal events; events %s", terminal, names(evs))
		}
	})
}
