package chat

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// event is one SSE event the Events wrote.
type event struct {
	name string
	data gjson.Result
}

// parseEvents splits SSE bytes into events and checks the framing every
// client relies on: "event: <type>\ndata: <one line of JSON>\n\n", the
// JSON's type the event's name.
func parseEvents(t testing.TB, b []byte) []event {
	t.Helper()
	if len(b) == 0 {
		return nil
	}
	if !strings.HasSuffix(string(b), "\n\n") {
		t.Fatalf("events do not end with a blank line: %q", b)
	}
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
		out = append(out, ev)
	}
	return out
}

// render writes each event as a short word with what it carries, for
// comparing sequences.
func render(evs []event) string {
	var w []string
	for _, e := range evs {
		d := e.data
		switch e.name {
		case "message_start":
			w = append(w, "message_start")
		case "content_block_start":
			cb := d.Get("content_block")
			s := "start " + d.Get("index").Raw + " " + cb.Get("type").Str
			if cb.Get("type").Str == "tool_use" {
				s += " " + cb.Get("id").Str + " " + cb.Get("name").Str + " " + cb.Get("input").Raw
			} else {
				s += " " + cb.Get("text").Raw
			}
			w = append(w, s)
		case "content_block_delta":
			dl := d.Get("delta")
			switch dl.Get("type").Str {
			case "text_delta":
				w = append(w, "text "+d.Get("index").Raw+" "+dl.Get("text").Str)
			case "input_json_delta":
				w = append(w, "json "+d.Get("index").Raw+" "+dl.Get("partial_json").Str)
			default:
				w = append(w, "delta? "+dl.Raw)
			}
		case "content_block_stop":
			w = append(w, "stop "+d.Get("index").Raw)
		case "message_delta":
			w = append(w, "message_delta "+d.Get("delta.stop_reason").Str+" "+d.Get("usage").Raw)
		case "error":
			w = append(w, "error "+d.Get("error.type").Str)
		default:
			w = append(w, e.name)
		}
	}
	return strings.Join(w, "\n")
}

func chunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
}

const usageChunk = `{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"up-model","choices":[],"usage":{"prompt_tokens":90,"completion_tokens":4,"total_tokens":94,"prompt_tokens_details":{"cached_tokens":60}}}`

const wantUsage = `{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":60,"output_tokens":4}`

func call(index int, id, name, args string) string {
	s := `{"tool_calls":[{"index":` + string(rune('0'+index))
	if id != "" {
		s += `,"id":"` + id + `","type":"function"`
	}
	s += `,"function":{`
	if name != "" {
		s += `"name":"` + name + `",`
	}
	return s + `"arguments":` + args + `}}]}`
}

// TestEvents: chat chunks → the Messages event sequence, exactly.
func TestEvents(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		fail   outcome.Kind // OK: the provider's end
		want   string
	}{
		{"text",
			[]string{chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"Hel"}`, ""), chunk(`{"content":"lo \"you\"\n"}`, ""), chunk(`{}`, "stop"), usageChunk},
			outcome.OK,
			`message_start
start 0 text ""
text 0 Hel
text 0 lo "you"
` + `
stop 0
message_delta end_turn ` + wantUsage + `
message_stop`},
		{"tool calls, one after another",
			[]string{chunk(`{"role":"assistant","content":null}`, ""),
				chunk(call(0, "call_1", "get_weather", `""`), ""), chunk(call(0, "", "", `"{\"city\":"`), ""), chunk(call(0, "", "", `"\"Paris\"}"`), ""),
				chunk(call(1, "call:2", "noop", `"{}"`), ""), chunk(`{}`, "tool_calls"), usageChunk},
			outcome.OK,
			`message_start
start 0 tool_use call_1 get_weather {}
json 0 {"city":
json 0 "Paris"}
stop 0
start 1 tool_use call_2 noop {}
json 1 {}
stop 1
message_delta tool_use ` + wantUsage + `
message_stop`},
		{"text, a call, text again; reasoning dropped",
			[]string{chunk(`{"role":"assistant","reasoning_content":"hmm"}`, ""), chunk(`{"content":"Let me check."}`, ""),
				chunk(call(0, "call_1", "f", `"{}"`), ""), chunk(`{"content":"Done."}`, ""), chunk(`{}`, "stop")},
			outcome.OK,
			`message_start
start 0 text ""
text 0 Let me check.
stop 0
start 1 tool_use call_1 f {}
json 1 {}
stop 1
start 2 text ""
text 2 Done.
stop 2
message_delta tool_use {"output_tokens":0}
message_stop`},
		{"a call by id alone, arguments sent whole as an object",
			[]string{`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`},
			outcome.OK,
			`message_start
start 0 tool_use a f {}
json 0 {"x":1}
stop 0
start 1 tool_use b g {}
json 1 {}
stop 1
message_delta tool_use {"output_tokens":0}
message_stop`},
		{"a late piece of a closed call is dropped",
			[]string{chunk(call(0, "call_1", "f", `"{"`), ""), chunk(call(1, "call_2", "g", `"{}"`), ""), chunk(call(0, "", "", `"}"`), ""), chunk(`{}`, "tool_calls")},
			outcome.OK,
			`message_start
start 0 tool_use call_1 f {}
json 0 {
stop 0
start 1 tool_use call_2 g {}
json 1 {}
stop 1
message_delta tool_use {"output_tokens":0}
message_stop`},
		{"length",
			[]string{chunk(`{"content":"abc"}`, "length"), usageChunk},
			outcome.OK,
			`message_start
start 0 text ""
text 0 abc
stop 0
message_delta max_tokens ` + wantUsage + `
message_stop`},
		{"content filter",
			[]string{chunk(`{"content":""}`, "content_filter")},
			outcome.OK,
			`message_start
message_delta refusal {"output_tokens":0}
message_stop`},
		{"other choices ignored",
			[]string{`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`},
			outcome.OK,
			`message_start
start 0 text ""
text 0 mine
stop 0
message_delta end_turn {"output_tokens":0}
message_stop`},
		{"empty stream",
			nil,
			outcome.OK,
			`message_start
message_delta end_turn {"output_tokens":0}
message_stop`},
		{"role only, then usage",
			[]string{chunk(`{"role":"assistant","content":""}`, ""), chunk(`{}`, "stop"), usageChunk},
			outcome.OK,
			`message_start
message_delta end_turn ` + wantUsage + `
message_stop`},
		{"failure mid-text leaves the block open",
			[]string{chunk(`{"content":"Hel"}`, "")},
			outcome.Overloaded,
			`message_start
start 0 text ""
text 0 Hel
error overloaded_error`},
		{"failure mid-call",
			[]string{chunk(call(0, "call_1", "f", `"{\"a\""`), "")},
			outcome.RateLimited,
			`message_start
start 0 tool_use call_1 f {}
json 0 {"a"
error rate_limit_error`},
		{"failure before anything",
			nil,
			outcome.Timeout,
			`error api_error`},
		{"network failure",
			[]string{chunk(`{"role":"assistant"}`, "")},
			outcome.Network,
			`message_start
error api_error`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			ev := tr.Events()
			var out []byte
			for _, c := range tt.chunks {
				var err error
				if out, err = ev.Chunk(out, []byte(c)); err != nil {
					t.Fatalf("Chunk(%s): %v", c, err)
				}
			}
			if tt.fail == outcome.OK {
				out = ev.End(out)
			} else {
				out = ev.Fail(out, tt.fail)
			}
			evs := parseEvents(t, out)
			if got := render(evs); got != tt.want {
				t.Errorf("got\n%s\n\nwant\n%s", got, tt.want)
			}
			if evs[0].name != "message_start" {
				return
			}
			m := evs[0].data.Get("message")
			if m.Get("model").Str != "claude-x" || m.Get("role").Str != "assistant" || m.Get("type").Str != "message" ||
				m.Get("content").Raw != "[]" || m.Get("stop_reason").Type != gjson.Null || m.Get("usage.input_tokens").Int() != tr.estimate {
				t.Errorf("message_start %s", evs[0].data.Raw)
			}
			if id := m.Get("id").Str; !strings.HasPrefix(id, "msg_") || !toolIDPattern.MatchString(id) {
				t.Errorf("message id %q", id)
			}
			for _, e := range evs {
				if e.name == "content_block_start" && e.data.Get("content_block.type").Str == "tool_use" && !toolIDPattern.MatchString(e.data.Get("content_block.id").Str) {
					t.Errorf("tool_use id %q", e.data.Get("content_block.id").Str)
				}
			}
		})
	}
}

// TestEventsMessageID: the message id comes from the chat stream's.
func TestEventsMessageID(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	out, err := tr.Events().Chunk(nil, []byte(chunk(`{"content":"x"}`, "")))
	if err != nil {
		t.Fatal(err)
	}
	if id := parseEvents(t, out)[0].data.Get("message.id").Str; id != "msg_chatcmpl-9" {
		t.Errorf("message id %q, want msg_chatcmpl-9", id)
	}
}

// TestEventsBadChunk: a chunk that is JSON but not a chat chunk (an array,
// a string) is an error and appends nothing; payloads are valid JSON
// (provider.Stream's contract).
func TestEventsBadChunk(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	for _, p := range []string{`[1]`, `"x"`, `null`} {
		ev := tr.Events()
		out, err := ev.Chunk([]byte("kept"), []byte(p))
		if err == nil || outcome.KindOf(err) != outcome.ServerError || string(out) != "kept" {
			t.Errorf("Chunk(%q) = %q, %v", p, out, err)
		}
	}
}

// TestEventsPing: the ping event, as Anthropic writes it.
func TestEventsPing(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	got := tr.Events().Ping([]byte("x"))
	if want := "x" + "event: ping\ndata: {\"type\": \"ping\"}\n\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	parseEvents(t, got[1:])
}

// TestEventsFailMessage: the error event says what happened.
func TestEventsFailMessage(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	evs := parseEvents(t, tr.Events().Fail(nil, outcome.ServerError))
	if len(evs) != 1 || evs[0].data.Get("error.message").Str != "the provider's stream failed after it started (server_error); the answer is incomplete" {
		t.Errorf("got %s", render(evs))
	}
}

// textStream is a typical streamed answer of 50 chunks: the role, 47
// pieces of text (every tenth with an escaped newline), the finish and
// the usage.
func textStream() [][]byte {
	out := [][]byte{[]byte(chunk(`{"role":"assistant","content":""}`, ""))}
	words := strings.Fields("The quick brown fox jumps over the lazy dog while the router translates every chunk it relays into the events a Messages client reads, one after another, without waiting for the end of the answer and without holding anything back from the client at all")
	for i := range 47 {
		w := words[i%len(words)]
		if i%10 == 9 {
			w += `.\n\n`
		}
		out = append(out, []byte(chunk(`{"content":" `+w+`"}`, "")))
	}
	return append(out, []byte(chunk(`{}`, "stop")), []byte(usageChunk))
}

// BenchmarkEvents: one 50-chunk text stream framed as Messages events.
func BenchmarkEvents(b *testing.B) {
	tr := translate(b, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	chunks := textStream()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		ev := tr.Events()
		for _, c := range chunks {
			var err error
			if buf, err = ev.Chunk(buf[:0], c); err != nil {
				b.Fatal(err)
			}
		}
		buf = ev.End(buf[:0])
	}
}

// toolCallChunks is a stream of n tool calls, each its own chunk with a
// new index (the hostile stream of issue 31, finding 9).
func toolCallChunks(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":` +
			strconv.Itoa(i) + `,"id":"call_` + strconv.Itoa(i) + `","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`)
	}
	return out
}

// translateCalls runs chunks through one translated stream and returns
// how long that took.
func translateCalls(tb testing.TB, tr *Translation, chunks [][]byte) time.Duration {
	buf := make([]byte, 0, 4096)
	start := time.Now()
	ev := tr.Events()
	for _, c := range chunks {
		var err error
		if buf, err = ev.Chunk(buf[:0], c); err != nil {
			tb.Fatal(err)
		}
	}
	return time.Since(start)
}

// TestToolCallsLinear: a stream's tool-call bookkeeping costs the same
// per call however many calls came before. Each new call looked through
// every index seen, so 40,000 calls took 1.0 s of CPU against 0.1 s on
// the chat path (issue 31, finding 9); four times the calls must take
// less than eight times as long (quadratic: sixteen).
func TestToolCallsLinear(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	small, large := toolCallChunks(10_000), toolCallChunks(40_000)
	best := func(chunks [][]byte) time.Duration {
		d := time.Duration(math.MaxInt64)
		for range 3 {
			d = min(d, translateCalls(t, tr, chunks))
		}
		return d
	}
	s, l := best(small), best(large)
	t.Logf("10,000 calls %v, 40,000 calls %v", s, l)
	if l > 8*s {
		t.Errorf("40,000 calls took %v, %.1f times 10,000's %v: want under 8", l, float64(l)/float64(s), s)
	}
}

// BenchmarkToolCalls: one translated stream of 40,000 tool calls.
func BenchmarkToolCalls(b *testing.B) {
	tr := translate(b, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	chunks := toolCallChunks(40_000)
	for b.Loop() {
		translateCalls(b, tr, chunks)
	}
}
