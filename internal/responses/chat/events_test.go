package chat

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/responses/store"
)

// event is one SSE event the Events wrote.
type event struct {
	name string
	data gjson.Result
}

// parseEvents splits SSE bytes into events and checks the framing every
// client relies on: event name = data.type, sequence_number 0, 1, 2…, one
// line of JSON, no top-level "error" key but in the error event.
func parseEvents(t testing.TB, b []byte) []event {
	t.Helper()
	var out []event
	for _, block := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		lines := strings.Split(block, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("malformed event %q", block)
		}
		data := strings.TrimPrefix(lines[1], "data: ")
		if !gjson.Valid(data) {
			t.Fatalf("not JSON: %s", data)
		}
		ev := event{name: strings.TrimPrefix(lines[0], "event: "), data: gjson.Parse(data)}
		if got := ev.data.Get("type").Str; got != ev.name {
			t.Errorf("event %s has type %q", ev.name, got)
		}
		if got := ev.data.Get("sequence_number").Int(); got != int64(len(out)) {
			t.Errorf("event %d (%s) has sequence_number %d", len(out), ev.name, got)
		}
		if ev.data.Get("error").Exists() && ev.name != "error" {
			t.Errorf("%s has a top-level error key (openai-go ends the stream on it)", ev.name)
		}
		out = append(out, ev)
	}
	return out
}

func names(evs []event) string {
	n := make([]string, len(evs))
	for i, e := range evs {
		n[i] = strings.TrimPrefix(e.name, "response.")
	}
	return strings.Join(n, " ")
}

func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

const usageChunk = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`

// TestEvents: chat chunks → the Responses event sequence.
func TestEvents(t *testing.T) {
	tests := []struct {
		name      string
		chunks    []string
		fail      bool // end with a provider failure instead of the provider's end
		wantNames string
		// want: gjson path in the terminal event → value
		want map[string]string
	}{
		{"text",
			[]string{chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"Hel"}`, ""), chunk(`{"content":"lo."}`, ""), chunk(`{}`, "stop"), usageChunk},
			false,
			"created in_progress output_item.added content_part.added output_text.delta output_text.delta output_text.done content_part.done output_item.done completed",
			map[string]string{"response.status": "completed", "response.model": "up-model", "response.output.#": "1", "response.output.0.content.0.text": "Hello.",
				"response.output.0.status": "completed", "response.usage.input_tokens": "9", "response.usage.output_tokens": "4", "response.usage.total_tokens": "13"}},
		{"text then two tool calls",
			[]string{chunk(`{"role":"assistant","content":"Let me check."}`, ""),
				chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"w","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"w","arguments":"{}"}}]}`, ""),
				chunk(`{}`, "tool_calls"), usageChunk},
			false,
			"created in_progress output_item.added content_part.added output_text.delta output_text.done content_part.done output_item.done " +
				"output_item.added function_call_arguments.delta function_call_arguments.delta function_call_arguments.done output_item.done " +
				"output_item.added function_call_arguments.delta function_call_arguments.done output_item.done completed",
			map[string]string{"response.output.#": "3", "response.output.1.type": "function_call", "response.output.1.call_id": "call_1",
				"response.output.1.arguments": `{"city":"Paris"}`, "response.output.2.call_id": "call_2", "response.output.2.arguments": "{}"}},
		{"cut by the token limit",
			[]string{chunk(`{"content":"Once"}`, ""), chunk(`{}`, "length")},
			false,
			"created in_progress output_item.added content_part.added output_text.delta output_text.done content_part.done output_item.done incomplete",
			map[string]string{"response.status": "incomplete", "response.incomplete_details.reason": "max_output_tokens", "response.output.0.status": "incomplete"}},
		{"refusal",
			[]string{chunk(`{"refusal":"No."}`, ""), chunk(`{}`, "stop")},
			false,
			"created in_progress output_item.added content_part.added refusal.delta refusal.done content_part.done output_item.done completed",
			map[string]string{"response.output.0.content.0.type": "refusal", "response.output.0.content.0.refusal": "No."}},
		{"empty stream",
			nil, false, "created in_progress completed",
			map[string]string{"response.status": "completed", "response.output.#": "0"}},
		{"failure after the commit",
			[]string{chunk(`{"content":"Hal"}`, "")},
			true,
			"created in_progress output_item.added content_part.added output_text.delta error failed",
			map[string]string{"response.status": "failed", "response.error.code": "server_error", "response.output.0.content.0.text": "Hal",
				"response.output.0.status": "incomplete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := store.NewMemory(store.Config{}, nil)
			tr := translate(t, s, `{"model":"m","input":"hi","stream":true}`)
			ev := tr.Events()
			var b []byte
			for _, c := range tt.chunks {
				var err error
				if b, err = ev.Chunk(b, []byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.fail {
				b = ev.Fail(b, outcome.Network)
			} else {
				b = ev.End(b)
			}
			evs := parseEvents(t, b)
			if got := names(evs); got != tt.wantNames {
				t.Fatalf("events\ngot  %s\nwant %s", got, tt.wantNames)
			}
			last := evs[len(evs)-1]
			for path, want := range tt.want {
				if got := last.data.Get(path).String(); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
			checkItems(t, evs)
			stored := stored(t, s, tr.t.ID())
			if tt.fail {
				if stored != nil {
					t.Error("a failed response was stored")
				}
				e := evs[len(evs)-2].data
				if e.Get("code").Str != "upstream_error" || e.Get("error.type").Str != "server_error" || !strings.Contains(e.Get("message").Str, "network") {
					t.Errorf("error event %s", e.Raw)
				}
				return
			}
			if stored == nil || gjson.GetBytes(stored, "output").Raw != last.data.Get("response.output").Raw {
				t.Errorf("stored %s, want the terminal response", stored)
			}
		})
	}
}

// checkItems checks what openai-node's stream helper checks: the first
// event is response.created; each output_item.added has the next
// output_index; item-scoped events name the open item's id; deltas add up
// to the done text and arguments; the terminal response lists every item
// as its output_item.done had it.
func checkItems(t testing.TB, evs []event) {
	t.Helper()
	if evs[0].name != "response.created" || evs[0].data.Get("response.status").Str != "in_progress" || evs[0].data.Get("response.output").Raw != "[]" {
		t.Errorf("first event %s", evs[0].data.Raw)
	}
	var (
		ids    []string
		done   []string
		deltas strings.Builder
	)
	for _, e := range evs {
		d := e.data
		switch e.name {
		case "response.output_item.added":
			if got := int(d.Get("output_index").Int()); got != len(ids) {
				t.Errorf("output_item.added at index %d, want %d", got, len(ids))
			}
			ids = append(ids, d.Get("item.id").Str)
			deltas.Reset()
			if d.Get("item.type").Str == "function_call" && (d.Get("item.call_id").Str == "" || d.Get("item.name").Str == "" || !d.Get("item.arguments").Exists()) {
				t.Errorf("function call added without call_id, name or arguments: %s", d.Raw)
			}
		case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
			if d.Get("item_id").Str != ids[len(ids)-1] || int(d.Get("output_index").Int()) != len(ids)-1 {
				t.Errorf("%s for %s at %d, open item %s", e.name, d.Get("item_id").Str, d.Get("output_index").Int(), ids[len(ids)-1])
			}
			deltas.WriteString(d.Get("delta").Str)
		case "response.output_text.done":
			if d.Get("text").Str != deltas.String() {
				t.Errorf("text done %q, deltas %q", d.Get("text").Str, deltas.String())
			}
		case "response.function_call_arguments.done":
			if d.Get("arguments").Str != deltas.String() {
				t.Errorf("arguments done %q, deltas %q", d.Get("arguments").Str, deltas.String())
			}
		case "response.output_item.done":
			if d.Get("item.id").Str != ids[len(ids)-1] {
				t.Errorf("output_item.done for %s, open %s", d.Get("item.id").Str, ids[len(ids)-1])
			}
			done = append(done, d.Get("item").Raw)
		case "response.completed", "response.incomplete":
			out := d.Get("response.output").Array()
			if len(out) != len(done) {
				t.Fatalf("terminal output has %d items, %d were done", len(out), len(done))
			}
			for i := range out {
				if out[i].Raw != done[i] {
					t.Errorf("terminal item %d %s, done %s", i, out[i].Raw, done[i])
				}
			}
		}
	}
}

func TestEventsRefuseAChunkThatIsNotJSON(t *testing.T) {
	ev := translate(t, store.NewMemory(store.Config{}, nil), `{"model":"m","input":"hi","stream":true}`).Events()
	if _, err := ev.Chunk(nil, []byte(`{"choices": not json`)); outcome.KindOf(err) != outcome.ServerError {
		t.Fatalf("got %v, want a server_error", err)
	}
}
