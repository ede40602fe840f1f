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

// respFake is an OpenAI or Azure provider with its own Responses API: it
// answers POST /v1/responses (Azure: /openai/v1/responses) with a scripted
// Response, plain or as OpenAI's event stream, and chat completions with
// a fixed text (for the turns the router translates). It keeps every
// request it receives, so scenarios check what reached it.
type respFake struct {
	name  string
	azure bool
	srv   *httptest.Server
	chat  *llmFake // answers chat completions (no server of its own)

	mu    sync.Mutex // guards reqs, polls
	reqs  []respReq
	polls int // requests about a stored response so far

	reply atomic.Pointer[func(n int) respReply]
}

// respReq is one API request a respFake received.
type respReq struct {
	path, query string
	header      http.Header
	body        gjson.Result
}

// respReply is one scripted answer to a Responses request.
type respReply struct {
	status int              // not 0: an error answer with this status
	text   string           // the message's text
	extra  []map[string]any // output items before the message (a built-in tool's call)
	queued bool             // background: status queued, no output
	cut    bool             // stream: the first events, then a TCP reset
	usage  map[string]any   // nil: 11 in, 5 out
}

func newRespFake(t testing.TB, name string, azure bool) *respFake {
	t.Helper()
	f := &respFake{name: name, azure: azure, chat: &llmFake{name: name, d: openaiAPI}}
	f.always(respReply{text: "native answer from " + name})
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *respFake) script(fn func(n int) respReply) { f.reply.Store(&fn) }
func (f *respFake) always(r respReply)              { f.script(func(int) respReply { return r }) }

// responsesPath is where the provider's Responses API is.
func (f *respFake) responsesPath() string {
	if f.azure {
		return "/openai/v1/responses"
	}
	return "/v1/responses"
}

// received returns the POST /responses requests so far (the chat ones
// when chat).
func (f *respFake) received(chat bool) []respReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []respReq
	for _, r := range f.reqs {
		if r.path == f.responsesPath() && !chat || strings.Contains(r.path, "/chat/completions") && chat {
			out = append(out, r)
		}
	}
	return out
}

// stored returns the requests about stored responses so far.
func (f *respFake) stored() []respReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []respReq
	for _, r := range f.reqs {
		if strings.HasPrefix(r.path, f.responsesPath()+"/") {
			out = append(out, r)
		}
	}
	return out
}

func (f *respFake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	if rest, ok := strings.CutPrefix(r.URL.Path, f.responsesPath()+"/"); ok {
		f.serveStored(w, r, rest)
		return
	}
	if r.Method == http.MethodGet { // the breaker's probe
		io.WriteString(w, `{"object":"list","data":[{"id":"x","object":"model"}]}`)
		return
	}
	chatPath := "/v1/chat/completions"
	if f.azure {
		chatPath = "/openai/deployments/" + "model-of-" + f.name + "/chat/completions"
	}
	if r.URL.Path != f.responsesPath() && r.URL.Path != chatPath {
		http.Error(w, "no such path "+r.URL.Path, http.StatusNotFound)
		return
	}
	req := gjson.ParseBytes(body)
	f.mu.Lock()
	f.reqs = append(f.reqs, respReq{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: req})
	n := len(f.reqs)
	f.mu.Unlock()
	if r.URL.Path == chatPath {
		rep := llmReply{text: "chat answer from " + f.name}
		if req.Get("stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range f.chat.events(rep, req) {
				io.WriteString(w, ev)
			}
			return
		}
		io.WriteString(w, f.chat.whole(rep))
		return
	}
	rep := (*f.reply.Load())(n)
	if rep.status != 0 {
		w.WriteHeader(rep.status)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
		return
	}
	id := fmt.Sprintf("resp_%s_%d", f.name, n)
	msg := map[string]any{"type": "message", "id": fmt.Sprintf("msg_%s_%d", f.name, n), "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}, "logprobs": []any{}}}}
	output := []any{}
	for _, x := range rep.extra {
		output = append(output, x)
	}
	output = append(output, msg)
	usage := rep.usage
	if usage == nil {
		usage = map[string]any{"input_tokens": fakeInputTokens, "output_tokens": fakeOutputTokens, "total_tokens": fakeInputTokens + fakeOutputTokens,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	}
	response := func(status string, out []any, u any) map[string]any {
		return map[string]any{"id": id, "object": "response", "created_at": 1767225600, "status": status, "error": nil,
			"incomplete_details": nil, "model": "gpt-" + f.name, "output": out, "usage": u, "store": req.Get("store").Type != gjson.False,
			"previous_response_id": req.Get("previous_response_id").Value(), "tools": json.RawMessage(orNull(req.Get("tools").Raw)),
			"background": rep.queued}
	}
	if rep.queued {
		io.WriteString(w, mustJSON(response("queued", []any{}, nil)))
		return
	}
	if !req.Get("stream").Bool() {
		io.WriteString(w, mustJSON(response("completed", output, usage)))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	emit := func(typ string, data map[string]any) {
		data["type"], data["sequence_number"] = typ, seq
		seq++
		io.WriteString(w, "event: "+typ+"\ndata: "+mustJSON(data)+"\n\n")
		http.NewResponseController(w).Flush()
	}
	emit("response.created", map[string]any{"response": response("in_progress", []any{}, nil)})
	emit("response.in_progress", map[string]any{"response": response("in_progress", []any{}, nil)})
	for i, x := range rep.extra {
		emit("response.output_item.added", map[string]any{"output_index": i, "item": x})
		emit("response.output_item.done", map[string]any{"output_index": i, "item": x})
	}
	k := len(rep.extra)
	emit("response.output_item.added", map[string]any{"output_index": k, "item": map[string]any{"type": "message", "id": msg["id"],
		"status": "in_progress", "role": "assistant", "content": []any{}}})
	emit("response.content_part.added", map[string]any{"item_id": msg["id"], "output_index": k, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for i, p := range pieces(rep.text) {
		if rep.cut && i == 1 {
			resetConn(w)
			return
		}
		emit("response.output_text.delta", map[string]any{"item_id": msg["id"], "output_index": k, "content_index": 0, "delta": p, "logprobs": []any{}})
	}
	emit("response.output_text.done", map[string]any{"item_id": msg["id"], "output_index": k, "content_index": 0, "text": rep.text, "logprobs": []any{}})
	emit("response.content_part.done", map[string]any{"item_id": msg["id"], "output_index": k, "content_index": 0,
		"part": msg["content"].([]any)[0]})
	emit("response.output_item.done", map[string]any{"output_index": k, "item": msg})
	emit("response.completed", map[string]any{"response": response("completed", output, usage)})
}

// serveStored answers requests about a response the fake runs in the
// background (rest is the path below /responses/): the first GET finds it
// in progress, later ones completed; its input items; cancel; delete.
func (f *respFake) serveStored(w http.ResponseWriter, r *http.Request, rest string) {
	f.mu.Lock()
	f.reqs = append(f.reqs, respReq{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone()})
	f.polls++
	polls := f.polls
	f.mu.Unlock()
	id, sub, _ := strings.Cut(rest, "/")
	response := func(status string, output []any) string {
		return mustJSON(map[string]any{"id": id, "object": "response", "created_at": 1767225600, "status": status, "error": nil,
			"model": "gpt-" + f.name, "output": output, "background": true, "usage": nil})
	}
	switch {
	case r.Method == http.MethodDelete:
		io.WriteString(w, mustJSON(map[string]any{"id": id, "object": "response.deleted", "deleted": true}))
	case sub == "cancel":
		io.WriteString(w, response("cancelled", []any{}))
	case sub == "input_items":
		io.WriteString(w, mustJSON(map[string]any{"object": "list", "data": []any{map[string]any{"id": "msg_in_" + f.name, "type": "message",
			"role": "user", "status": "completed", "content": []any{map[string]any{"type": "input_text", "text": "held at " + f.name}}}},
			"first_id": "msg_in_" + f.name, "last_id": "msg_in_" + f.name, "has_more": false}))
	case id == "resp_gone":
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"message":"Response with id 'resp_gone' not found.","type":"invalid_request_error","param":null,"code":null}}`)
	case polls == 1:
		io.WriteString(w, response("in_progress", []any{}))
	default:
		io.WriteString(w, response("completed", []any{map[string]any{"type": "message", "id": "msg_bg_" + f.name, "status": "completed",
			"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "background answer from " + f.name, "annotations": []any{}}}}}))
	}
}

func orNull(raw string) string {
	if raw == "" {
		return "null"
	}
	return raw
}
