package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// counting is a provider adapter that counts its calls.
type counting struct {
	provider.Adapter
	calls atomic.Int64
}

func (c *counting) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	c.calls.Add(1)
	return c.Adapter.Do(ctx, req)
}

// wsRig is the Responses API on a front door whose model m is served by
// a simulated provider (sim, its config) that counts its calls, with
// client key "sk-good" required, within lim, and a WebSocket idle
// timeout of idle.
type wsRig struct {
	srv  *httptest.Server
	api  *Server
	prov *counting
}

func newWSRig(t *testing.T, lim limits.Config, sim simulated.Config, idle time.Duration) *wsRig {
	t.Helper()
	a, err := simulated.New(provider.Config{Name: "sim"}, sim)
	if err != nil {
		t.Fatal(err)
	}
	prov := &counting{Adapter: a}
	table, err := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "sim", Model: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if lim.MaxBodyBytes == 0 {
		lim.MaxBodyBytes = 1 << 20
	}
	if lim.RequestTimeout == 0 {
		lim.RequestTimeout = 10 * time.Second
	}
	p, err := proxy.Open(routing.Options{Providers: []provider.Descriptor{{Name: "sim", Type: "simulated", Adapter: prov}}, Models: table,
		Limits: lim, ClientKeys: []string{"sk-good"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(s.Dialect()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
		srv.Close()
		p.Close()
	})
	return &wsRig{srv: srv, api: s, prov: prov}
}

// dial opens a WebSocket to the rig's GET /v1/responses with h's headers
// (the good key unless h names another).
func (g *wsRig) dial(t *testing.T, h http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if h == nil {
		h = http.Header{}
	}
	if _, ok := h["Authorization"]; !ok {
		h.Set("Authorization", "Bearer sk-good")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(g.srv.URL, "http")+"/v1/responses", &websocket.DialOptions{HTTPHeader: h})
	if c != nil {
		c.SetReadLimit(8 << 20)
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, resp, err
}

// send writes msg as a text message.
func send(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("sending: %v", err)
	}
}

// events reads text messages until a terminal one (response.completed,
// .incomplete, .failed, or an error event), and returns them all; err is
// the read that failed first.
func events(t *testing.T, c *websocket.Conn) ([]gjson.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []gjson.Result
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			return got, err
		}
		if typ != websocket.MessageText || !gjson.ValidBytes(b) {
			t.Fatalf("got a %v message that is not JSON: %q", typ, b)
		}
		e := gjson.ParseBytes(b)
		got = append(got, e)
		switch e.Get("type").Str {
		case "response.completed", "response.incomplete", "response.failed", "error":
			return got, nil
		}
	}
}

func last(evs []gjson.Result) gjson.Result {
	if len(evs) == 0 {
		return gjson.Result{}
	}
	return evs[len(evs)-1]
}

const create = `{"type":"response.create","model":"m","store":false,"input":[{"type":"message","role":"user","content":"Hello"}]}`

// TestWebSocketTurns: one connection serves a warm-up (no provider call),
// then turn after turn, each continuing the connection's latest response
// by previous_response_id with store: false, as Codex does; an id the
// connection does not hold is OpenAI's 400 as an error event, and the
// connection goes on.
func TestWebSocketTurns(t *testing.T) {
	g := newWSRig(t, limits.Config{}, simulated.Config{}, 0)
	c, _, err := g.dial(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, `{"type":"response.create","generate":false,"model":"m","store":false,"input":[{"type":"message","role":"developer","content":"Be brief."}]}`)
	evs, err := events(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Get("type").Str != "response.created" || last(evs).Get("type").Str != "response.completed" ||
		last(evs).Get("response.output.#").Int() != 0 {
		t.Fatalf("warm-up answered %v", evs)
	}
	if n := g.prov.calls.Load(); n != 0 {
		t.Errorf("the warm-up called the provider %d times", n)
	}
	prev := last(evs).Get("response.id").Str
	for turn := range 3 {
		send(t, c, `{"type":"response.create","model":"m","store":false,"stream":true,"previous_response_id":"`+prev+
			`","input":[{"type":"message","role":"user","content":"turn `+string(rune('A'+turn))+`"}]}`)
		evs, err := events(t, c)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		done := last(evs)
		if evs[0].Get("type").Str != "response.created" || done.Get("type").Str != "response.completed" ||
			done.Get("response.previous_response_id").Str != prev || done.Get("response.store").Raw != "false" {
			t.Fatalf("turn %d answered %s … %s", turn, evs[0].Raw, done.Raw)
		}
		if !strings.Contains(done.Get("response.output.0.content.0.text").Str, "turn "+string(rune('A'+turn))) {
			t.Errorf("turn %d: the answer %q does not echo the turn's message", turn, done.Get("response.output.0.content.0.text").Str)
		}
		prev = done.Get("response.id").Str
	}
	if n := g.prov.calls.Load(); n != 3 {
		t.Errorf("the provider got %d calls, want the 3 turns'", n)
	}
	send(t, c, `{"type":"response.create","model":"m","previous_response_id":"resp_other","input":"hi"}`)
	evs, err = events(t, c)
	if e := last(evs); err != nil || e.Get("type").Str != "error" || e.Get("status").Int() != 400 ||
		e.Get("error.code").Str != "previous_response_not_found" || e.Get("error.param").Str != "previous_response_id" {
		t.Fatalf("an unknown previous_response_id: %v %v", evs, err)
	}
	send(t, c, create)
	if evs, err := events(t, c); err != nil || last(evs).Get("type").Str != "response.completed" {
		t.Fatalf("the connection did not go on after an error event: %v %v", evs, err)
	}
}

// TestWebSocketRefused: an upgrade with an Origin header is 403 whatever
// the key, one without an accepted key 401, a GET that does not upgrade
// 426; none reaches a provider.
func TestWebSocketRefused(t *testing.T) {
	g := newWSRig(t, limits.Config{}, simulated.Config{}, 0)
	for _, tc := range []struct {
		name   string
		h      http.Header
		status int
		code   string
	}{
		{"origin with a good key", http.Header{"Origin": {"https://evil.example"}}, 403, "origin_not_allowed"},
		{"origin without a key", http.Header{"Origin": {"https://evil.example"}, "Authorization": {"Bearer sk-bad"}}, 403, "origin_not_allowed"},
		{"origin null", http.Header{"Origin": {"null"}}, 403, "origin_not_allowed"},
		{"same origin", http.Header{"Origin": {g.srv.URL}}, 403, "origin_not_allowed"},
		{"bad key", http.Header{"Authorization": {"Bearer sk-bad"}}, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp, err := g.dial(t, tc.h)
			if err == nil || resp == nil || resp.StatusCode != tc.status {
				t.Fatalf("dial: %v, response %v, want %d", err, resp, tc.status)
			}
		})
	}
	req, _ := http.NewRequest("GET", g.srv.URL+"/v1/responses", nil)
	req.Header.Set("Authorization", "Bearer sk-good")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Upgrade") != "websocket" {
		t.Errorf("a plain GET: %d, Upgrade %q", resp.StatusCode, resp.Header.Get("Upgrade"))
	}
	if n := g.prov.calls.Load(); n != 0 {
		t.Errorf("refused upgrades called the provider %d times", n)
	}
}

// TestWebSocketHostile: what a hostile or broken client sends ends in an
// error event on a connection that goes on, or a clean close with a
// status saying why, and never reaches the provider.
func TestWebSocketHostile(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	for _, tc := range []struct {
		name string
		// one of msg (text) and bin is sent
		msg    string
		bin    []byte
		close  websocket.StatusCode // 0: an error event, the connection kept
		code   string               // the error event's code or param
		status int                  // the error event's status; 0 means 400
	}{
		{name: "not JSON", msg: `{"type":"response.create",`, code: ""},
		{name: "deep nesting", msg: `{"type":"response.create","model":"m","input":` + deep + `}`},
		{name: "no type", msg: `{"model":"m","input":"hi"}`, code: "type"},
		{name: "another type", msg: `{"type":"session.update","model":"m"}`, code: "type"},
		{name: "generate not a boolean", msg: `{"type":"response.create","generate":"no","model":"m","input":"hi"}`, code: "generate"},
		{name: "unknown model", msg: `{"type":"response.create","model":"nope","input":"hi"}`, code: "model_not_found", status: 404},
		{name: "a JSON array", msg: `[1,2]`},
		{name: "too large", msg: `{"type":"response.create","model":"m","input":"` + strings.Repeat("x", 70<<10) + `"}`, close: websocket.StatusMessageTooBig},
		{name: "binary", bin: []byte(create), close: websocket.StatusUnsupportedData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newWSRig(t, limits.Config{MaxBodyBytes: 64 << 10}, simulated.Config{}, 0)
			c, _, err := g.dial(t, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if tc.bin != nil {
				err = c.Write(ctx, websocket.MessageBinary, tc.bin)
			} else {
				err = c.Write(ctx, websocket.MessageText, []byte(tc.msg))
			}
			if err != nil && tc.close == 0 {
				t.Fatal(err)
			}
			evs, err := events(t, c)
			e := last(evs)
			if tc.close != 0 {
				if err == nil {
					_, _, err = c.Read(ctx)
				}
				if websocket.CloseStatus(err) != tc.close {
					t.Fatalf("got %v, err %v; want a close with %v", evs, err, tc.close)
				}
				if tc.close == websocket.StatusMessageTooBig && (e.Get("status").Int() != 413 || e.Get("type").Str != "error") {
					t.Errorf("before the close: %v, want a 413 error event", evs)
				}
			} else {
				if tc.status == 0 {
					tc.status = 400
				}
				if err != nil || e.Get("type").Str != "error" || e.Get("status").Int() != int64(tc.status) {
					t.Fatalf("got %v, err %v; want a %d error event", evs, err, tc.status)
				}
				if tc.code != "" && e.Get("error.param").Str != tc.code && e.Get("error.code").Str != tc.code {
					t.Errorf("error %s, want %q named", e.Raw, tc.code)
				}
				send(t, c, create)
				if evs, err := events(t, c); err != nil || last(evs).Get("type").Str != "response.completed" {
					t.Errorf("the connection did not go on: %v %v", evs, err)
				}
			}
			if n := g.prov.calls.Load(); n > 1 || n == 1 && tc.close != 0 {
				t.Errorf("the provider got %d calls, want the good message's alone", n)
			}
		})
	}
}

// TestWebSocketStalledClient: a client that sends a message and never
// reads is cut after limits.client_write_timeout, and the provider's
// stream with it.
func TestWebSocketStalledClient(t *testing.T) {
	g := newWSRig(t, limits.Config{ClientWriteTimeout: 200 * time.Millisecond},
		simulated.Config{Reply: strings.Repeat("a long answer ", 200000), TokenInterval: 0}, 0)
	c, _, err := g.dial(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Counted before the upgrade was answered: Wait may start now.
	closed := make(chan struct{})
	go func() { g.api.conns.Wait(); close(closed) }()
	send(t, c, create)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection of a client that never reads is still open after 10s")
	}
	if _, err := events(t, c); err == nil {
		t.Error("the stream went on to its end for a client that never read")
	}
}

// TestWebSocketIdleAndDrain: a connection idle past its timeout is closed
// normally; at shutdown an idle one is closed going away, and no new
// upgrade is taken.
func TestWebSocketIdleAndDrain(t *testing.T) {
	g := newWSRig(t, limits.Config{}, simulated.Config{}, 100*time.Millisecond)
	c, _, err := g.dial(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events(t, c); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("an idle connection: %v, want a normal close", err)
	}

	g = newWSRig(t, limits.Config{}, simulated.Config{}, time.Minute)
	c, _, err = g.dial(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, create)
	if _, err := events(t, c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() { // the client reads on: the close handshake completes
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	}()
	if err := g.api.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, resp, err := g.dial(t, nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("an upgrade while draining: %v %v, want 503", resp, err)
	}
}

// TestDecodeMessage: a response.create becomes a POST body (type and
// generate out, stream true), the message left as it was.
func TestDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		msg, body string
		warm      bool
		err       string
	}{
		{msg: `{"type":"response.create","model":"m","input":"hi"}`, body: `{"model":"m","input":"hi","stream":true}`},
		{msg: `{"type":"response.create","generate":false,"model":"m","stream":true}`, body: `{"model":"m","stream":true}`, warm: true},
		{msg: `{"type":"response.create","generate":true,"stream":false}`, body: `{"stream":true}`},
		{msg: `{"type":"response.cancel"}`, err: "unsupported message type"},
		{msg: `{"type":1}`, err: "unsupported message type"},
		{msg: `{}`, err: "has no type"},
		{msg: `{"type":"response.create","generate":null}`, err: "generate must be a boolean"},
		{msg: `{"type":"response.create"`, err: "JSON"},
	} {
		msg := []byte(tc.msg)
		body, warm, aerr := decodeMessage(msg)
		switch {
		case tc.err != "":
			if aerr == nil || !strings.Contains(aerr.Message, tc.err) {
				t.Errorf("%s: %v, want an error saying %q", tc.msg, aerr, tc.err)
			}
		case aerr != nil:
			t.Errorf("%s: %v", tc.msg, aerr)
		case string(body) != tc.body || warm != tc.warm:
			t.Errorf("%s: %s warm %v, want %s warm %v", tc.msg, body, warm, tc.body, tc.warm)
		}
		if string(msg) != tc.msg {
			t.Errorf("the message was changed: %s", msg)
		}
	}
}

// FuzzDecodeMessage: no message panics the decoding, and what it
// accepts is a JSON object with stream true and no type.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(create))
	f.Add([]byte(`{"type":"response.create","generate":false,"model":"m"}`))
	f.Add([]byte(`{"type":"response.create","type":"x","stream":false}`))
	f.Add([]byte(`{"type":"response.create","a":[[[[{"b":"\u0000"}]]]]}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		body, _, aerr := decodeMessage(msg)
		if aerr != nil {
			if aerr.Status != http.StatusBadRequest && aerr.Status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d", aerr.Status)
			}
			return
		}
		if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() || gjson.GetBytes(body, "stream").Type != gjson.True {
			t.Fatalf("accepted %q as %q", msg, body)
		}
	})
}

// TestFrames: the answer writer's bytes become messages: events split
// however they are written, an error answer one error event, a whole
// Response its events; a send past its deadline fails as a write
// timeout.
func TestFrames(t *testing.T) {
	var got []string
	sendTo := func(_ context.Context, b []byte) error { got = append(got, string(b)); return nil }
	f := newFrames(context.Background(), sendTo, newMsgBody(strings.NewReader(""), func() {}))
	f.Header().Set("Content-Type", "text/event-stream")
	f.WriteHeader(200)
	for _, w := range []string{"event: a\nda", "ta: {\"type\":\"a\"}\n", "\n: comment\n\nevent: b\r\ndata: {\"type\":", "\"b\"}\r\n\r\n", "data: {\"x\":1}\n\n"} {
		if _, err := f.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.finish(); err != nil || strings.Join(got, "|") != `{"type":"a"}|{"type":"b"}|{"x":1}` {
		t.Errorf("events: %q %v", got, err)
	}

	got = nil
	f = newFrames(context.Background(), sendTo, newMsgBody(strings.NewReader(""), func() {}))
	f.Header().Set("Content-Type", "application/json")
	f.WriteHeader(429)
	_, _ = f.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limited","param":null}}` + "\n"))
	if err := f.finish(); err != nil || len(got) != 1 ||
		got[0] != `{"type":"error","status":429,"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limited","param":null}}` {
		t.Errorf("error: %q %v", got, err)
	}

	got = nil
	f = newFrames(context.Background(), sendTo, newMsgBody(strings.NewReader(""), func() {}))
	_, _ = f.Write([]byte(`{"id":"resp_1","status":"incomplete","output":[{"type":"message","id":"m1"}]}`))
	if err := f.finish(); err != nil || len(got) != 3 || gjson.Get(got[0], "type").Str != "response.created" ||
		gjson.Get(got[1], "item.id").Str != "m1" || gjson.Get(got[2], "type").Str != "response.incomplete" || gjson.Get(got[2], "sequence_number").Int() != 2 {
		t.Errorf("a whole response: %q %v", got, err)
	}

	f = newFrames(context.Background(), func(ctx context.Context, _ []byte) error { <-ctx.Done(); return ctx.Err() },
		newMsgBody(strings.NewReader(""), func() {}))
	f.Header().Set("Content-Type", "text/event-stream")
	_ = f.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := f.Write([]byte("data: {}\n\n")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a send past its deadline: %v, want a write timeout", err)
	}
}
