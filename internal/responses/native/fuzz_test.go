package native

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
	"github.com/llmrouter/llmrouter/internal/responses/wire"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// FuzzPrepare: whatever JSON object a client sends that needs a native
// Responses API, with a conversation the router holds or not, Prepare
// either refuses it with a 4xx or builds a body that is valid JSON with
// the client's model at the offsets the adapters swap; nothing panics.
func FuzzPrepare(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`,
		`{"model":"m","previous_response_id":"resp_held","input":[{"type":"computer_call_output","call_id":"c","output":{}}]}`,
		`{"model":"m\u0022","previous_response_id":"resp_held","input":[{"type":"item_reference","id":"msg_held"},{"id":"x"}],"background":true}`,
		`{"model":"m","input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	s := store.NewMemory(store.Config{}, nil)
	ctx := context.Background()
	held := &store.Turn{Output: []wire.Item{{Type: wire.TypeMessage, ID: "msg_held", Role: "assistant", Text: "x"},
		{Type: "web_search_call", Raw: []byte(`{"type":"web_search_call"}`)}}}
	if err := s.Put(ctx, &store.Record{ID: "resp_held", Response: []byte("{}"), Turn: held}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) || !gjson.ParseBytes(body).IsObject() {
			return // the proxy's own check (intake.Check) refuses these
		}
		d, e := responses.Decode(body)
		if e != nil || d.Native == nil {
			return
		}
		tn, e := turn.New(ctx, d, s, nil)
		if e != nil {
			if e.Status < 400 || e.Status > 499 {
				t.Fatalf("refusal %+v", e)
			}
			return
		}
		c, e := Prepare(tn, body)
		if e != nil {
			t.Fatalf("a body the router checked could not be prepared: %v", e)
		}
		var model string
		if !json.Valid(c.Body) || json.Unmarshal(c.Body[c.ModelStart:c.ModelEnd], &model) != nil || model != d.Model {
			t.Fatalf("body %s, model at [%d:%d], want %q", c.Body, c.ModelStart, c.ModelEnd, d.Model)
		}
	})
}

// FuzzProviderAnswer: whatever a provider answers (valid JSON: the adapter
// checks that), Answer returns it or an error, and the events relay each
// event framed whole: an event line naming its type when it has one (a
// type that is not [a-z_.]+ ends the stream as a failure), the data that
// reads back as the event, and after a failure an error event and
// response.failed; nothing panics.
func FuzzProviderAnswer(f *testing.F) {
	f.Add([]byte(`{"id":"resp_1","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}]}`),
		[]byte(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"}}`),
		[]byte(`{"type":"response.completed","sequence_number":1,"response":{"id":"resp_1","status":"completed","output":[1]}}`), false)
	f.Add([]byte(`{"id":"r","status":"queued"}`), []byte(`{"type":"x\ny","response":[]}`), []byte(`{"sequence_number":"a"}`), true)
	s := store.NewMemory(store.Config{}, nil)
	f.Fuzz(func(t *testing.T, answer, ev1, ev2 []byte, fail bool) {
		c := prepare(t, s, `{"model":"m","input":"x","tools":[{"type":"web_search"}]}`)
		if json.Valid(answer) {
			if out, err := c.Answer(answer, "p"); err == nil && !json.Valid(out) {
				t.Fatalf("answer %s is not JSON", out)
			}
		}
		ev := c.Events()
		var out []byte
		n := 0
		for _, p := range [][]byte{ev1, ev2} {
			if !json.Valid(p) {
				continue
			}
			var err error
			if out, err = ev.Chunk(out, p); err != nil {
				// A malformed event ends the stream as a failure does.
				fail = true
				break
			}
			n++
		}
		if fail {
			out = ev.Fail(out, outcome.Network)
			n += 2
		} else {
			out = ev.End(out)
		}
		if n == 0 {
			return
		}
		blocks := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
		if len(blocks) != n {
			t.Fatalf("%d events framed as %d: %q", n, len(blocks), out)
		}
		for _, b := range blocks {
			var data []string
			for _, line := range strings.Split(b, "\n") {
				switch {
				case strings.HasPrefix(line, "event: "):
					if name := strings.TrimPrefix(line, "event: "); !sse.EventName(name, true) {
						t.Fatalf("event name %q in %q", name, b)
					}
				case strings.HasPrefix(line, "data: "):
					data = append(data, strings.TrimPrefix(line, "data: "))
				default:
					t.Fatalf("line %q in %q", line, b)
				}
			}
			if !json.Valid([]byte(strings.Join(data, "\n"))) {
				t.Fatalf("event %q does not read back as JSON", b)
			}
		}
	})
}
