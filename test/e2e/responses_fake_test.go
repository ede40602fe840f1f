package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"
)

// llmFake is a provider for the Responses API scenarios: it speaks one
// dialect (OpenAI chat completions or Anthropic Messages), keeps every
// API request body it receives, and answers each with a scripted text, a
// tool call or an error, plain or streamed as the request asks.
type llmFake struct {
	name string
	d    dialect
	srv  *httptest.Server

	mu     sync.Mutex // guards bodies
	bodies []string

	reply atomic.Pointer[func(n int) llmReply]
}

// llmReply is one scripted answer: an error status, a tool call, or text.
type llmReply struct {
	status int // not 0: an error answer with this status
	call   *llmCall
	text   string
	// cut: a stream's first events, then a TCP reset.
	cut bool
}

type llmCall struct{ id, name, args string }

// Usage every fake answer reports.
const fakeInputTokens, fakeOutputTokens = 11, 5

func newLLMFake(t testing.TB, name string, d dialect) *llmFake {
	t.Helper()
	f := &llmFake{name: name, d: d}
	f.always(llmReply{text: "hello from " + name})
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *llmFake) script(fn func(n int) llmReply) { f.reply.Store(&fn) }
func (f *llmFake) always(r llmReply)              { f.script(func(int) llmReply { return r }) }

// received returns the API request bodies so far.
func (f *llmFake) received() []gjson.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]gjson.Result, len(f.bodies))
	for i, b := range f.bodies {
		out[i] = gjson.Parse(b)
	}
	return out
}

func (f *llmFake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet { // the breaker's probe
		io.WriteString(w, `{"object":"list","data":[{"id":"x","object":"model"}],"has_more":false}`)
		return
	}
	want := "/v1/chat/completions"
	if f.d == anthropicAPI {
		want = "/v1/messages"
	}
	if r.URL.Path != want {
		http.Error(w, "no such path "+r.URL.Path, http.StatusNotFound)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	n := len(f.bodies)
	f.mu.Unlock()
	rep := (*f.reply.Load())(n)
	req := gjson.ParseBytes(body)
	switch {
	case rep.status != 0:
		w.WriteHeader(rep.status)
		if f.d == anthropicAPI {
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"overloaded"}}`)
		} else {
			io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
		}
	case req.Get("stream").Bool():
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i, ev := range f.events(rep, req) {
			if rep.cut && i == 3 {
				resetConn(w)
				return
			}
			io.WriteString(w, ev)
			http.NewResponseController(w).Flush()
		}
	default:
		io.WriteString(w, f.whole(rep))
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// pieces splits s in three for a stream's deltas.
func pieces(s string) []string {
	a, b := len(s)/3, 2*len(s)/3
	return []string{s[:a], s[a:b], s[b:]}
}

// whole is the non-stream answer.
func (f *llmFake) whole(rep llmReply) string {
	if f.d == anthropicAPI {
		content, stop := []any{map[string]any{"type": "text", "text": rep.text}}, "end_turn"
		if c := rep.call; c != nil {
			content, stop = []any{map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": json.RawMessage(c.args)}}, "tool_use"
		}
		return mustJSON(map[string]any{"id": "msg_" + f.name, "type": "message", "role": "assistant", "model": "claude-" + f.name,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": fakeInputTokens, "output_tokens": fakeOutputTokens}})
	}
	msg, finish := map[string]any{"role": "assistant", "content": rep.text}, "stop"
	if c := rep.call; c != nil {
		msg, finish = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}}}}, "tool_calls"
	}
	return mustJSON(map[string]any{"id": "chatcmpl-" + f.name, "object": "chat.completion", "created": 1767225600, "model": "gpt-" + f.name,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": fakeInputTokens, "completion_tokens": fakeOutputTokens, "total_tokens": fakeInputTokens + fakeOutputTokens}})
}

// events is the stream answer, SSE-framed.
func (f *llmFake) events(rep llmReply, req gjson.Result) []string {
	if f.d == anthropicAPI {
		ev := func(name string, data any) string { return "event: " + name + "\ndata: " + mustJSON(data) + "\n\n" }
		out := []string{ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_" + f.name, "type": "message",
			"role": "assistant", "content": []any{}, "model": "claude-" + f.name, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": fakeInputTokens, "output_tokens": 1}}})}
		stop := "end_turn"
		if c := rep.call; c != nil {
			stop = "tool_use"
			out = append(out, ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": map[string]any{}}}))
			for _, p := range pieces(c.args) {
				out = append(out, ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": p}}))
			}
		} else {
			out = append(out, ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}}))
			for _, p := range pieces(rep.text) {
				out = append(out, ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
					"delta": map[string]any{"type": "text_delta", "text": p}}))
			}
		}
		return append(out,
			ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}),
			ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
				"usage": map[string]any{"output_tokens": fakeOutputTokens}}),
			ev("message_stop", map[string]any{"type": "message_stop"}))
	}
	chunk := func(delta map[string]any, finish any) string {
		return "data: " + mustJSON(map[string]any{"id": "chatcmpl-" + f.name, "object": "chat.completion.chunk", "created": 1767225600,
			"model": "gpt-" + f.name, "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}) + "\n\n"
	}
	out := []string{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	finish := "stop"
	if c := rep.call; c != nil {
		finish = "tool_calls"
		out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil))
		for _, p := range pieces(c.args) {
			out = append(out, chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": p}}}}, nil))
		}
	} else {
		for _, p := range pieces(rep.text) {
			out = append(out, chunk(map[string]any{"content": p}, nil))
		}
	}
	out = append(out, chunk(map[string]any{}, finish))
	if req.Get("stream_options.include_usage").Bool() {
		out = append(out, "data: "+mustJSON(map[string]any{"id": "chatcmpl-" + f.name, "object": "chat.completion.chunk", "created": 1767225600,
			"model": "gpt-" + f.name, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": fakeInputTokens, "completion_tokens": fakeOutputTokens, "total_tokens": fakeInputTokens + fakeOutputTokens}})+"\n\n")
	}
	return append(out, "data: [DONE]\n\n")
}

// messages summarizes the conversation a provider received, one entry per
// message: "role: text", "assistant calls name(args)" or "tool id: text",
// in either dialect, so scenarios can compare what each provider got.
func (f *llmFake) messages(body gjson.Result) []string {
	var out []string
	if f.d == anthropicAPI {
		if s := body.Get("system"); s.Exists() {
			out = append(out, "system: "+s.String())
		}
		for _, m := range body.Get("messages").Array() {
			role, c := m.Get("role").Str, m.Get("content")
			if c.Type == gjson.String {
				out = append(out, role+": "+c.Str)
				continue
			}
			for _, b := range c.Array() {
				switch b.Get("type").Str {
				case "text":
					out = append(out, role+": "+b.Get("text").Str)
				case "tool_use":
					out = append(out, fmt.Sprintf("%s calls %s(%s)", role, b.Get("name").Str, b.Get("input").Raw))
				case "tool_result":
					out = append(out, fmt.Sprintf("tool %s: %s", b.Get("tool_use_id").Str, b.Get("content").String()))
				}
			}
		}
		return out
	}
	for _, m := range body.Get("messages").Array() {
		role := m.Get("role").Str
		switch {
		case role == "tool":
			out = append(out, fmt.Sprintf("tool %s: %s", m.Get("tool_call_id").Str, m.Get("content").String()))
		case m.Get("tool_calls").Exists():
			if c := m.Get("content"); c.Type == gjson.String && c.Str != "" {
				out = append(out, role+": "+c.Str)
			}
			for _, tc := range m.Get("tool_calls").Array() {
				out = append(out, fmt.Sprintf("%s calls %s(%s)", role, tc.Get("function.name").Str, tc.Get("function.arguments").Str))
			}
		default:
			out = append(out, role+": "+m.Get("content").String())
		}
	}
	return out
}

func join(s []string) string { return strings.Join(s, " | ") }
