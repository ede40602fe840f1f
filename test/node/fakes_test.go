package nodesdk

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The fakes below stand in for Anthropic and OpenAI behind the router
// while real clients (Claude Code, the Anthropic, Vercel AI and LangChain
// SDKs) drive it. They speak enough of each API for those clients to run
// a conversation with a tool loop, and they keep every request they got
// so that a test can check what reached a provider.
//
// Their one model behaviour: a request that offers tools (and does not
// say tool_choice none) and whose last user turn carries no tool result
// is answered with a call of one of those tools; every other request is
// answered with text, which, after a tool result, quotes that result.

// exchange is one request a fake received.
type exchange struct {
	Method string
	URI    string // path and query, as sent
	Header http.Header
	Body   []byte
}

// recorder keeps the requests a fake received.
type recorder struct {
	mu  sync.Mutex // guards got
	got []exchange
}

func (r *recorder) record(req *http.Request, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, exchange{Method: req.Method, URI: req.URL.RequestURI(), Header: req.Header.Clone(), Body: body})
}

// requests returns a copy of what was received so far.
func (r *recorder) requests() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.got...)
}

// toolCall is a tool a fake prefers to call, when a request offers it,
// with the input it sends. Claude Code's tools need inputs that do
// something harmless on the test's machine (a Read of a file that exists).
type toolCall struct {
	Name  string
	Input string // a JSON object
}

// offeredTool is one client tool of a request: its name and JSON schema.
type offeredTool struct {
	name   string
	schema gjson.Result
}

// pickTool returns the tool to call among offered: the first of prefer
// that is offered, else the first offered with an input made from its
// schema.
func pickTool(prefer []toolCall, offered []offeredTool) (name, input string) {
	for _, p := range prefer {
		for _, o := range offered {
			if o.name == p.Name {
				return p.Name, p.Input
			}
		}
	}
	b, _ := json.Marshal(sample(offered[0].schema))
	return offered[0].name, string(b)
}

// sample returns a value that satisfies the JSON schema s for what the
// tests' tools use: types, required properties, enums, bounds, lengths.
func sample(s gjson.Result) any {
	if e := s.Get("enum"); e.IsArray() && len(e.Array()) > 0 {
		return e.Array()[0].Value()
	}
	if c := s.Get("const"); c.Exists() {
		return c.Value()
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alt := s.Get(k); alt.IsArray() && len(alt.Array()) > 0 {
			return sample(alt.Array()[0])
		}
	}
	typ := s.Get("type")
	if typ.IsArray() { // ["string", "null"]: the first that is not null
		for _, t := range typ.Array() {
			if t.Str != "null" {
				typ = t
				break
			}
		}
	}
	switch typ.String() {
	case "string":
		v := "Paris"
		if s.Get("format").Str == "uri" {
			v = "https://example.com/"
		}
		for int64(len(v)) < s.Get("minLength").Int() {
			v += "x"
		}
		if m := s.Get("maxLength"); m.Exists() && int64(len(v)) > m.Int() {
			v = v[:m.Int()]
		}
		return v
	case "integer", "number":
		v := int64(1)
		if m := s.Get("minimum"); m.Exists() {
			v = m.Int()
		} else if m := s.Get("exclusiveMinimum"); m.Exists() {
			v = m.Int() + 1
		}
		if m := s.Get("maximum"); m.Exists() && v > m.Int() {
			v = m.Int()
		}
		return v
	case "boolean":
		return false
	case "array":
		out := []any{}
		for range s.Get("minItems").Int() {
			out = append(out, sample(s.Get("items")))
		}
		return out
	case "null":
		return nil
	default: // object, or no type at all
		out := map[string]any{}
		for _, k := range s.Get("required").Array() {
			out[k.Str] = sample(s.Get("properties." + gjson.Escape(k.Str)))
		}
		return out
	}
}

// textOf returns the text of a content value that is either a string or
// a list of blocks ({"type":"text","text":…}).
func textOf(c gjson.Result) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	for _, part := range c.Array() {
		b.WriteString(part.Get("text").Str)
	}
	return b.String()
}

// reply is the text a fake answers with: after a tool result, that result.
func reply(name, toolResult string, sawResult bool) string {
	if !sawResult {
		return "Hello from " + name + "."
	}
	const limit = 400
	if len(toolResult) > limit {
		toolResult = toolResult[:limit]
	}
	return "The tool returned: " + toolResult
}

// sse writes server-sent events, flushing each.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// event writes one event; name "" writes a data line alone (OpenAI).
func (s *sse) event(name string, v any) {
	var data []byte
	if raw, ok := v.(string); ok {
		data = []byte(raw)
	} else {
		data, _ = json.Marshal(v)
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	_ = s.rc.Flush()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// tokens is a rough token count of b, at least 1.
func tokens(b []byte) int { return max(1, len(b)/4) }

// fakeAnthropic is an Anthropic Messages API: POST /v1/messages (plain
// and streamed), POST /v1/messages/count_tokens, GET /v1/models. Like the
// real one it wants its key in x-api-key (or as a Bearer token), an
// anthropic-version header and max_tokens, and answers a model whose name
// does not start with "claude" with 404 not_found_error.
type fakeAnthropic struct {
	recorder
	srv    *httptest.Server
	name   string
	key    string     // the key it accepts
	prefer []toolCall // tools to call when offered, before the first offered
	// overloaded makes it answer everything with 529 overloaded_error.
	overloaded bool
	ids        atomic.Int64
}

// newFakeAnthropic starts a fake Anthropic accepting key; it stops when t
// ends.
func newFakeAnthropic(t testing.TB, name, key string, prefer ...toolCall) *fakeAnthropic {
	f := &fakeAnthropic{name: name, key: key, prefer: prefer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// antError writes an Anthropic-shaped error.
func antError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("request-id", "req_fake")
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_fake"})
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.record(r, body)
	switch {
	case f.overloaded:
		antError(w, 529, "overloaded_error", "Overloaded")
		return
	case r.Header.Get("X-Api-Key") != f.key && r.Header.Get("Authorization") != "Bearer "+f.key:
		antError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	case r.Header.Get("Anthropic-Version") == "":
		antError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		writeJSON(w, http.StatusOK, map[string]any{
			"data":     []any{map[string]any{"type": "model", "id": "claude-fake-1", "display_name": "Claude Fake", "created_at": "2026-01-01T00:00:00Z"}},
			"has_more": false, "first_id": "claude-fake-1", "last_id": "claude-fake-1",
		})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		if !gjson.ValidBytes(body) {
			antError(w, http.StatusBadRequest, "invalid_request_error", "body: not JSON")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": tokens(body)})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		f.messages(w, r, body)
	default:
		antError(w, http.StatusNotFound, "not_found_error", "Not found: "+r.Method+" "+r.URL.Path)
	}
}

func (f *fakeAnthropic) messages(w http.ResponseWriter, r *http.Request, body []byte) {
	req := gjson.ParseBytes(body)
	model := req.Get("model").Str
	switch {
	case !gjson.ValidBytes(body):
		antError(w, http.StatusBadRequest, "invalid_request_error", "body: not JSON")
		return
	case !req.Get("max_tokens").Exists():
		antError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required")
		return
	case !req.Get("messages").IsArray():
		antError(w, http.StatusBadRequest, "invalid_request_error", "messages: Field required")
		return
	case !strings.HasPrefix(model, "claude"):
		antError(w, http.StatusNotFound, "not_found_error", "model: "+model)
		return
	}

	var offered []offeredTool
	for _, t := range req.Get("tools").Array() {
		if s := t.Get("input_schema"); s.Exists() { // server tools have a type and no schema
			offered = append(offered, offeredTool{name: t.Get("name").Str, schema: s})
		}
	}
	msgs := req.Get("messages").Array()
	var toolResult string
	sawResult := false
	if n := len(msgs); n > 0 && msgs[n-1].Get("role").Str == "user" {
		for _, b := range msgs[n-1].Get("content").Array() {
			if b.Get("type").Str == "tool_result" {
				sawResult = true
				toolResult += textOf(b.Get("content"))
			}
		}
	}
	callTool := len(offered) > 0 && !sawResult && req.Get("tool_choice.type").Str != "none"

	id := f.ids.Add(1)
	msgID := fmt.Sprintf("msg_%s_%d", f.name, id)
	var blocks []map[string]any
	stop := "end_turn"
	if callTool {
		name, input := pickTool(f.prefer, offered)
		blocks = append(blocks,
			map[string]any{"type": "text", "text": "Let me use " + name + "."},
			map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%s_%d", f.name, id), "name": name, "input": json.RawMessage(input)})
		stop = "tool_use"
	} else {
		blocks = append(blocks, map[string]any{"type": "text", "text": reply(f.name, toolResult, sawResult)})
	}
	usage := map[string]any{"input_tokens": tokens(body), "output_tokens": 8, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	w.Header().Set("request-id", "req_"+msgID)

	if !req.Get("stream").Bool() {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model, "content": blocks,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": usage["input_tokens"], "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	s.event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			text := b["text"].(string)
			s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, part := range halves(text) {
				s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": part}})
			}
		case "tool_use":
			s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{
				"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			for _, part := range halves(string(b["input"].(json.RawMessage))) {
				s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// halves splits s in two pieces (one when it is shorter than 2 bytes),
// so every stream has more than one delta per block.
func halves(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	return []string{s[:len(s)/2], s[len(s)/2:]}
}

// sawToolResult reports whether a Messages request carried a tool_result.
func (f *fakeAnthropic) sawToolResult() bool {
	for _, e := range f.requests() {
		for _, m := range gjson.GetBytes(e.Body, "messages").Array() {
			for _, b := range m.Get("content").Array() {
				if b.Get("type").Str == "tool_result" {
					return true
				}
			}
		}
	}
	return false
}

// fakeOpenAI is an OpenAI chat completions API: POST /v1/chat/completions
// (plain and streamed, with a usage chunk when stream_options.include_usage),
// POST /v1/responses (the Responses API, plain and streamed, store
// nothing) and GET /v1/models. It wants its key as a Bearer token.
type fakeOpenAI struct {
	recorder
	srv    *httptest.Server
	name   string
	key    string
	prefer []toolCall
	ids    atomic.Int64
	// maxOutput, when above 0, is the most output tokens the fake's model
	// writes: a chat request asking for more (max_tokens or
	// max_completion_tokens) gets the 400 gpt-4o answers past its 16384.
	// Set it before the first request.
	maxOutput int64
	// dead makes it answer everything with 503 (set it before the first
	// request).
	dead bool
}

// newFakeOpenAI starts a fake OpenAI accepting key; it stops when t ends.
func newFakeOpenAI(t testing.TB, name, key string, prefer ...toolCall) *fakeOpenAI {
	f := &fakeOpenAI{name: name, key: key, prefer: prefer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func oaiError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.record(r, body)
	if f.dead {
		oaiError(w, http.StatusServiceUnavailable, "server_error", "", "The server is overloaded or not ready yet.")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		oaiError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "gpt-fake-1", "object": "model", "created": 1767225600, "owned_by": "fake"}}})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		f.chat(w, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		f.responses(w, body)
	default:
		oaiError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "Unknown request URL: "+r.Method+" "+r.URL.Path)
	}
}

func (f *fakeOpenAI) chat(w http.ResponseWriter, body []byte) {
	if !gjson.ValidBytes(body) {
		oaiError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request.")
		return
	}
	req := gjson.ParseBytes(body)
	model := req.Get("model").Str
	if !req.Get("messages").IsArray() {
		oaiError(w, http.StatusBadRequest, "invalid_request_error", "", "Missing required parameter: 'messages'.")
		return
	}
	if limit := max(req.Get("max_tokens").Int(), req.Get("max_completion_tokens").Int()); f.maxOutput > 0 && limit > f.maxOutput {
		oaiError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", fmt.Sprintf(
			"max_tokens is too large: %d. This model supports at most %d completion tokens, whereas you provided %d.", limit, f.maxOutput, limit))
		return
	}
	var offered []offeredTool
	for _, t := range req.Get("tools").Array() {
		if t.Get("type").Str == "function" {
			offered = append(offered, offeredTool{name: t.Get("function.name").Str, schema: t.Get("function.parameters")})
		}
	}
	msgs := req.Get("messages").Array()
	var toolResult string
	sawResult := false
	// The tool results of the last turn: the tool messages at the end.
	for i := len(msgs) - 1; i >= 0 && msgs[i].Get("role").Str == "tool"; i-- {
		sawResult = true
		toolResult = textOf(msgs[i].Get("content")) + toolResult
	}
	callTool := len(offered) > 0 && !sawResult && req.Get("tool_choice").Str != "none"

	id := f.ids.Add(1)
	chatID := fmt.Sprintf("chatcmpl-%s-%d", f.name, id)
	created := time.Now().Unix()
	usage := map[string]any{"prompt_tokens": tokens(body), "completion_tokens": 8, "total_tokens": tokens(body) + 8,
		"prompt_tokens_details": map[string]any{"cached_tokens": 0}}
	var text, toolName, toolInput, callID string
	finish := "stop"
	if callTool {
		toolName, toolInput = pickTool(f.prefer, offered)
		callID = fmt.Sprintf("call_%s_%d", f.name, id)
		finish = "tool_calls"
	} else {
		text = reply(f.name, toolResult, sawResult)
	}
	if rf := req.Get("response_format"); rf.Get("type").Str == "json_schema" {
		// Structured output (Gemini CLI's model router asks for it): a
		// value of the schema, never a tool call.
		v, _ := json.Marshal(sample(rf.Get("json_schema.schema")))
		callTool, text, finish = false, string(v), "stop"
	}

	if !req.Get("stream").Bool() {
		msg := map[string]any{"role": "assistant", "content": text, "refusal": nil}
		if callTool {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": callID, "type": "function",
				"function": map[string]any{"name": toolName, "arguments": toolInput}}}
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": chatID, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}}, "usage": usage})
		return
	}
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": chatID, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}
	}
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if callTool {
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": callID, "type": "function",
			"function": map[string]any{"name": toolName, "arguments": ""}}}}, nil))
		for _, part := range halves(toolInput) {
			s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": part}}}}, nil))
		}
	} else {
		for _, part := range halves(text) {
			s.event("", chunk(map[string]any{"content": part}, nil))
		}
	}
	s.event("", chunk(map[string]any{}, finish))
	if req.Get("stream_options.include_usage").Bool() {
		s.event("", map[string]any{"id": chatID, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": usage})
	}
	s.event("", "[DONE]")
}

// sawToolResult reports whether a chat request carried a tool message.
func (f *fakeOpenAI) sawToolResult() bool {
	for _, e := range f.requests() {
		for _, m := range gjson.GetBytes(e.Body, "messages").Array() {
			if m.Get("role").Str == "tool" {
				return true
			}
		}
	}
	return false
}

// encryptedReasoning is the encrypted_content of the reasoning item the
// fake's Responses API answers with when include asks for it: a client
// that sends it back proves the native path carries it.
const encryptedReasoning = "gAAAA-fake-encrypted-reasoning"

// responses answers a Responses API request: a call of an offered
// function tool (type function, flat) when the input does not end with
// function call outputs, else text quoting them; a reasoning item first
// when include asks for its encrypted content. Nothing is stored.
func (f *fakeOpenAI) responses(w http.ResponseWriter, body []byte) {
	if !gjson.ValidBytes(body) {
		oaiError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request.")
		return
	}
	req := gjson.ParseBytes(body)
	model := req.Get("model").Str
	var offered []offeredTool
	for _, t := range req.Get("tools").Array() {
		if t.Get("type").Str == "function" {
			offered = append(offered, offeredTool{name: t.Get("name").Str, schema: t.Get("parameters")})
		}
	}
	in := req.Get("input").Array()
	var toolResult string
	sawResult := false
	for i := len(in) - 1; i >= 0 && in[i].Get("type").Str == "function_call_output"; i-- {
		sawResult = true
		toolResult = textOf(in[i].Get("output")) + toolResult
	}
	callTool := len(offered) > 0 && !sawResult && req.Get("tool_choice").Str != "none"

	id := f.ids.Add(1)
	respID := fmt.Sprintf("resp_%s_%d", f.name, id)
	var output []map[string]any
	for _, inc := range req.Get("include").Array() {
		if inc.Str == "reasoning.encrypted_content" {
			output = append(output, map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%s_%d", f.name, id), "summary": []any{},
				"encrypted_content": encryptedReasoning})
		}
	}
	if callTool {
		name, input := pickTool(f.prefer, offered)
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", f.name, id),
			"call_id": fmt.Sprintf("call_%s_%d", f.name, id), "name": name, "arguments": input, "status": "completed"})
	} else {
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%s_%d", f.name, id), "role": "assistant",
			"status": "completed", "content": []any{map[string]any{"type": "output_text", "text": reply(f.name, toolResult, sawResult), "annotations": []any{}}}})
	}
	resp := func(status string, out []map[string]any) map[string]any {
		r := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status, "model": model,
			"output": out, "error": nil, "store": false, "tools": req.Get("tools").Value(), "usage": nil}
		if status == "completed" {
			r["usage"] = map[string]any{"input_tokens": tokens(body), "output_tokens": 8, "total_tokens": tokens(body) + 8,
				"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
		}
		return r
	}
	if !req.Get("stream").Bool() {
		writeJSON(w, http.StatusOK, resp("completed", output))
		return
	}
	s := newSSE(w)
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		s.event(typ, fields)
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []map[string]any{})})
	ev("response.in_progress", map[string]any{"response": resp("in_progress", []map[string]any{})})
	for i, it := range output {
		ev("response.output_item.added", map[string]any{"output_index": i, "item": it})
		switch it["type"] {
		case "function_call":
			for _, part := range halves(it["arguments"].(string)) {
				ev("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": part})
			}
			ev("response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": i, "arguments": it["arguments"]})
		case "message":
			text := it["content"].([]any)[0].(map[string]any)["text"].(string)
			ev("response.content_part.added", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, part := range halves(text) {
				ev("response.output_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": part})
			}
			ev("response.output_text.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "text": text})
			ev("response.content_part.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0,
				"part": it["content"].([]any)[0]})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"response": resp("completed", output)})
}
