package e2e

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// dialect is the wire API a fake upstream speaks.
type dialect int

const (
	openaiAPI    dialect = iota // OpenAI chat completions (OpenAI and OpenAI-compatible adapters)
	anthropicAPI                // Anthropic Messages
)

func (d dialect) String() string {
	if d == anthropicAPI {
		return "anthropic"
	}
	return "openai"
}

// faultKind says how a fake upstream answers one API call.
type faultKind int

const (
	answer         faultKind = iota // a normal, complete answer
	httpError                       // status with body (and header), nothing else
	reset                           // hijack and close with SO_LINGER 0: the client reads ECONNRESET
	hang                            // no answer until the caller gives up
	garbage                         // 200 whose body is neither JSON nor SSE
	garbageEvent                    // stream: the preamble, then a data event that is not JSON, then a normal end
	slowFirstToken                  // the stream preamble at once, content after delay (non-stream: the answer after delay)
	cutStream                       // stream: the preamble and one content event, then a clean end without [DONE] / message_stop
	resetStream                     // stream: the preamble and one content event, then a reset
	cutBody                         // non-stream: Content-Length promises more than is sent
	noDone                          // stream: a whole answer (finish and usage) whose body ends cleanly without [DONE] / message_stop
)

// fault is one scripted answer.
type fault struct {
	kind   faultKind
	status int               // httpError
	body   string            // httpError
	header map[string]string // set on any answer that has headers
	delay  time.Duration     // slowFirstToken
}

// oaiError is an OpenAI-shaped error answer,
// {"error":{"message","type","param","code"}}. hdr holds header name/value
// pairs.
func oaiError(status int, typ, code, msg string, hdr ...string) fault {
	b := `{"error":{"message":` + strconv.Quote(msg) + `,"type":` + strconv.Quote(typ) + `,"param":null,"code":`
	if code == "" {
		b += "null"
	} else {
		b += strconv.Quote(code)
	}
	return fault{kind: httpError, status: status, body: b + "}}", header: pairs(hdr)}
}

// antError is an Anthropic-shaped error answer,
// {"type":"error","error":{"type","message"}}.
func antError(status int, typ, msg string, hdr ...string) fault {
	b := `{"type":"error","error":{"type":` + strconv.Quote(typ) + `,"message":` + strconv.Quote(msg) +
		`},"request_id":"req_011CTest"}`
	return fault{kind: httpError, status: status, body: b, header: pairs(hdr)}
}

// rawError is an error answer with any body and headers.
func rawError(status int, body string, hdr ...string) fault {
	return fault{kind: httpError, status: status, body: body, header: pairs(hdr)}
}

func pairs(kv []string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// upstream is a fake provider on httptest. A script decides each API call's
// answer; GET requests (the breaker's probes) always succeed.
type upstream struct {
	name  string
	d     dialect
	srv   *httptest.Server
	calls atomic.Int32 // API calls received; probes excluded
	probe atomic.Int32 // probes received
	// script picks the answer to one API call; stream says whether the
	// caller asked for a stream.
	script atomic.Pointer[func(stream bool) fault]
	// stop ends hangs and delays before the server closes, so Close never
	// waits on a handler.
	stop      chan struct{}
	closeOnce sync.Once

	// Canned answers, built once.
	whole                   string   // non-stream success body
	preamble, content, tail []string // stream events (SSE-framed)
	// unclosed is a whole answer's tail without its closing event: the
	// finish and usage chunks without [DONE], or message_delta without
	// message_stop.
	unclosed []string
}

func newUpstream(t testing.TB, name string, d dialect) *upstream {
	t.Helper()
	u := &upstream{name: name, d: d, stop: make(chan struct{})}
	u.always(fault{})
	u.build()
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // resets and cuts make it chatty
	u.srv.Start()
	t.Cleanup(u.close)
	return u
}

// close ends hangs and shuts the server down; it is idempotent.
func (u *upstream) close() {
	u.closeOnce.Do(func() {
		close(u.stop)
		u.srv.Close()
	})
}

func (u *upstream) setScript(f func(stream bool) fault) { u.script.Store(&f) }

// always answers every API call with f.
func (u *upstream) always(f fault) { u.setScript(func(bool) fault { return f }) }

// text is the content of a complete answer from u.
func (u *upstream) text() string { return "hello from " + u.name }

func (u *upstream) build() {
	const created = 1767225600
	if u.d == openaiAPI {
		id := "chatcmpl-" + u.name
		u.whole = `{"id":"` + id + `","object":"chat.completion","created":1767225600,"model":"gpt-test",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"` + u.text() + `"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`
		chunk := func(delta, finish string) string {
			return fmt.Sprintf(`data: {"id":"%s","object":"chat.completion.chunk","created":%d,"model":"gpt-test","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n",
				id, created, delta, finish)
		}
		u.preamble = []string{chunk(`{"role":"assistant","content":""}`, "null")}
		u.content = []string{chunk(`{"content":"hello "}`, "null"), chunk(`{"content":"from `+u.name+`"}`, "null")}
		u.tail = []string{chunk(`{}`, `"stop"`), "data: [DONE]\n\n"}
		u.unclosed = []string{chunk(`{}`, `"stop"`), fmt.Sprintf(`data: {"id":"%s","object":"chat.completion.chunk","created":%d,"model":"gpt-test","choices":[],`+
			`"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`+"\n\n", id, created)}
		return
	}
	u.whole = `{"id":"msg_` + u.name + `","type":"message","role":"assistant","model":"claude-test",` +
		`"content":[{"type":"text","text":"` + u.text() + `"}],"stop_reason":"end_turn","stop_sequence":null,` +
		`"usage":{"input_tokens":5,"output_tokens":3}}`
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	u.preamble = []string{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_`+u.name+`","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	}
	delta := func(s string) string {
		return ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+s+`"}}`)
	}
	u.content = []string{delta("hello "), delta("from " + u.name)}
	u.tail = []string{
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`),
		ev("message_stop", `{"type":"message_stop"}`),
	}
	u.unclosed = u.tail[:2]
}

func (u *upstream) apiPath() string {
	if u.d == anthropicAPI {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	// Read the whole body first: only then does the server watch the
	// connection and cancel r.Context when the caller hangs up.
	body, _ := io.ReadAll(r.Body)
	if r.Method == http.MethodGet {
		u.probe.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if u.d == anthropicAPI {
			io.WriteString(w, `{"data":[{"type":"model","id":"claude-test"}],"has_more":false}`)
		} else {
			io.WriteString(w, `{"object":"list","data":[{"id":"gpt-test","object":"model"}]}`)
		}
		return
	}
	if r.URL.Path != u.apiPath() {
		http.Error(w, "no such path "+r.URL.Path, http.StatusNotFound)
		return
	}
	u.calls.Add(1)
	stream := gjson.GetBytes(body, "stream").Bool()
	f := (*u.script.Load())(stream)
	for k, v := range f.header {
		w.Header().Set(k, v)
	}
	u.answer(w, r, stream, f)
}

// answer writes the API answer shaped by f, once the request body is read.
func (u *upstream) answer(w http.ResponseWriter, r *http.Request, stream bool, f fault) {
	switch f.kind {
	case httpError:
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(f.status)
		io.WriteString(w, f.body)
	case reset:
		resetConn(w)
	case hang:
		u.wait(r, -1)
	case garbage:
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		io.WriteString(w, "<html><body>\x00upstream garbage {{{ not json</body></html>\n")
	case cutBody:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(u.whole)+100))
		io.WriteString(w, u.whole[:len(u.whole)/2])
	default:
		if !stream {
			if f.kind == slowFirstToken && !u.wait(r, f.delay) {
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, u.whole)
			return
		}
		u.stream(w, r, f)
	}
}

// stream writes a stream answer shaped by f, flushing event by event.
func (u *upstream) stream(w http.ResponseWriter, r *http.Request, f fault) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	write := func(events ...string) bool {
		for _, e := range events {
			if _, err := io.WriteString(w, e); err != nil {
				return false
			}
			if rc.Flush() != nil {
				return false
			}
		}
		return true
	}
	w.WriteHeader(http.StatusOK)
	if !write(u.preamble...) {
		return
	}
	switch f.kind {
	case slowFirstToken:
		if !u.wait(r, f.delay) {
			return
		}
	case garbageEvent:
		bad := "data: {\"choices\": not json at all\n\n"
		if u.d == anthropicAPI {
			bad = "event: content_block_delta\n" + bad
		}
		if !write(bad) {
			return
		}
	case cutStream:
		write(u.content[0])
		return // a clean end of the body, without [DONE] / message_stop
	case resetStream:
		if write(u.content[0]) {
			resetConn(w)
		}
		return
	case noDone:
		if write(u.content...) {
			write(u.unclosed...)
		}
		return // a clean end of the body, the answer whole
	}
	if write(u.content...) {
		write(u.tail...)
	}
}

// wait waits d (d < 0: forever) unless the caller hangs up or the upstream
// closes first; it reports whether d passed.
func (u *upstream) wait(r *http.Request, d time.Duration) bool {
	var timer <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-r.Context().Done():
	case <-u.stop:
	}
	return false
}

// resetConn takes the connection from the server and closes it with
// SO_LINGER 0, so the peer reads a TCP reset rather than a clean EOF.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic("e2e: hijack: " + err.Error())
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// faultOnce scripts ups so that the first API call to reach any of them
// gets f and every later call a normal answer. It returns a function that
// reports which upstream got f (nil while none has). The router may rank
// the providers of a tier in any order; the tests follow whichever it
// tried first.
func faultOnce(f fault, ups ...*upstream) func() *upstream {
	var fired atomic.Bool
	var hit atomic.Pointer[upstream]
	for _, u := range ups {
		u.setScript(func(bool) fault {
			if fired.CompareAndSwap(false, true) {
				hit.Store(u)
				return f
			}
			return fault{}
		})
	}
	return hit.Load
}

// lockedBuffer collects a server's error log.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
