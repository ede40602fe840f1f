package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// native is a scripted Anthropic-format adapter: it serves OpMessages
// (and counts tokens) and records what it was sent.
type native struct {
	calls  atomic.Int32
	counts atomic.Int32 // CountTokens calls
	last   atomic.Pointer[provider.Request]
	do     func(ctx context.Context, req *provider.Request) (*provider.Response, error)
	// count, when not nil, answers CountTokens.
	count func() (*provider.Response, error)
}

func (n *native) Supports(op provider.Op) bool { return op == provider.OpMessages }
func (n *native) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	n.calls.Add(1)
	cp := *req
	cp.Body = req.AppendBody(nil)
	n.last.Store(&cp)
	return n.do(ctx, req)
}
func (n *native) CountTokens(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	n.counts.Add(1)
	if n.count != nil {
		return n.count()
	}
	return &provider.Response{Body: []byte(`{"input_tokens":42}`)}, nil
}

var _ provider.TokenCounter = (*native)(nil)

const nativeAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"up-claude","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":7}}`

// stream yields payloads, then end.
type stream struct {
	p   []string
	end error
}

func (s *stream) Next() ([]byte, error) {
	if len(s.p) == 0 {
		return nil, s.end
	}
	p := s.p[0]
	s.p = s.p[1:]
	return []byte(p), nil
}
func (s *stream) Usage() outcome.Usage { return outcome.Usage{} }
func (s *stream) Close() error         { return nil }

var nativeEventsIn = []string{
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"up-claude","usage":{"input_tokens":3,"output_tokens":0}}}`,
	`{"type":"ping"}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hi"}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`,
	`{"type":"message_stop"}`,
}

// router serves the chat family and the Messages dialect on routes of
// its own: model "claude-*" on tier 0 targets tier0, then tier 1 targets
// tier1 (when given).
func router(t testing.TB, keys []string, tier0 provider.Adapter, tier1 provider.Adapter) http.Handler {
	t.Helper()
	targets := []route.Target{{Provider: "p0", Model: "up-claude", Tier: 0}}
	ps := []provider.Descriptor{{Name: "p0", Type: "fake", Adapter: tier0}}
	if tier1 != nil {
		targets = append(targets, route.Target{Provider: "p1", Model: "up-other", Tier: 1})
		ps = append(ps, provider.Descriptor{Name: "p1", Type: "fake", Adapter: tier1})
	}
	table, err := route.NewTable([]route.ModelConfig{{Name: "claude-*", Targets: targets}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := proxy.Open(routing.Options{Providers: ps, Models: table, ClientKeys: keys,
		Limits:  limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second},
		Routing: policy.Config{Retry: policy.Retry{Config: backoff.Config{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Multiplier: 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Handler(New(nil).Dialect())
}

func sim(t testing.TB) provider.Adapter {
	a, err := simulated.New(provider.Config{Name: "sim"}, simulated.Config{Reply: "Hello from the router"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func send(h http.Handler, method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const hello = `{"model":"claude-opus-5-5","max_tokens":128000,"unknown_field":{"x":[1,2]},"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`

// anthropicError decodes an Anthropic error body, failing the test when
// it is not one.
func anthropicError(t *testing.T, w *httptest.ResponseRecorder) (typ, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" {
		t.Fatalf("not an Anthropic error (%v): %d %s", err, w.Code, w.Body)
	}
	return e.Error.Type, e.Error.Message
}

func TestNativePassthrough(t *testing.T) {
	n := &native{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return &provider.Response{Body: []byte(nativeAnswer)}, nil
	}}
	h := router(t, nil, n, nil)
	w := send(h, "POST", "/v1/messages?beta=true", hello, "anthropic-version", "2023-06-01",
		"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14", "anthropic-beta", "effort-2025-11-24")
	if w.Code != 200 || w.Body.String() != nativeAnswer {
		t.Fatalf("got %d %s, want the provider's answer as it came", w.Code, w.Body)
	}
	got := n.last.Load()
	want := strings.Replace(hello, `"claude-opus-5-5"`, `"up-claude"`, 1)
	if string(got.Body) != want {
		t.Errorf("provider got body\n%s\nwant\n%s", got.Body, want)
	}
	if v, b := got.NativeHeader("Anthropic-Version"), got.NativeHeader("Anthropic-Beta"); v != "2023-06-01" || b != "claude-code-20250219,interleaved-thinking-2025-05-14,effort-2025-11-24" {
		t.Errorf("forwarded version %q, betas %q", v, b)
	}
	if got.Alt != nil {
		t.Errorf("a model whose every target is native was translated too")
	}
	if w.Header().Get("X-Llmrouter-Provider") != "p0" || w.Header().Get("X-Llmrouter-Model") != "up-claude" {
		t.Errorf("headers %v", w.Header())
	}
}

func TestNativeStream(t *testing.T) {
	n := &native{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return &provider.Response{Stream: &stream{p: nativeEventsIn, end: io.EOF}}, nil
	}}
	h := router(t, nil, n, nil)
	w := send(h, "POST", "/v1/messages", strings.Replace(hello, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	var want strings.Builder
	for _, p := range nativeEventsIn {
		var ev struct{ Type string }
		_ = json.Unmarshal([]byte(p), &ev)
		want.WriteString("event: " + ev.Type + "\ndata: " + p + "\n\n")
	}
	if w.Code != 200 || w.Body.String() != want.String() {
		t.Fatalf("got %d\n%s\nwant\n%s", w.Code, w.Body, want.String())
	}
}

func TestNativeStreamCutAfterCommit(t *testing.T) {
	n := &native{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return &provider.Response{Stream: &stream{p: nativeEventsIn[:7], end: &outcome.Error{Kind: outcome.Network, Message: "reset"}}}, nil
	}}
	h := router(t, nil, n, nil)
	w := send(h, "POST", "/v1/messages", strings.Replace(hello, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	body := w.Body.String()
	if w.Code != 200 || strings.Count(body, "event: error\n") != 1 || !strings.HasSuffix(body, "\n\n") ||
		strings.Contains(body, "message_stop") {
		t.Fatalf("got %d %s", w.Code, body)
	}
	last := body[strings.LastIndex(body, "event: error\ndata: ")+len("event: error\ndata: "):]
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(last)), &e); err != nil || e.Type != "error" || e.Error.Type != "api_error" {
		t.Fatalf("error event %q: %v", last, err)
	}
}

func TestNativeClientErrorPassedThrough(t *testing.T) {
	raw := `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.thinking.signature: Invalid signature in thinking block"},"request_id":"req_up"}`
	n := &native{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return nil, &outcome.Error{Kind: outcome.ClientError, Status: 400, Type: "invalid_request_error", Message: "x", Body: []byte(raw)}
	}}
	h := router(t, nil, n, sim(t))
	w := send(h, "POST", "/v1/messages", hello)
	if w.Code != 400 || w.Body.String() != raw || n.calls.Load() != 1 {
		t.Fatalf("got %d %s after %d calls, want the provider's 400 byte for byte, no failover", w.Code, w.Body, n.calls.Load())
	}
}

func TestTranslated(t *testing.T) {
	h := router(t, nil, sim(t), nil)
	w := send(h, "POST", "/v1/messages", hello)
	var m struct {
		Type, Role, Model string
		Content           []struct{ Type, Text string }
		StopReason        string `json:"stop_reason"`
		Usage             struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || w.Code != 200 {
		t.Fatalf("got %d %s (%v)", w.Code, w.Body, err)
	}
	if m.Type != "message" || m.Role != "assistant" || m.Model != "claude-opus-5-5" || len(m.Content) != 1 ||
		m.Content[0].Type != "text" || m.Content[0].Text == "" || m.StopReason != "end_turn" || m.Usage.OutputTokens == 0 {
		t.Fatalf("got %+v", m)
	}

	w = send(h, "POST", "/v1/messages", strings.Replace(hello, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	var names []string
	for _, line := range strings.Split(w.Body.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok && (len(names) == 0 || names[len(names)-1] != name) {
			names = append(names, name)
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
	if w.Code != 200 || strings.Join(names, " ") != want {
		t.Fatalf("got %d events %v, want %s\n%s", w.Code, names, want, w.Body)
	}
}

// TestFailoverNativeToTranslated: the Anthropic-format provider is down
// before its first byte; the request fails over to a chat provider, the
// client sees a Messages answer.
func TestFailoverNativeToTranslated(t *testing.T) {
	n := &native{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return nil, &outcome.Error{Kind: outcome.Overloaded, Status: 529, Message: "overloaded"}
	}}
	h := router(t, nil, n, sim(t))
	w := send(h, "POST", "/v1/messages", hello)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"type":"message"`) || w.Header().Get("X-Llmrouter-Provider") != "p1" ||
		w.Header().Get("X-Llmrouter-Degraded") != "true" {
		t.Fatalf("got %d %v %s", w.Code, w.Header(), w.Body)
	}
	if n.calls.Load() == 0 {
		t.Fatal("the native provider was never tried")
	}
}

func TestRefusals(t *testing.T) {
	n := &native{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return nil, &outcome.Error{Kind: outcome.Overloaded, Status: 529, Message: "overloaded"}
	}}
	h := router(t, []string{"k1"}, n, nil)
	tests := []struct {
		name     string
		path     string
		body     string
		hdr      []string
		status   int
		typ      string
		retryNot bool
	}{
		{"no key", "/v1/messages", hello, nil, 401, "authentication_error", false},
		{"wrong key", "/v1/messages", hello, []string{"x-api-key", "nope"}, 401, "authentication_error", false},
		{"no max_tokens", "/v1/messages", `{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}`, []string{"x-api-key", "k1"}, 400, "invalid_request_error", false},
		{"bad role", "/v1/messages", `{"model":"claude-x","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`, []string{"Authorization", "Bearer k1"}, 400, "invalid_request_error", false},
		{"not json", "/v1/messages", `{"model":`, []string{"x-api-key", "k1"}, 400, "invalid_request_error", false},
		{"unknown model", "/v1/messages", `{"model":"gpt-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, []string{"x-api-key", "k1"}, 404, "not_found_error", false},
		{"all attempts failed", "/v1/messages", hello, []string{"x-api-key", "k1"}, 502, "api_error", true},
		{"wrong method", "/v1/messages", "", []string{"x-api-key", "k1"}, 405, "invalid_request_error", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if tt.status == 405 {
				method = "GET"
			}
			w := send(h, method, tt.path, tt.body, tt.hdr...)
			typ, _ := anthropicError(t, w)
			if w.Code != tt.status || typ != tt.typ {
				t.Fatalf("got %d %s, want %d %s", w.Code, typ, tt.status, tt.typ)
			}
			if got := w.Header().Get("X-Should-Retry") == "false"; got != tt.retryNot {
				t.Errorf("x-should-retry: false is %v, want %v", got, tt.retryNot)
			}
		})
	}
}

// TestBadBeta: an anthropic-beta element that is not a beta's name is a
// 400 naming the header on both routes, after the client's key is
// checked, and nothing reaches a provider (it would quote the value back
// in its error: docs/ARCHITECTURE.md, "Classification").
func TestBadBeta(t *testing.T) {
	n := &native{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return &provider.Response{Body: []byte(nativeAnswer)}, nil
	}}
	h := router(t, []string{"k1"}, n, nil)
	count := `{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}`
	for _, tt := range []struct {
		name, path, body string
		hdr              []string
		status           int
		typ              string
	}{
		{"quota words", "/v1/messages", hello, []string{"x-api-key", "k1", "anthropic-beta", "credit balance"}, 400, "invalid_request_error"},
		{"second header", "/v1/messages", hello, []string{"x-api-key", "k1", "anthropic-beta", "claude-code-20250219", "anthropic-beta", "Usage_Limit"}, 400, "invalid_request_error"},
		{"count_tokens", "/v1/messages/count_tokens", count, []string{"x-api-key", "k1", "anthropic-beta", "oauth-2025-04-20, spend limit"}, 400, "invalid_request_error"},
		{"no key first", "/v1/messages", hello, []string{"anthropic-beta", "credit balance"}, 401, "authentication_error"},
		{"no key first, count_tokens", "/v1/messages/count_tokens", count, []string{"anthropic-beta", "credit balance"}, 401, "authentication_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := send(h, "POST", tt.path, tt.body, tt.hdr...)
			typ, msg := anthropicError(t, w)
			if w.Code != tt.status || typ != tt.typ || tt.status == 400 && !strings.HasPrefix(msg, "anthropic-beta: ") {
				t.Fatalf("got %d %s %q, want %d %s naming anthropic-beta", w.Code, typ, msg, tt.status, tt.typ)
			}
		})
	}
	if c, k := n.calls.Load(), n.counts.Load(); c != 0 || k != 0 {
		t.Errorf("the provider was called %d times and asked to count %d times, want never", c, k)
	}
	w := send(h, "POST", "/v1/messages", hello, "x-api-key", "k1", "anthropic-beta", " claude-code-20250219 ,, effort-2025-11-24\t")
	if w.Code != 200 {
		t.Errorf("valid betas with spaces and an empty element: got %d %s, want 200", w.Code, w.Body)
	}
}

func TestCountTokens(t *testing.T) {
	count := `{"model":"claude-x","messages":[{"role":"user","content":"` + strings.Repeat("word ", 100) + `"}]}`
	t.Run("native target counts", func(t *testing.T) {
		h := router(t, nil, &native{}, nil)
		w := send(h, "POST", "/v1/messages/count_tokens", count)
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"input_tokens":42}` {
			t.Fatalf("got %d %s", w.Code, w.Body)
		}
	})
	// An Anthropic-compatible server without the route: the estimate,
	// and the provider is not asked again until a reload.
	for _, tt := range []struct {
		status    int
		kind      outcome.Kind
		estimated bool
	}{
		{404, outcome.ClientError, true},
		{405, outcome.ClientError, true},
		{501, outcome.ServerError, true},
		{400, outcome.ClientError, false}, // the request's own fault: passed on
	} {
		t.Run(fmt.Sprintf("count answers %d", tt.status), func(t *testing.T) {
			n := &native{count: func() (*provider.Response, error) {
				return nil, &outcome.Error{Kind: tt.kind, Status: tt.status, Type: "not_found_error", Message: "Not Found"}
			}}
			h := router(t, nil, n, nil)
			for i := range 2 {
				w := send(h, "POST", "/v1/messages/count_tokens", count)
				var c struct {
					InputTokens int64 `json:"input_tokens"`
				}
				_ = json.Unmarshal(w.Body.Bytes(), &c)
				if got := w.Code == 200 && c.InputTokens >= 100; got != tt.estimated {
					t.Fatalf("call %d: got %d %s, want the estimate %v", i, w.Code, w.Body, tt.estimated)
				}
			}
			want := int32(2)
			if tt.estimated {
				want = 1
			}
			if got := n.counts.Load(); got != want {
				t.Errorf("the provider was asked to count %d times, want %d", got, want)
			}
		})
	}
	t.Run("estimate otherwise", func(t *testing.T) {
		h := router(t, nil, sim(t), nil)
		w := send(h, "POST", "/v1/messages/count_tokens", count)
		var c struct {
			InputTokens int64 `json:"input_tokens"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || w.Code != 200 || c.InputTokens < 100 || c.InputTokens > 400 {
			t.Fatalf("got %d %s", w.Code, w.Body)
		}
	})
}

func TestModelsAndRoot(t *testing.T) {
	h := router(t, nil, sim(t), nil)
	w := send(h, "GET", "/v1/models?limit=1000", "", "anthropic-version", "2023-06-01")
	var list struct {
		Data []struct {
			Type, ID string
		}
		HasMore bool `json:"has_more"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != 200 || len(list.Data) != 1 ||
		list.Data[0].ID != "claude-*" || list.Data[0].Type != "model" {
		t.Fatalf("got %d %s", w.Code, w.Body)
	}
	w = send(h, "GET", "/v1/models/claude-opus-5-5", "", "anthropic-version", "2023-06-01")
	if w.Code != 200 || gjsonType(w.Body.Bytes()) != "model" || !strings.Contains(w.Body.String(), `"id":"claude-opus-5-5"`) {
		t.Errorf("one model with anthropic-version: %d %s", w.Code, w.Body)
	}
	if w := send(h, "GET", "/v1/models", ""); !strings.Contains(w.Body.String(), `"object":"list"`) {
		t.Errorf("without anthropic-version: %s, want OpenAI's list", w.Body)
	}
	if w := send(h, "HEAD", "/", ""); w.Code != 200 {
		t.Errorf("HEAD / got %d", w.Code)
	}
	w = send(h, "GET", "/v1/nope", "", "anthropic-version", "2023-06-01")
	if typ, _ := anthropicError(t, w); w.Code != 404 || typ != "not_found_error" {
		t.Errorf("unknown route with anthropic-version: %d %s", w.Code, typ)
	}
}

// gjsonType is a document's top-level "type".
func gjsonType(b []byte) string {
	var v struct{ Type string }
	_ = json.Unmarshal(b, &v)
	return v.Type
}

// TestAffinity: a Messages conversation stays on the provider that served
// it last, identified by Claude Code's session header, metadata.user_id,
// or its opening (docs/ARCHITECTURE.md, "Affinity").
func TestAffinity(t *testing.T) {
	a, b := &native{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		return &provider.Response{Body: []byte(nativeAnswer)}, nil
	}}, &native{}
	b.do = a.do
	table, _ := route.NewTable([]route.ModelConfig{{Name: "claude-*", Targets: []route.Target{{Provider: "a", Model: "up-claude"}, {Provider: "b", Model: "up-claude"}}}})
	s, err := proxy.Open(routing.Options{Providers: []provider.Descriptor{{Name: "a", Type: "fake", Adapter: a}, {Name: "b", Type: "fake", Adapter: b}},
		Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second},
		Routing: policy.Config{Retry: policy.Retry{Config: backoff.Config{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Multiplier: 2}}, Affinity: affinity.Config{Enabled: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler(New(nil).Dialect())
	const (
		opening = `"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"Fix the bug in %d."}]}`
		turn    = `,{"role":"assistant","content":"Done."},{"role":"user","content":[{"type":"text","text":"Thanks.","cache_control":{"type":"ephemeral"}}]}`
	)
	body := func(c, turns int, extra string) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":64` + extra + `,` + strings.Replace(opening, "%d", strconv.Itoa(c), 1) + strings.Repeat(turn, turns-1) + `]}`
	}
	for _, tt := range []struct {
		name  string
		extra string
		hdr   []string
	}{
		{"claude code session", "", []string{"X-Claude-Code-Session-Id", "sess-%d"}},
		{"metadata.user_id", `,"metadata":{"user_id":"user_%d"}`, nil},
		{"opening", "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			homes := map[string]int{}
			for c := range 16 {
				var home string
				for n := 1; n <= 5; n++ {
					var hdr []string
					for _, v := range tt.hdr {
						hdr = append(hdr, strings.Replace(v, "%d", strconv.Itoa(c), 1))
					}
					w := send(h, "POST", "/v1/messages", body(c, n, strings.Replace(tt.extra, "%d", strconv.Itoa(c), 1)), hdr...)
					got := w.Header().Get("X-LLMRouter-Provider")
					if w.Code != 200 {
						t.Fatalf("conversation %d turn %d: %d %s", c, n, w.Code, w.Body)
					}
					if n == 1 {
						home = got
						homes[got]++
					} else if got != home {
						t.Errorf("conversation %d turn %d served by %s, want %s, where it was served last", c, n, got, home)
					}
				}
			}
			if homes["a"] == 0 || homes["b"] == 0 {
				t.Errorf("conversations' homes %v, want both providers", homes)
			}
		})
	}
}

// TestCheckComesFirst: a body the bounded check refuses is refused as the
// check refuses it (status, type, message: which limit), though the walk
// that checks it also reads the request and may meet a problem of the
// request's first: the check's answer comes first, as when it was a walk
// of its own.
func TestCheckComesFirst(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"model":7,`)
	for i := range jsonscan.MaxTopLevelKeys {
		fmt.Fprintf(&many, `"k%d":1,`, i)
	}
	many.WriteString(`"z":1}`)
	tests := []struct{ name, body string }{
		{"syntax after a bad model", `{"model":7,"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"x":[1,]}`},
		{"syntax after a bad message", `{"model":"claude-opus-5-5","max_tokens":5,"messages":[{"role":"robot","content":"hi"}],"x":tru}`},
		{"a missing comma", `{"model":"claude-opus-5-5" "max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{"trailing data", hello + `{}`},
		{"depth", `{"model":1,"x":` + strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1) + `}`},
		{"depth in messages", `{"model":"claude-opus-5-5","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"a","name":"f","input":{"a":` +
			strings.Repeat("[", jsonscan.MaxDepth) + strings.Repeat("]", jsonscan.MaxDepth) + `}}]}]}`},
		{"a repeated key after a bad one", `{"model":7,"max_tokens":5,"model":"claude-opus-5-5","messages":[{"role":"user","content":"hi"}]}`},
		{"a repeated key", `{"model":"claude-opus-5-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"mod\u0065l":"x"}`},
		{"too many keys", many.String()},
		{"not UTF-8", "{\"model\":7,\"system\":\"\xff\"}"},
		{"a control character", "{\"model\":7,\"system\":\"a\nb\"}"},
		{"not an object", `[{"model":"claude-opus-5-5"}]`},
		{"a string", `"hi"`},
		{"spaces", `   `},
	}
	h := router(t, nil, sim(t), nil)
	for _, tt := range tests {
		for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
			t.Run(tt.name+path, func(t *testing.T) {
				want := intake.Check([]byte(tt.body))
				if want == nil {
					t.Fatalf("the check takes %q", tt.body)
				}
				w := send(h, "POST", path, tt.body)
				typ, msg := anthropicError(t, w)
				if w.Code != want.Status || typ != want.Type || msg != want.Message {
					t.Errorf("got %d %s %q, want the check's %d %s %q", w.Code, typ, msg, want.Status, want.Type, want.Message)
				}
			})
		}
	}
}
