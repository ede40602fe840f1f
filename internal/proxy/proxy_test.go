package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a scripted adapter.
type fake struct {
	calls atomic.Int32
	ops   map[provider.Op]bool // nil: all
	do    func(ctx context.Context, req *provider.Request) (*provider.Response, error)
	last  atomic.Pointer[provider.Request]
}

func (f *fake) Supports(op provider.Op) bool { return f.ops == nil || f.ops[op] }
func (f *fake) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	f.calls.Add(1)
	cp := *req
	cp.Body = req.AppendBody(nil)
	f.last.Store(&cp)
	return f.do(ctx, req)
}

func ok(body string) func(context.Context, *provider.Request) (*provider.Response, error) {
	return func(context.Context, *provider.Request) (*provider.Response, error) {
		return &provider.Response{Body: []byte(body)}, nil
	}
}

func fail(kind outcome.Kind, status int, msg string) func(context.Context, *provider.Request) (*provider.Response, error) {
	return func(context.Context, *provider.Request) (*provider.Response, error) {
		return nil, &outcome.Error{Kind: kind, Status: status, Message: msg}
	}
}

// fakeStream yields payloads, then ends with end (io.EOF for a clean end).
// block > 0 makes Next wait for ctx before yielding payload number block-1.
type fakeStream struct {
	ctx      context.Context
	payloads []string
	end      error
	block    int
	i        int
	closed   atomic.Bool
}

func (s *fakeStream) Next() ([]byte, error) {
	if s.block > 0 && s.i == s.block-1 {
		<-s.ctx.Done()
		return nil, provider.TransportError(s.ctx, "fake stream", s.ctx.Err())
	}
	if s.i < len(s.payloads) {
		s.i++
		return []byte(s.payloads[s.i-1]), nil
	}
	return nil, s.end
}
func (s *fakeStream) Usage() outcome.Usage { return outcome.Usage{} }
func (s *fakeStream) Close() error         { s.closed.Store(true); return nil }

func streamOf(end error, block int, payloads ...string) func(context.Context, *provider.Request) (*provider.Response, error) {
	return func(ctx context.Context, _ *provider.Request) (*provider.Response, error) {
		return &provider.Response{Stream: &fakeStream{ctx: ctx, payloads: payloads, end: end, block: block}}, nil
	}
}

const (
	roleChunk = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	textChunk = `{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
	stopChunk = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

type target struct {
	name string
	tier int
	a    *fake
	cfg  provider.Config
}

func newServer(t testing.TB, limits limits.Config, keys []string, targets ...target) *Server {
	t.Helper()
	if limits.MaxBodyBytes == 0 {
		limits.MaxBodyBytes = 1 << 20
	}
	if limits.RequestTimeout == 0 {
		limits.RequestTimeout = 10 * time.Second
	}
	mc := route.ModelConfig{Name: "m"}
	var provs []provider.Descriptor
	for _, tg := range targets {
		provs = append(provs, provider.Descriptor{Name: tg.name, Type: "fake", Adapter: tg.a, Config: tg.cfg})
		mc.Targets = append(mc.Targets, route.Target{Provider: tg.name, Model: tg.name + "-model", Tier: tg.tier})
	}
	table, err := route.NewTable([]route.ModelConfig{mc})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(routing.Options{Providers: provs, Models: table, Limits: limits, ClientKeys: keys, Routing: policy.Config{Retry: policy.Retry{Config: fastRetry}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// fastRetry keeps retry waits short so tests stay fast.
var fastRetry = backoff.Config{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Multiplier: 2, Jitter: 0.5}

type errBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func decodeErr(t testing.TB, b []byte) errBody {
	t.Helper()
	var e errBody
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an OpenAI-shaped error (%v): %s", err, b)
	}
	return e
}

func do(h http.Handler, method, path, ctype, body string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

func TestBadRequests(t *testing.T) {
	a := &fake{do: ok(`{}`)}
	s := newServer(t, limits.Config{MaxBodyBytes: 200}, nil, target{name: "p", a: a})
	h := s.Handler()
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 300) + `"}]}`
	tests := []struct {
		name, method, path, ctype, body string
		status                          int
		typ, code, param                string
	}{
		{"malformed json", "POST", "/v1/chat/completions", "application/json", `{"model":`, 400, "invalid_request_error", "invalid_request_error", ""},
		{"duplicate model", "POST", "/v1/chat/completions", "application/json", `{"model":"x","model":"m","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "model"},
		{"escaped duplicate", "POST", "/v1/chat/completions", "application/json", `{"model":"m","mod\u0065l":"x","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "model"},
		{"invalid utf-8", "POST", "/v1/chat/completions", "application/json", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", 400, "invalid_request_error", "invalid_request_error", ""},
		{"not an object", "POST", "/v1/chat/completions", "application/json", `[1,2]`, 400, "invalid_request_error", "invalid_request_error", ""},
		{"empty body", "POST", "/v1/chat/completions", "application/json", ``, 400, "invalid_request_error", "invalid_request_error", ""},
		{"missing model", "POST", "/v1/chat/completions", "application/json", `{"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "model"},
		{"model not a string", "POST", "/v1/chat/completions", "application/json", `{"model":7,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "model"},
		{"messages not an array", "POST", "/v1/chat/completions", "application/json", `{"model":"m","messages":"hi"}`, 400, "invalid_request_error", "invalid_request_error", "messages"},
		{"messages missing", "POST", "/v1/chat/completions", "application/json", `{"model":"m"}`, 400, "invalid_request_error", "invalid_request_error", "messages"},
		{"messages empty", "POST", "/v1/chat/completions", "application/json", `{"model":"m","messages":[]}`, 400, "invalid_request_error", "invalid_request_error", "messages"},
		{"message without role", "POST", "/v1/chat/completions", "application/json", `{"model":"m","messages":[{"content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "messages"},
		{"stream not a bool", "POST", "/v1/chat/completions", "application/json", `{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "stream"},
		{"include_usage not a bool", "POST", "/v1/chat/completions", "application/json", `{"model":"m","stream_options":{"include_usage":1},"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "stream_options.include_usage"},
		{"max_tokens not an int", "POST", "/v1/chat/completions", "application/json", `{"model":"m","max_tokens":"9","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "max_tokens"},
		// Issue 31, finding 2: an absurd or infinite completion budget made
		// the cost estimate saturate and wrap a key's budget.
		{"max_tokens 9e18", "POST", "/v1/chat/completions", "application/json", `{"model":"m","max_tokens":9e18,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "max_tokens"},
		{"max_tokens 1e999", "POST", "/v1/chat/completions", "application/json", `{"model":"m","max_tokens":1e999,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "max_tokens"},
		{"max_completion_tokens 2^31+1", "POST", "/v1/chat/completions", "application/json", `{"model":"m","max_completion_tokens":2147483649,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "invalid_request_error", "max_completion_tokens"},
		{"completions max_tokens 1e999", "POST", "/v1/completions", "application/json", `{"model":"m","max_tokens":1e999,"prompt":"x"}`, 400, "invalid_request_error", "invalid_request_error", "max_tokens"},
		{"completions max_tokens -1e999", "POST", "/v1/completions", "application/json", `{"model":"m","max_tokens":-1e999,"prompt":"x"}`, 400, "invalid_request_error", "invalid_request_error", "max_tokens"},
		{"unknown model", "POST", "/v1/chat/completions", "application/json", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "invalid_request_error", "model_not_found", "model"},
		{"body over limit", "POST", "/v1/chat/completions", "application/json", big, 413, "invalid_request_error", "request_too_large", ""},
		{"wrong content type", "POST", "/v1/chat/completions", "text/plain", chatBody, 400, "invalid_request_error", "invalid_request_error", ""},
		{"form content type", "POST", "/v1/chat/completions", "application/x-www-form-urlencoded", chatBody, 400, "invalid_request_error", "invalid_request_error", ""},
		{"embeddings input missing", "POST", "/v1/embeddings", "application/json", `{"model":"m"}`, 400, "invalid_request_error", "invalid_request_error", "input"},
		{"embeddings input wrong type", "POST", "/v1/embeddings", "application/json", `{"model":"m","input":{}}`, 400, "invalid_request_error", "invalid_request_error", "input"},
		{"embeddings stream", "POST", "/v1/embeddings", "application/json", `{"model":"m","input":"x","stream":true}`, 400, "invalid_request_error", "invalid_request_error", "stream"},
		{"completions prompt missing", "POST", "/v1/completions", "application/json", `{"model":"m"}`, 400, "invalid_request_error", "invalid_request_error", "prompt"},
		{"GET on a POST route", "GET", "/v1/chat/completions", "", "", 405, "invalid_request_error", "method_not_allowed", ""},
		{"unknown route", "POST", "/v1/nope", "application/json", chatBody, 404, "invalid_request_error", "not_found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(h, tt.method, tt.path, tt.ctype, tt.body)
			if w.Code != tt.status {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.status, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			e := decodeErr(t, w.Body.Bytes())
			if e.Error.Type != tt.typ || e.Error.Code == nil || *e.Error.Code != tt.code {
				t.Errorf("type/code = %s/%v, want %s/%s", e.Error.Type, e.Error.Code, tt.typ, tt.code)
			}
			gotParam := ""
			if e.Error.Param != nil {
				gotParam = *e.Error.Param
			}
			if gotParam != tt.param {
				t.Errorf("param = %q, want %q", gotParam, tt.param)
			}
			if w.Header().Get("X-Request-ID") == "" {
				t.Error("no X-Request-ID")
			}
		})
	}
	if n := a.calls.Load(); n != 0 {
		t.Errorf("bad requests reached the provider %d times, want 0", n)
	}
}

func TestAuth(t *testing.T) {
	a := &fake{do: ok(`{"ok":true}`)}
	s := newServer(t, limits.Config{}, []string{"k1", "k2"}, target{name: "p", a: a})
	h := s.Handler()
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"missing", "", 401}, {"wrong", "Bearer nope", 401}, {"no scheme", "k1", 401},
		{"first key", "Bearer k1", 200}, {"second key", "bearer k2", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := []string{}
			if tc.auth != "" {
				hdr = []string{"Authorization", tc.auth}
			}
			for _, path := range []string{"/v1/chat/completions", "/v1/models"} {
				method, body := "POST", chatBody
				if path == "/v1/models" {
					method, body = "GET", ""
				}
				w := do(h, method, path, "application/json", body, hdr...)
				if w.Code != tc.want {
					t.Errorf("%s: status = %d, want %d", path, w.Code, tc.want)
				}
				if tc.want == 401 {
					if e := decodeErr(t, w.Body.Bytes()); e.Error.Type != "authentication_error" {
						t.Errorf("type = %s", e.Error.Type)
					}
				}
			}
		})
	}
	if got := a.last.Load(); got != nil && strings.Contains(string(got.Body), "k1") {
		t.Error("client key forwarded in body")
	}
}

func TestNonStreamSuccessPassesBodyThrough(t *testing.T) {
	upstream := `{"id":"x","object":"chat.completion","choices":[]}`
	a := &fake{do: ok(upstream)}
	s := newServer(t, limits.Config{}, nil, target{name: "p", a: a})
	w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json",
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.2}`, "X-Request-ID", "abc-123")
	if w.Code != 200 || w.Body.String() != upstream {
		t.Fatalf("got %d %s", w.Code, w.Body)
	}
	h := w.Header()
	for k, want := range map[string]string{
		"X-LLMRouter-Provider": "p", "X-LLMRouter-Model": "p-model", "X-LLMRouter-Tier": "0",
		"X-LLMRouter-Attempts": "1", "X-Request-ID": "abc-123", "X-LLMRouter-Degraded": "",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if h.Get("X-LLMRouter-Overhead-Ms") == "" {
		t.Error("no X-LLMRouter-Overhead-Ms")
	}
	sent := a.last.Load()
	if want := `{"model":"p-model","messages":[{"role":"user","content":"hi"}],"temperature":0.2}`; string(sent.Body) != want {
		t.Errorf("forwarded body %s, want %s", sent.Body, want)
	}
}

func TestFailover(t *testing.T) {
	tests := []struct {
		name         string
		first        func(context.Context, *provider.Request) (*provider.Response, error)
		wantStatus   int
		wantProvider string
		wantSecond   int32
	}{
		{"overloaded fails over", fail(outcome.Overloaded, 503, "busy"), 200, "b", 1},
		{"server error fails over", fail(outcome.ServerError, 500, "boom"), 200, "b", 1},
		{"network fails over", fail(outcome.Network, 0, "reset"), 200, "b", 1},
		{"auth fails over", fail(outcome.Auth, 401, "bad key"), 200, "b", 1},
		{"client error passes through", fail(outcome.ClientError, 400, "context too long"), 400, "a", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := &fake{do: tt.first}, &fake{do: ok(`{"ok":1}`)}
			s := newServer(t, limits.Config{}, nil, target{name: "a", a: a}, target{name: "b", tier: 1, a: b})
			w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body)
			}
			if got := w.Header().Get("X-LLMRouter-Provider"); got != tt.wantProvider {
				t.Errorf("provider = %q, want %q", got, tt.wantProvider)
			}
			if got := b.calls.Load(); got != tt.wantSecond {
				t.Errorf("second provider calls = %d, want %d", got, tt.wantSecond)
			}
			if tt.wantStatus == 200 {
				if w.Header().Get("X-LLMRouter-Degraded") != "true" || w.Header().Get("X-LLMRouter-Attempts") != "2" {
					t.Errorf("degraded=%q attempts=%q", w.Header().Get("X-LLMRouter-Degraded"), w.Header().Get("X-LLMRouter-Attempts"))
				}
			} else if e := decodeErr(t, w.Body.Bytes()); e.Error.Message != "context too long" {
				t.Errorf("message = %q", e.Error.Message)
			}
		})
	}
}

func TestAllFailed(t *testing.T) {
	t.Run("502 lists attempts", func(t *testing.T) {
		s := newServer(t, limits.Config{}, nil,
			target{name: "a", a: &fake{do: fail(outcome.Overloaded, 529, "overloaded")}},
			target{name: "b", a: &fake{do: fail(outcome.Network, 0, "connection refused")}})
		w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody)
		if w.Code != 502 {
			t.Fatalf("status %d", w.Code)
		}
		e := decodeErr(t, w.Body.Bytes())
		for _, want := range []string{"a status 529 overloaded", "b network"} {
			if !strings.Contains(e.Error.Message, want) {
				t.Errorf("message %q lacks %q", e.Error.Message, want)
			}
		}
		if *e.Error.Code != "upstream_error" || e.Error.Type != "server_error" {
			t.Errorf("code/type %v/%s", *e.Error.Code, e.Error.Type)
		}
	})
	t.Run("429 when all rate limited", func(t *testing.T) {
		rl := func(d time.Duration) func(context.Context, *provider.Request) (*provider.Response, error) {
			return func(context.Context, *provider.Request) (*provider.Response, error) {
				return nil, &outcome.Error{Kind: outcome.RateLimited, Status: 429, RetryAfter: d}
			}
		}
		s := newServer(t, limits.Config{RequestTimeout: time.Second}, nil,
			target{name: "a", a: &fake{do: rl(5 * time.Second)}}, target{name: "b", a: &fake{do: rl(1500 * time.Millisecond)}})
		w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody)
		if w.Code != 429 || w.Header().Get("Retry-After") != "2" {
			t.Fatalf("status %d Retry-After %q, want 429 and 2", w.Code, w.Header().Get("Retry-After"))
		}
		if e := decodeErr(t, w.Body.Bytes()); e.Error.Type != "rate_limit_error" || *e.Error.Code != "rate_limit_exceeded" {
			t.Errorf("type/code %s/%v", e.Error.Type, *e.Error.Code)
		}
	})
	t.Run("unsupported op", func(t *testing.T) {
		s := newServer(t, limits.Config{}, nil, target{name: "a", a: &fake{ops: map[provider.Op]bool{provider.OpChat: true}, do: ok("{}")}})
		w := do(s.Handler(), "POST", "/v1/embeddings", "application/json", `{"model":"m","input":"x"}`)
		if w.Code != 400 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
	t.Run("504 at the request deadline", func(t *testing.T) {
		hang := func(ctx context.Context, _ *provider.Request) (*provider.Response, error) {
			<-ctx.Done()
			return nil, provider.TransportError(ctx, "hanging", ctx.Err())
		}
		s := newServer(t, limits.Config{RequestTimeout: 50 * time.Millisecond}, nil, target{name: "a", a: &fake{do: hang}})
		w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody)
		if w.Code != 504 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if e := decodeErr(t, w.Body.Bytes()); *e.Error.Code != "timeout" {
			t.Errorf("code %v", *e.Error.Code)
		}
	})
}

// readSSE returns the data payloads of an event stream.
func readSSE(t testing.TB, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

const streamBody = `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestStream(t *testing.T) {
	cut := &outcome.Error{Kind: outcome.Network, Message: "connection reset"}
	tests := []struct {
		name      string
		first     func(context.Context, *provider.Request) (*provider.Response, error)
		cfg       provider.Config
		want      []string
		wantB     int32
		wantFinal string
	}{
		{"clean stream", streamOf(io.EOF, 0, roleChunk, textChunk, stopChunk), provider.Config{}, []string{roleChunk, textChunk, stopChunk, "[DONE]"}, 0, ""},
		{"dies before content fails over", streamOf(cut, 0, roleChunk), provider.Config{}, []string{roleChunk, textChunk, stopChunk, "[DONE]"}, 1, ""},
		{"first token timeout fails over", streamOf(io.EOF, 2, roleChunk, textChunk), provider.Config{FirstTokenTimeout: 30 * time.Millisecond}, []string{roleChunk, textChunk, stopChunk, "[DONE]"}, 1, ""},
		{"cut after commit ends with one error event", streamOf(cut, 0, roleChunk, textChunk), provider.Config{}, []string{roleChunk, textChunk}, 0, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &fake{do: tt.first}
			b := &fake{do: streamOf(io.EOF, 0, roleChunk, textChunk, stopChunk)}
			s := newServer(t, limits.Config{}, nil, target{name: "a", a: a, cfg: tt.cfg}, target{name: "b", tier: 1, a: b})
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(streamBody))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			got := readSSE(t, resp.Body)
			if tt.wantFinal == "error" {
				if len(got) != len(tt.want)+1 {
					t.Fatalf("events %q, want %q plus one error event", got, tt.want)
				}
				last := got[len(got)-1]
				decodeErr(t, []byte(last))
				got = got[:len(got)-1]
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if n := b.calls.Load(); n != tt.wantB {
				t.Errorf("second provider calls = %d, want %d", n, tt.wantB)
			}
		})
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	upstreamDone := make(chan error, 1)
	a := &fake{do: func(ctx context.Context, _ *provider.Request) (*provider.Response, error) {
		st := &fakeStream{ctx: ctx, payloads: []string{roleChunk, textChunk}, block: 3}
		go func() { <-ctx.Done(); upstreamDone <- context.Cause(ctx) }()
		return &provider.Response{Stream: st}, nil
	}}
	s := newServer(t, limits.Config{}, nil, target{name: "a", a: a})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(streamBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // the first event arrived: committed
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case cause := <-upstreamDone:
		if !errors.Is(cause, context.Canceled) {
			t.Errorf("upstream context ended with %v, want context.Canceled", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not canceled after the client left")
	}
}

func TestModels(t *testing.T) {
	s := newServer(t, limits.Config{}, nil, target{name: "a", a: &fake{do: ok("{}")}})
	w := do(s.Handler(), "GET", "/v1/models", "", "")
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object string
		} `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "m" {
		t.Fatalf("models: %v %s", err, w.Body)
	}
	if w := do(s.Handler(), "GET", "/v1/models/m", "", ""); w.Code != 200 || !bytes.Contains(w.Body.Bytes(), []byte(`"id":"m"`)) {
		t.Errorf("model m: %d %s", w.Code, w.Body)
	}
	if w := do(s.Handler(), "GET", "/v1/models/zz", "", ""); w.Code != 404 {
		t.Errorf("unknown model: %d", w.Code)
	}
}

// TestRetrySameProviderAfterBackoff: with one provider, a retryable
// failure is retried on it after the backoff, up to max_attempts.
func TestRetrySameProviderAfterBackoff(t *testing.T) {
	var n atomic.Int32
	a := &fake{do: func(context.Context, *provider.Request) (*provider.Response, error) {
		if n.Add(1) <= 2 {
			return nil, &outcome.Error{Kind: outcome.Overloaded, Status: 503, Message: "busy"}
		}
		return &provider.Response{Body: []byte(`{"ok":1}`)}, nil
	}}
	s := newServer(t, limits.Config{}, nil, target{name: "a", a: a})
	w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody)
	if w.Code != 200 || w.Header().Get("X-LLMRouter-Attempts") != "3" {
		t.Fatalf("status %d attempts %q, want 200 after 3 attempts: %s", w.Code, w.Header().Get("X-LLMRouter-Attempts"), w.Body)
	}
	// A fourth failure would exceed max_attempts: 502 after exactly 3.
	n.Store(-10)
	w = do(s.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody)
	if w.Code != 502 || w.Header().Get("X-LLMRouter-Attempts") != "3" {
		t.Errorf("status %d attempts %q, want 502 after 3", w.Code, w.Header().Get("X-LLMRouter-Attempts"))
	}
}

// TestLastAttemptKeptForFallbackTier: with more failing targets than
// attempts, the last attempt goes to the local fallback tier.
func TestLastAttemptKeptForFallbackTier(t *testing.T) {
	failing := func() *fake { return &fake{do: fail(outcome.ServerError, 500, "boom")} }
	a, b, c, local := failing(), failing(), failing(), &fake{do: ok(`{"ok":1}`)}
	s := newServer(t, limits.Config{}, nil,
		target{name: "a", a: a}, target{name: "b", a: b}, target{name: "c", tier: 1, a: c}, target{name: "local", tier: 2, a: local})
	w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody)
	if w.Code != 200 || w.Header().Get("X-LLMRouter-Provider") != "local" || w.Header().Get("X-LLMRouter-Attempts") != "3" {
		t.Fatalf("status %d via %q after %s attempts, want 200 via local after 3: %s",
			w.Code, w.Header().Get("X-LLMRouter-Provider"), w.Header().Get("X-LLMRouter-Attempts"), w.Body)
	}
	if c.calls.Load() != 0 {
		t.Errorf("tier 1 was tried (%d calls) although the last attempt was kept for the fallback", c.calls.Load())
	}
}

// TestBodyBudget: while one request holds the body budget (its provider
// has not answered), a body that would pass limits.body_buffer_bytes gets
// 503 with Retry-After and Connection: close, and nothing reaches the
// provider; once every request has ended the budget is whole again.
func TestBodyBudget(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	a := &fake{do: func(ctx context.Context, req *provider.Request) (*provider.Response, error) {
		if calls.Add(1) == 1 {
			close(held)
			<-release
		}
		return ok(`{"id":"x","object":"chat.completion","choices":[]}`)(ctx, req)
	}}
	// 1.5 KiB: one body's first buffer (1 KiB: the body declares less)
	// fits, a second does not.
	s := newServer(t, limits.Config{MaxBodyBytes: 3 << 9, BodyBufferBytes: 3 << 9}, nil, target{name: "p", a: a})
	h := s.Handler()
	post := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(chatBody)))
		return rec
	}
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- post() }()
	<-held
	rec := post()
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
		rec.Header().Get("Connection") != "close" || *decodeErr(t, rec.Body.Bytes()).Error.Code != "service_unavailable" {
		t.Errorf("over the budget: got %d Retry-After %q Connection %q %s, want 503, Retry-After 1, Connection: close",
			rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Connection"), rec.Body)
	}
	close(release)
	if rec := <-first; rec.Code != http.StatusOK {
		t.Errorf("the request holding the budget: got %d %s", rec.Code, rec.Body)
	}
	if rec := post(); rec.Code != http.StatusOK {
		t.Errorf("after the budget came back: got %d %s", rec.Code, rec.Body)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the provider got %d calls, want 2", n)
	}
	if got := s.bodies.Used(); got != 0 {
		t.Errorf("budget in use after every request ended: %d bytes, want 0", got)
	}
}

// TestStreamGivesBodyBack: once a stream is committed its attempts are
// over, and the client's body goes back to limits.body_buffer_bytes while
// the stream is still open (a long stream does not hold it for its life).
func TestStreamGivesBodyBack(t *testing.T) {
	s := newServer(t, limits.Config{}, nil, target{name: "p", a: &fake{do: streamOf(io.EOF, 2, textChunk, stopChunk)}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line of the stream = %q, %v", line, err)
	}
	// The stream is open (its provider holds the next chunk).
	if got := s.bodies.Used(); got != 0 {
		t.Errorf("body budget in use while the committed stream is open: %d bytes, want 0", got)
	}
}

// TestPatternModel: a requested name a `*` pattern matches is served by the
// pattern's targets under the provider's model, and counted under the
// pattern as configured, not the name the client sent.
func TestPatternModel(t *testing.T) {
	a := &fake{do: ok(`{"id":"x","object":"chat.completion","choices":[]}`)}
	table, err := route.NewTable([]route.ModelConfig{
		{Name: "claude-*", Targets: []route.Target{{Provider: "p", Model: "upstream-claude"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, err := Open(routing.Options{Providers: []provider.Descriptor{{Name: "p", Type: "fake", Adapter: a}}, Models: table,
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}, Routing: policy.Config{Retry: policy.Retry{Config: fastRetry}}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json",
		`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"hi"}]}`)
	if w.Code != 200 {
		t.Fatalf("got %d %s", w.Code, w.Body)
	}
	if sent := a.last.Load(); !bytes.Contains(sent.Body, []byte(`"model":"upstream-claude"`)) {
		t.Errorf("forwarded body %s, want model upstream-claude", sent.Body)
	}
	if w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json",
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`); w.Code != 404 {
		t.Errorf("a name outside the pattern: got %d, want 404", w.Code)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{} // model/code → count
	for _, mf := range mfs {
		if mf.GetName() != "llmrouter_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			got[l["model"]+"/"+l["code"]] += m.GetCounter().GetValue()
		}
	}
	if got["claude-*/200"] != 1 {
		t.Errorf("requests_total by model/code = %v, want claude-*/200 = 1", got)
	}
	for k := range got {
		if strings.HasPrefix(k, "claude-opus") {
			t.Errorf("requests_total has a label %q: the requested name leaked into metrics", k)
		}
	}
}
