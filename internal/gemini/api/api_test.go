package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a scripted adapter serving op, recording what it was sent.
type fake struct {
	op    provider.Op
	calls atomic.Int32
	last  atomic.Pointer[provider.Request]
	do    func(req *provider.Request) (*provider.Response, error)
}

func (f *fake) Supports(op provider.Op) bool { return op == f.op }
func (f *fake) Do(_ context.Context, req *provider.Request) (*provider.Response, error) {
	f.calls.Add(1)
	cp := *req
	cp.Body = req.AppendBody(nil)
	f.last.Store(&cp)
	return f.do(req)
}

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

const geminiAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"text":"native hi"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"modelVersion":"up"}`

func nativeFake(events []string, end error) *fake {
	return &fake{op: provider.OpGemini, do: func(req *provider.Request) (*provider.Response, error) {
		if req.Stream {
			return &provider.Response{Stream: &stream{p: events, end: end}}, nil
		}
		return &provider.Response{Body: []byte(geminiAnswer)}, nil
	}}
}

func chatFake() *fake {
	return &fake{op: provider.OpChat, do: func(req *provider.Request) (*provider.Response, error) {
		if req.Stream {
			return &provider.Response{Stream: &stream{p: []string{
				`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"chat "}}]}`,
				`{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`,
				`{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`}, end: io.EOF}}, nil
		}
		return &provider.Response{Body: []byte(`{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"chat hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)}, nil
	}}
}

// router serves the Gemini dialect: "gemini-*" on tier 0 targets tier0,
// then tier 1 targets tier1 (when given); keys are the client keys.
func router(t testing.TB, tier0, tier1 provider.Adapter) http.Handler {
	t.Helper()
	targets := []route.Target{{Provider: "p0", Model: "gemini-up", Tier: 0}}
	ps := []provider.Descriptor{{Name: "p0", Type: "fake", Adapter: tier0}}
	if tier1 != nil {
		targets = append(targets, route.Target{Provider: "p1", Model: "other-up", Tier: 1})
		ps = append(ps, provider.Descriptor{Name: "p1", Type: "fake", Adapter: tier1})
	}
	table, err := route.NewTable([]route.ModelConfig{{Name: "gemini-*", Targets: targets}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := proxy.Open(routing.Options{Providers: ps, Models: table, ClientKeys: []string{"k1"},
		Limits:  limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second},
		Routing: policy.Config{Retry: policy.Retry{Config: backoff.Config{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Multiplier: 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s.Handler(New(nil).Dialect())
}

func do(t *testing.T, h http.Handler, method, target, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const hello = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

// TestHostileNothingUpstream: a hostile body is a 400 in Google's shape
// and no provider is called, native or translated.
func TestHostileNothingUpstream(t *testing.T) {
	nat, ch := nativeFake(nil, io.EOF), chatFake()
	h := router(t, nat, ch)
	for _, body := range []string{
		`{"contents":` + strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000) + `}`,
		`{"contents":[{"parts":[{"text":"` + strings.Repeat("x", 2<<20) + `"}]}]}`,
		`{"contents":[{"parts":[{"text":1}]}]}`,
		`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":1e999}}`,
		`{"contents":[{"parts":[{"functionCall":{"name":"a","args":"x"}}]}]}`,
		`not json`,
	} {
		w := do(t, h, "POST", "/v1beta/models/gemini-x:generateContent", body, "X-Goog-Api-Key", "k1")
		if w.Code/100 != 4 || gjson.Get(w.Body.String(), "error.status").Str == "" || gjson.Get(w.Body.String(), "error.code").Int() != int64(w.Code) {
			t.Errorf("%.40s…: %d %s, want a 4xx in Google's shape", body, w.Code, w.Body)
		}
	}
	if n, c := nat.calls.Load(), ch.calls.Load(); n+c != 0 {
		t.Errorf("providers called %d+%d times, want none", n, c)
	}
}

// TestRoutes: the key from x-goog-api-key or ?key=, the methods, the
// model list, both stream forms, the failover from a native target to a
// translated one.
func TestRoutes(t *testing.T) {
	nat := nativeFake([]string{
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"b"}]},"finishReason":"STOP","index":0}]}`}, io.EOF)
	h := router(t, nat, chatFake())
	gen := "/v1beta/models/gemini-x:generateContent"
	for _, tc := range []struct {
		name, method, target, body string
		header                     []string
		status                     int
		want                       string // a substring of the answer
	}{
		{"no key", "POST", gen, hello, nil, 401, `"status":"UNAUTHENTICATED"`},
		{"wrong key", "POST", gen, hello, []string{"X-Goog-Api-Key", "nope"}, 401, `"status":"UNAUTHENTICATED"`},
		{"header key", "POST", gen, hello, []string{"X-Goog-Api-Key", "k1"}, 200, `"native hi"`},
		{"query key", "POST", gen + "?key=k1", hello, nil, 200, `"native hi"`},
		{"v1", "POST", "/v1/models/gemini-x:generateContent?key=k1", hello, nil, 200, `"native hi"`},
		{"unknown model", "POST", "/v1beta/models/claude-x:generateContent?key=k1", hello, nil, 404, `"status":"NOT_FOUND"`},
		{"unknown method", "POST", "/v1beta/models/gemini-x:embedContent?key=k1", hello, nil, 404, `"status":"NOT_FOUND"`},
		{"sse", "POST", "/v1beta/models/gemini-x:streamGenerateContent?alt=sse&key=k1", hello, nil, 200,
			"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"a\"}]},\"index\":0}]}\n\n"},
		{"array", "POST", "/v1beta/models/gemini-x:streamGenerateContent?key=k1", hello, nil, 200,
			"[{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"a\"}]},\"index\":0}]},\r\n{"},
		{"count", "POST", "/v1beta/models/gemini-x:countTokens?key=k1", hello, nil, 200, `{"totalTokens":`},
		{"list", "GET", "/v1beta/models?key=k1", "", nil, 200, `{"models":[{"name":"models/gemini-*"`},
		{"one", "GET", "/v1beta/models/gemini-2.5-flash", "", []string{"X-Goog-Api-Key", "k1"}, 200, `{"name":"models/gemini-2.5-flash"`},
		{"openai list in Google's shape", "GET", "/v1/models", "", []string{"X-Goog-Api-Key", "k1"}, 200, `{"models":[`},
		{"unknown path", "GET", "/v1beta/files?key=k1", "", nil, 404, `"status":"NOT_FOUND"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, h, tc.method, tc.target, tc.body, tc.header...)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("%d %q, want %d with %q", w.Code, w.Body, tc.status, tc.want)
			}
		})
	}
	if ct := do(t, h, "POST", "/v1beta/models/gemini-x:streamGenerateContent?key=k1", hello).Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("array form Content-Type %q", ct)
	}
	if got := nat.last.Load(); got == nil || got.Model != "gemini-up" || string(got.Body) != hello {
		t.Errorf("native request %+v, want the client's body to gemini-up", got)
	}

	// The native target down: the translated one answers, in Gemini's
	// shape.
	down := &fake{op: provider.OpGemini, do: func(*provider.Request) (*provider.Response, error) {
		return nil, &outcome.Error{Kind: outcome.Overloaded, Status: 503, Message: "overloaded"}
	}}
	ch := chatFake()
	h = router(t, down, ch)
	w := do(t, h, "POST", gen+"?key=k1", hello)
	if w.Code != 200 || gjson.Get(w.Body.String(), "candidates.0.content.parts.0.text").Str != "chat hi" ||
		gjson.Get(w.Body.String(), "usageMetadata.totalTokenCount").Int() != 5 {
		t.Errorf("failover answer %d %s", w.Code, w.Body)
	}
	if got := ch.last.Load(); got == nil || got.Op != provider.OpChat || gjson.GetBytes(got.Body, "messages.0.content").Str != "hi" {
		t.Errorf("translated request %+v", got)
	}
	w = do(t, h, "POST", "/v1beta/models/gemini-x:streamGenerateContent?alt=sse&key=k1", hello)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"finishReason":"STOP"`) || !strings.Contains(w.Body.String(), `"usageMetadata"`) {
		t.Errorf("translated stream %d %s", w.Code, w.Body)
	}
}

// TestFailAfterCommit: a stream cut after its first event ends with one
// error element, in each form.
func TestFailAfterCommit(t *testing.T) {
	cut := &outcome.Error{Kind: outcome.Overloaded, Message: "gone"}
	for _, tc := range []struct{ target, want string }{
		{"/v1beta/models/gemini-x:streamGenerateContent?alt=sse&key=k1", "data: {\"error\":{\"code\":503,"},
		{"/v1beta/models/gemini-x:streamGenerateContent?key=k1", ",\r\n{\"error\":{\"code\":503,"},
	} {
		h := router(t, nativeFake([]string{`{"candidates":[{"content":{"role":"model","parts":[{"text":"a"}]},"index":0}]}`}, cut), nil)
		w := do(t, h, "POST", tc.target, hello)
		body := w.Body.String()
		if !strings.Contains(body, tc.want) || !strings.Contains(body, `"status":"UNAVAILABLE"}}`) {
			t.Errorf("%s: %q, want the error element %q", tc.target, body, tc.want)
		}
		if strings.HasPrefix(body, "[") && !strings.HasSuffix(body, "]\n") {
			t.Errorf("array not closed: %q", body)
		}
	}
}
