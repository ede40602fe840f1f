package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/reqctx"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rawServer is an upstream on a real loopback socket that reads each
// request's head (and a Content-Length body) and answers with what answer
// returns for the connection's n-th request. It counts connections.
type rawServer struct {
	ln    net.Listener
	conns atomic.Int32
	wg    sync.WaitGroup
	// answer gives the bytes for request i (0-based) on connection c;
	// closeAfter says to close the connection after writing them.
	answer func(c, i int, req *http.Request) (out string, closeAfter bool)
	seen   chan *http.Request
}

func newRawServer(t testing.TB, answer func(c, i int, req *http.Request) (string, bool)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, answer: answer, seen: make(chan *http.Request, 100)}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *rawServer) accept() {
	defer s.wg.Done()
	var open []net.Conn
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		open = append(open, nc)
		mu.Unlock()
		c := int(s.conns.Add(1)) - 1
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer nc.Close()
			br := bufio.NewReader(nc)
			for i := 0; ; i++ {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				body, _ := io.ReadAll(req.Body)
				req.Body = io.NopCloser(strings.NewReader(string(body)))
				select {
				case s.seen <- req:
				default:
				}
				out, closeAfter := s.answer(c, i, req)
				if out != "" {
					if _, err := io.WriteString(nc, out); err != nil {
						return
					}
				}
				if closeAfter {
					return
				}
			}
		}()
	}
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

func newTransport() *Transport {
	d := &net.Dialer{}
	return &Transport{Dial: d.DialContext, MaxIdle: 4}
}

func post(t *testing.T, tr *Transport, ctx context.Context, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k")
	return tr.RoundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	resp.Body.Close()
	return string(b)
}

const okJSON = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

func TestRequestOnTheWire(t *testing.T) {
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) { return okJSON, false })
	tr := newTransport()
	defer tr.CloseIdleConnections()
	resp, err := post(t, tr, context.Background(), s.url(), `{"model":"m"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "{}" || resp.StatusCode != 200 {
		t.Fatalf("answer = %d %q", resp.StatusCode, got)
	}
	req := <-s.seen
	body, _ := io.ReadAll(req.Body)
	if req.Method != "POST" || req.URL.Path != "/v1/chat/completions" || string(body) != `{"model":"m"}` ||
		req.ContentLength != int64(len(body)) || req.Header.Get("Authorization") != "Bearer k" ||
		req.Host != s.ln.Addr().String() || req.Header.Get("User-Agent") == "" {
		t.Fatalf("upstream saw %s %s host %q len %d body %q headers %v", req.Method, req.URL, req.Host, req.ContentLength, body, req.Header)
	}
}

func TestKeepsConnections(t *testing.T) {
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) { return okJSON, false })
	tr := newTransport()
	defer tr.CloseIdleConnections()
	for range 50 {
		resp, err := post(t, tr, context.Background(), s.url(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("50 sequential requests opened %d connections, want 1", n)
	}
}

// A stream whose reader stops at its last event (as the SSE reader does at
// "data: [DONE]") and closes the body keeps the connection when the
// chunked end has already arrived.
func TestStreamEndKeepsConnection(t *testing.T) {
	const stream = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) { return stream, false })
	tr := newTransport()
	defer tr.CloseIdleConnections()
	for range 3 {
		resp, err := post(t, tr, context.Background(), s.url(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len("data: [DONE]\n\n"))
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("3 streams closed after their last event opened %d connections, want 1", n)
	}
}

// A stream closed at its last event before the chunked end has arrived
// keeps its connection when the end follows a moment later (as it does at
// low concurrency): Close does not wait for it, and the next request goes
// out on the same connection.
func TestStreamEndArrivingLaterKeepsConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var conns atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		conns.Add(1)
		br := bufio.NewReader(nc)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(nc, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
				"e\r\ndata: [DONE]\n\n\r\n")
			if i == 0 {
				<-release // the chunked end comes after the client closed the body
			}
			io.WriteString(nc, "0\r\n\r\n")
		}
	}()
	defer func() { ln.Close(); <-done }()
	tr := newTransport()
	defer tr.CloseIdleConnections()
	url := "http://" + ln.Addr().String()
	for i := range 2 {
		resp, err := post(t, tr, context.Background(), url, `{}`)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len("data: [DONE]\n\n"))
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if i == 0 {
			close(release)
			waitFor(t, func() bool {
				tr.mu.Lock()
				defer tr.mu.Unlock()
				return len(tr.idle[ln.Addr().String()]) == 1
			})
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("connections = %d, want 1", n)
	}
}

// A body closed before its end, with more of it yet to come, closes the
// connection: the next request gets a new one and a clean answer.
func TestEarlyCloseDropsConnection(t *testing.T) {
	const partial = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
	s := newRawServer(t, func(c, i int, _ *http.Request) (string, bool) {
		if c == 0 {
			return partial, false // and never the rest
		}
		return okJSON, false
	})
	tr := newTransport()
	defer tr.CloseIdleConnections()
	resp, err := post(t, tr, context.Background(), s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(buf); err == nil {
		t.Fatal("Read after Close succeeded")
	}
	resp, err = post(t, tr, context.Background(), s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "{}" {
		t.Fatalf("second answer = %q", got)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("connections = %d, want 2", n)
	}
}

// An idle connection the upstream closed (its keep-alive timeout) is
// noticed before it is used: the request goes out on a new one.
func TestUpstreamClosedIdleConnection(t *testing.T) {
	s := newRawServer(t, func(c, i int, _ *http.Request) (string, bool) {
		return okJSON, c == 0 // the first connection closes after its answer
	})
	tr := newTransport()
	defer tr.CloseIdleConnections()
	resp, err := post(t, tr, context.Background(), s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	// The upstream closes right after writing; wait until its FIN is
	// visible on the pooled connection.
	waitFor(t, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		list := tr.idle[s.ln.Addr().String()]
		return len(list) == 1 && list[0].peek() != 0
	})
	resp, err = post(t, tr, context.Background(), s.url(), `{}`)
	if err != nil {
		t.Fatalf("request after the upstream closed the idle connection: %v", err)
	}
	readAll(t, resp)
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("connections = %d, want 2", n)
	}
}

// waitFor polls cond (a state the test cannot be told about) until it
// holds, failing after 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestConnectionCloseIsNotKept(t *testing.T) {
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) {
		return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", true
	})
	tr := newTransport()
	defer tr.CloseIdleConnections()
	for range 2 {
		resp, err := post(t, tr, context.Background(), s.url(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("connections = %d, want 2", n)
	}
}

func TestCloseDelimitedBody(t *testing.T) {
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) {
		return "HTTP/1.1 200 OK\r\n\r\nuntil the end", true
	})
	tr := newTransport()
	defer tr.CloseIdleConnections()
	resp, err := post(t, tr, context.Background(), s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "until the end" {
		t.Fatalf("body = %q", got)
	}
	tr.mu.Lock()
	n := len(tr.idle[s.ln.Addr().String()])
	tr.mu.Unlock()
	if n != 0 {
		t.Fatalf("a close-delimited answer's connection was pooled")
	}
}

func TestInformationalAnswersSkipped(t *testing.T) {
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) {
		return "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + okJSON, false
	})
	tr := newTransport()
	defer tr.CloseIdleConnections()
	resp, err := post(t, tr, context.Background(), s.url(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 200 || got != "{}" {
		t.Fatalf("answer = %d %q", resp.StatusCode, got)
	}
}

// cancellables are the kinds of request context the transport watches:
// the standard library's, the router's own (reqctx.Ctx, watched without
// an allocation), and values added to the router's own.
var cancellables = []struct {
	name string
	ctx  func() (context.Context, func())
}{
	{"context", func() (context.Context, func()) { return context.WithCancel(context.Background()) }},
	{"reqctx", func() (context.Context, func()) {
		rc := reqctx.New(context.Background())
		return rc, func() { rc.Cancel(nil) }
	}},
	{"values over reqctx", func() (context.Context, func()) {
		rc := reqctx.New(context.Background())
		return context.WithValue(rc, valueKey{}, 1), func() { rc.Cancel(nil) }
	}},
}

type valueKey struct{}

// TestCancelKinds: a request cancelled while waiting for its answer, or
// in the middle of its body, ends at once with its connection dropped,
// for each kind of request context; an answer read whole before the
// context ends keeps its connection.
func TestCancelKinds(t *testing.T) {
	for _, k := range cancellables {
		t.Run(k.name+"/waiting", func(t *testing.T) {
			s := newRawServer(t, func(c, i int, _ *http.Request) (string, bool) {
				if c == 0 {
					return "", false // never answers
				}
				return okJSON, false
			})
			tr := newTransport()
			defer tr.CloseIdleConnections()
			ctx, cancel := k.ctx()
			done := make(chan error, 1)
			go func() {
				_, err := post(t, tr, ctx, s.url(), `{}`)
				done <- err
			}()
			<-s.seen // the upstream has the request
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("RoundTrip = %v, want context.Canceled", err)
			}
			resp, err := post(t, tr, context.Background(), s.url(), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if n := s.conns.Load(); n != 2 {
				t.Fatalf("connections = %d, want 2 (the cancelled one dropped)", n)
			}
		})
		t.Run(k.name+"/mid body", func(t *testing.T) {
			s := newRawServer(t, func(int, int, *http.Request) (string, bool) {
				return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", false
			})
			tr := newTransport()
			defer tr.CloseIdleConnections()
			ctx, cancel := k.ctx()
			resp, err := post(t, tr, ctx, s.url(), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 5)
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				t.Fatal(err)
			}
			cancel()
			if _, err := resp.Body.Read(buf); err == nil || err == io.EOF {
				t.Fatalf("Read after cancel = %v, want a failure", err)
			}
			resp.Body.Close()
			tr.mu.Lock()
			n := len(tr.idle[s.ln.Addr().String()])
			tr.mu.Unlock()
			if n != 0 {
				t.Fatal("a cancelled answer's connection was pooled")
			}
		})
		t.Run(k.name+"/kept", func(t *testing.T) {
			// A whole answer read before the context ends: the watch is
			// stopped, the connection pooled, and the context's later end
			// does not reach it.
			s := newRawServer(t, func(int, int, *http.Request) (string, bool) { return okJSON, false })
			tr := newTransport()
			defer tr.CloseIdleConnections()
			ctx, cancel := k.ctx()
			resp, err := post(t, tr, ctx, s.url(), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			cancel()
			for range 2 {
				resp, err := post(t, tr, context.Background(), s.url(), `{}`)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
			}
			if n := s.conns.Load(); n != 1 {
				t.Fatalf("connections = %d, want 1 (kept across the context's end)", n)
			}
		})
	}
}

// Cancelling the request's context while waiting for the answer ends
// RoundTrip at once with the context's error, and the connection is not
// reused.
func TestRefusesHeaderInjection(t *testing.T) {
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) { return okJSON, false })
	tr := newTransport()
	req, _ := http.NewRequest(http.MethodPost, s.url()+"/v1/x", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer k\r\nX-Evil: 1")
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("a header value with CRLF was sent")
	}
	if n := s.conns.Load(); n != 0 {
		t.Fatalf("connections = %d, want 0", n)
	}
}

func TestRefusesOtherSchemes(t *testing.T) {
	tr := newTransport()
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:1/", nil)
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("an https URL was accepted")
	}
}

func TestDialFailure(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	tr := newTransport()
	if _, err := post(t, tr, context.Background(), "http://"+addr, `{}`); err == nil {
		t.Fatal("a refused connection succeeded")
	}
}

func TestIdleTimeout(t *testing.T) {
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) { return okJSON, false })
	now := time.Unix(1000, 0)
	tr := newTransport()
	tr.IdleTimeout = time.Minute
	tr.Now = func() time.Time { return now }
	defer tr.CloseIdleConnections()
	for range 2 {
		resp, err := post(t, tr, context.Background(), s.url(), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		now = now.Add(2 * time.Minute)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("connections = %d, want 2 (the first idled past IdleTimeout)", n)
	}
}

func TestPoolBound(t *testing.T) {
	release := make(chan struct{})
	s := newRawServer(t, func(int, int, *http.Request) (string, bool) {
		<-release
		return okJSON, false
	})
	tr := newTransport()
	tr.MaxIdle = 2
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := post(t, tr, context.Background(), s.url(), `{}`)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for range 5 {
		<-s.seen
	}
	close(release)
	wg.Wait()
	tr.mu.Lock()
	n := len(tr.idle[s.ln.Addr().String()])
	tr.mu.Unlock()
	if s.conns.Load() != 5 || n != 2 {
		t.Fatalf("5 concurrent requests: %d connections, %d kept idle; want 5 and 2", s.conns.Load(), n)
	}
}

// TestCopyBody: a request body of ContentLength bytes is written whole,
// whether it fits in the write buffer or not and however its reader hands
// it over; a shorter one is an error, a longer one is cut.
func TestCopyBody(t *testing.T) {
	small, large := "0123456789", strings.Repeat("0123456789", 50)
	for _, c := range []struct {
		name, body string
		want       int64
		wrap       func(io.Reader) io.Reader
		ok         bool
	}{
		{"small", small, 10, nil, true},
		{"small, one byte a read", small, 10, iotest.OneByteReader, true},
		{"small, EOF with the data", small, 10, iotest.DataErrReader, true},
		{"small, longer than said", small, 4, nil, true},
		{"small, shorter than said", small, 11, nil, false},
		{"small, failing", small, 10, func(r io.Reader) io.Reader { return iotest.TimeoutReader(iotest.OneByteReader(r)) }, false},
		{"large", large, 500, nil, true},
		{"large, one byte a read", large, 500, iotest.OneByteReader, true},
		{"large, longer than said", large, 300, nil, true},
		{"large, shorter than said", large, 501, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			bw := bufio.NewWriterSize(&out, 64)
			bw.WriteString("HEAD:")
			var r io.Reader = strings.NewReader(c.body)
			if c.wrap != nil {
				r = c.wrap(r)
			}
			err := copyBody(bw, r, c.want)
			bw.Flush()
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok %v", err, c.ok)
			}
			if c.ok && out.String() != "HEAD:"+c.body[:c.want] {
				t.Errorf("wrote %q, want %q", out.String(), "HEAD:"+c.body[:c.want])
			}
		})
	}
}
