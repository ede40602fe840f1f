package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// fuzzOps are the operations a fuzzed byte selects, with their routes.
var fuzzOps = [...]struct {
	op   provider.Op
	path string
}{
	{provider.OpChat, "/v1/chat/completions"},
	{provider.OpCompletions, "/v1/completions"},
	{provider.OpEmbeddings, "/v1/embeddings"},
}

// fuzzBodies are realistic request bodies, by fuzzOps index, plus the
// malformed shapes proxy_test.go checks.
var fuzzBodies = []struct {
	op   uint8
	body string
}{
	{0, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
	{0, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	{0, `{"model":"m","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."}],"temperature":0.3,"max_tokens":64}`},
	{0, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"what is in this image?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`},
	{0, `{"model":"m","messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"tool_choice":"auto"}`},
	{0, ` { "messages" : [ { "role" : "user" , "content" : "x" } ] , "model" : "m" } `},
	{0, `{"model":"\u006d","messages":[{"role":"user","content":"escaped model"}]}`},
	{0, `{"model":"a","model":"m","messages":[{"role":"user","content":"duplicate key"}]}`},
	{0, `{"model":"nope","messages":[{"role":"user","content":"x"}]}`},
	{0, `{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`},
	{0, `{"model":"m","stream_options":{"include_usage":1},"messages":[{"role":"user","content":"x"}]}`},
	{0, `{"model":"m","max_tokens":1e400,"messages":[{"role":"user","content":"x"}]}`},
	{0, `{"model":"m","max_tokens":-1,"messages":[{"role":"user","content":"x"}]}`},
	{0, `{"model":"m","messages":[{"content":"x"}]}`},
	{0, `{"model":7,"messages":[]}`},
	{0, `{"model":`},
	{0, `[1,2]`},
	{0, ``},
	{1, `{"model":"m","prompt":"Say this is a test","max_tokens":7}`},
	{1, `{"model":"m","prompt":["a","b"],"stream":true}`},
	{2, `{"model":"m","input":"The food was delicious"}`},
	{2, `{"model":"m","input":["a","b"],"encoding_format":"float"}`},
	{2, `{"model":"m","input":[],"stream":true}`},
}

// fuzzUTF8 is s with every byte that is not part of valid UTF-8 replaced
// by U+FFFD, the way encoding/json decodes such a string literal.
func fuzzUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// FuzzParseFields feeds arbitrary bodies to the request reader for every
// operation. It must not panic or change the body. An accepted body is
// valid JSON; the model span is a string literal that is the top-level
// "model" member encoding/json sees (a repeated top-level key is refused), decodes
// to the returned model, and can be swapped with AppendBody for any model
// name, leaving valid JSON whose "model" is the new name and every other
// byte as it was. The returned strings do not alias the body; a chat
// request's opening hashed from the walk (ParseTurns) is affinity.Opening
// of its messages. A refused body gets a 400 whose OpenAI error encodes
// as valid JSON.
func FuzzParseFields(f *testing.F) {
	for _, s := range fuzzBodies {
		f.Add(s.op, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, opn uint8, body []byte) {
		op := fuzzOps[int(opn)%len(fuzzOps)].op
		in := bytes.Clone(body)
		var opening affinity.Turns
		fl, aerr := intake.ParseTurns(op, in, opening.Turn)
		if !bytes.Equal(in, body) {
			t.Fatalf("parseFields changed the body:\n got %q\nwant %q", in, body)
		}
		if aerr != nil {
			if aerr.Status != http.StatusBadRequest || aerr.Type != "invalid_request_error" || aerr.Message == "" {
				t.Fatalf("refusal status %d type %q message %q, want 400 invalid_request_error with a message", aerr.Status, aerr.Type, aerr.Message)
			}
			if e := openaiwire.AppendError(nil, openaiwire.Error{Type: aerr.Type, Code: aerr.Code, Param: aerr.Param, Message: aerr.Message}); !json.Valid(e) {
				t.Fatalf("error body is not valid JSON: %q", e)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body encoding/json rejects: %q", body)
		}
		if fl.Model == "" || fl.MaxTokens < 0 || (op == provider.OpEmbeddings && fl.Stream) {
			t.Fatalf("accepted fields %+v for op %s", fl, op)
		}
		if fl.ModelStart < 0 || fl.ModelEnd > len(body) || fl.ModelEnd-fl.ModelStart < 2 {
			t.Fatalf("model span [%d, %d) out of the %d-byte body", fl.ModelStart, fl.ModelEnd, len(body))
		}
		span := body[fl.ModelStart:fl.ModelEnd]
		var decoded string
		if span[0] != '"' || json.Unmarshal(span, &decoded) != nil {
			t.Fatalf("model span %q is not a JSON string literal", span)
		}
		if want := fuzzUTF8(fl.Model); decoded != want {
			t.Fatalf("model span %q decodes to %q, but parseFields returned %q", span, decoded, fl.Model)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("accepted body does not decode as an object: %v", err)
		}
		if got := top["model"]; !bytes.Equal(got, span) {
			t.Fatalf("top-level model is %q, but the span is %q", got, span)
		}
		for _, m := range []string{"p-model", "gpt-4o-mini", "", `a"b\c` + "\x00\n\u2028", "bad\xffutf8"} {
			r := provider.Request{Op: op, Model: m, Body: body, ModelStart: fl.ModelStart, ModelEnd: fl.ModelEnd}
			out := r.AppendBody(nil)
			if !gjson.ValidBytes(out) || !json.Valid(out) {
				t.Fatalf("AppendBody(%q) gave invalid JSON: %q", m, out)
			}
			lit, _ := openaiwire.Append(nil, &m)
			if !bytes.HasPrefix(out, body[:fl.ModelStart]) || !bytes.HasSuffix(out, body[fl.ModelEnd:]) ||
				len(out) != len(body)-len(span)+len(lit) {
				t.Fatalf("AppendBody(%q) changed more than the model: %q", m, out)
			}
			var swapped map[string]json.RawMessage
			var got string
			if json.Unmarshal(out, &swapped) != nil || json.Unmarshal(swapped["model"], &got) != nil || got != fuzzUTF8(m) {
				t.Fatalf("AppendBody(%q) gave model %q in %q", m, swapped["model"], out)
			}
		}
		if op == provider.OpChat {
			if got, want := opening.ID(fl.Messages), affinity.Opening(nil, fl.Messages); got != want {
				t.Fatalf("opening %+v from Parse's walk, %+v read again", got, want)
			}
		}
		model := fl.Model
		for i := range in {
			in[i] = 'x'
		}
		if fl.Model != model {
			t.Fatalf("returned model aliases the body: %q became %q", model, fl.Model)
		}
	})
}

// fuzzWriter is a ResponseWriter that counts status lines.
type fuzzWriter struct {
	h       http.Header
	status  int
	headers int // WriteHeader calls, the implicit one of a first Write included
	body    bytes.Buffer
}

func (w *fuzzWriter) Header() http.Header { return w.h }
func (w *fuzzWriter) WriteHeader(code int) {
	w.headers++
	if w.status == 0 {
		w.status = code
	}
}
func (w *fuzzWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(b)
}
func (w *fuzzWriter) Flush() {}

// fuzzAnswer is what the fake provider answers to a non-stream request.
const fuzzAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"p-model","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// fuzzMaxBody is the body limit of the fuzzed server: small, so that 413
// is within reach of the mutator.
const fuzzMaxBody = 4096

// FuzzHandler POSTs arbitrary bodies through Server.Handler to a fake
// provider that always succeeds. Every request gets exactly one status
// line, and the status is the one the request reader's verdict implies:
// 413 over the limit, 400 for a body parseFields refuses (or an empty
// one), 404 for a model other than "m", else 200 with the provider's
// answer (an SSE stream ending in [DONE] when the client asked for one).
// Every other answer is an OpenAI-shaped JSON error. What reaches the
// provider is valid JSON with the target's model name.
func FuzzHandler(f *testing.F) {
	for _, s := range fuzzBodies {
		f.Add(s.op, []byte(s.body))
	}
	a := &fake{do: func(ctx context.Context, req *provider.Request) (*provider.Response, error) {
		if req.Stream {
			return &provider.Response{Stream: &fakeStream{ctx: ctx, payloads: []string{roleChunk, textChunk, stopChunk}, end: io.EOF}}, nil
		}
		return &provider.Response{Body: []byte(fuzzAnswer)}, nil
	}}
	s := newServer(f, limits.Config{MaxBodyBytes: fuzzMaxBody}, nil, target{name: "p", a: a})
	h := s.Handler()
	f.Fuzz(func(t *testing.T, opn uint8, body []byte) {
		route := fuzzOps[int(opn)%len(fuzzOps)]
		wantStatus, wantStream := http.StatusOK, false
		switch fl, aerr := intake.Parse(route.op, body); {
		case len(body) > fuzzMaxBody:
			wantStatus = http.StatusRequestEntityTooLarge
		case len(body) == 0:
			wantStatus = http.StatusBadRequest
		case aerr != nil:
			wantStatus = aerr.Status
		case fl.Model != "m":
			wantStatus = http.StatusNotFound
		default:
			wantStream = fl.Stream
		}

		a.last.Store(nil)
		r := httptest.NewRequest(http.MethodPost, route.path, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := &fuzzWriter{h: http.Header{}}
		h.ServeHTTP(w, r)

		if w.headers != 1 {
			t.Fatalf("%d status lines (first %d), want exactly one; body %q", w.headers, w.status, w.body.Bytes())
		}
		if w.status != wantStatus {
			t.Fatalf("status %d, want %d; answer %q", w.status, wantStatus, w.body.Bytes())
		}
		if w.h.Get("X-Request-ID") == "" {
			t.Error("no X-Request-ID")
		}
		sent := a.last.Load()
		if (sent != nil) != (wantStatus == http.StatusOK) {
			t.Fatalf("provider called: %v, want %v", sent != nil, wantStatus == http.StatusOK)
		}
		if sent != nil {
			var fwd map[string]json.RawMessage
			if !json.Valid(sent.Body) || json.Unmarshal(sent.Body, &fwd) != nil || string(fwd["model"]) != `"p-model"` {
				t.Fatalf("forwarded body %q is not valid JSON with the target's model", sent.Body)
			}
		}
		got := w.body.Bytes()
		switch {
		case wantStatus == http.StatusOK && wantStream:
			if ct := w.h.Get("Content-Type"); ct != "text/event-stream" || !bytes.HasSuffix(got, []byte("data: [DONE]\n\n")) {
				t.Fatalf("stream answer %q (Content-Type %q), want an event stream ending in [DONE]", got, ct)
			}
		case wantStatus == http.StatusOK:
			if string(got) != fuzzAnswer {
				t.Fatalf("answer %q, want the provider's body", got)
			}
		default:
			fuzzCheckError(t, w.h, got)
		}
	})
}

// fuzzCheckError fails t unless b is exactly one OpenAI error object:
// {"error":{"message","type","param","code"}} with a non-empty message and
// type, and param and code strings or null.
func fuzzCheckError(t *testing.T, h http.Header, b []byte) {
	t.Helper()
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q, want application/json", ct)
	}
	var doc map[string]map[string]json.RawMessage
	if !json.Valid(b) || json.Unmarshal(b, &doc) != nil || len(doc) != 1 || len(doc["error"]) != 4 {
		t.Fatalf("error body %q is not {\"error\":{message,type,param,code}}", b)
	}
	e := doc["error"]
	for _, k := range []string{"message", "type"} {
		var s string
		if json.Unmarshal(e[k], &s) != nil || s == "" {
			t.Fatalf("error.%s is %s, want a non-empty string", k, e[k])
		}
	}
	for _, k := range []string{"param", "code"} {
		var s *string
		if json.Unmarshal(e[k], &s) != nil {
			t.Fatalf("error.%s is %s, want a string or null", k, e[k])
		}
	}
}
