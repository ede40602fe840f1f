package h1server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serve starts a server of h on a loopback port; it is closed at the
// test's end.
func serve(t testing.TB, h http.Handler, opts ...func(*Server)) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, MaxHeaderBytes: 4 << 10}
	for _, o := range opts {
		o(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			_ = s.Close()
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

// dial opens a connection with a deadline bounding the test.
func dial(t testing.TB, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c, bufio.NewReader(c)
}

// answer reads one answer, its body and whether the connection then ends
// (EOF before the deadline).
type answer struct {
	resp   *http.Response
	body   string
	closed bool
}

func readAnswer(t testing.TB, c net.Conn, br *bufio.Reader, method string, checkClosed bool) answer {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	a := answer{resp: resp, body: string(b)}
	if checkClosed {
		// A connection kept open is told by the deadline passing.
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := br.ReadByte()
		var ne net.Error
		a.closed = err != nil && !(errors.As(err, &ne) && ne.Timeout())
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	}
	return a
}

var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Host", r.Host)
	w.Header().Set("X-Uri", r.RequestURI)
	_, _ = w.Write(b)
})

// TestRefusals: heads net/http refuses, and the smuggling shapes it
// admits, are answered with the status in the head's own shape and the
// connection is closed.
func TestRefusals(t *testing.T) {
	_, addr := serve(t, echo)
	tests := []struct {
		name string
		raw  string
		want int
	}{
		{"bare LF", "GET / HTTP/1.1\nHost: a\n\n", 400},
		{"bare LF in headers", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400},
		{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n", 400},
		{"CL and TE", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
		{"two CL", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nab", 400},
		{"signed CL", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\na", 400},
		{"empty CL", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", 400},
		{"huge CL", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
		{"TE chunked, identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 501},
		{"two TE", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
		{"TE on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"bad Host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
		{"HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505},
		{"not HTTP", "GET / FTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"NUL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", 400},
		{"space before colon", "GET / HTTP/1.1\r\nHost: a\r\nX : b\r\n\r\n", 400},
		{"no colon", "GET / HTTP/1.1\r\nHost: a\r\nXb\r\n\r\n", 400},
		{"bad method", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"bad URI", "GET nohost HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n", 405},
		{"Expect other", "POST / HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\na", 417},
		{"head too large", "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("a", 9<<10) + "\r\n\r\n", 431},
		{"too many lines", "GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X: a\r\n", 300) + "\r\n", 431},
		{"empty request line", "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dial(t, addr)
			if _, err := io.WriteString(c, tt.raw); err != nil {
				t.Fatal(err)
			}
			a := readAnswer(t, c, br, "GET", true)
			if a.resp.StatusCode != tt.want || !a.closed {
				t.Errorf("got %d closed %v (%q), want %d and the connection closed", a.resp.StatusCode, a.closed, a.body, tt.want)
			}
		})
	}
}

// TestSilentClose: a client that closes, or stalls in its head past
// ReadHeaderTimeout, gets no answer and a closed connection.
func TestSilentClose(t *testing.T) {
	_, addr := serve(t, echo, func(s *Server) { s.ReadHeaderTimeout = 50 * time.Millisecond })
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if b, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("got %q %v, want EOF after ReadHeaderTimeout", b, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a stalled head held the connection %s", took)
	}
}

// TestExchanges: requests and their answers on one connection, framing
// and connection handling as net/http's.
func TestExchanges(t *testing.T) {
	h := http.NewServeMux()
	h.Handle("/echo", echo)
	h.HandleFunc("/flush", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, "data: 2\n\n")
	})
	h.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h.HandleFunc("/sniff", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html><body>hi") })
	h.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
	})
	h.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 10000))
	})
	h.HandleFunc("/unread", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	_, addr := serve(t, h)
	tests := []struct {
		name, raw, method string
		status            int
		body              string
		header            map[string]string // "" value: absent
		chunked, closed   bool
	}{
		{name: "content length", raw: "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello", status: 200, body: "hello",
			header: map[string]string{"Content-Length": "5", "X-Host": "h", "X-Uri": "/echo", "Content-Type": "text/plain"}},
		{name: "chunked request", raw: "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", status: 200, body: "abcde"},
		{name: "chunked request with trailer", raw: "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX: y\r\n\r\n", status: 400, closed: true},
		{name: "flushed", raw: "GET /flush HTTP/1.1\r\nHost: h\r\n\r\n", status: 200, body: "data: 1\n\ndata: 2\n\n", chunked: true},
		{name: "no content", raw: "GET /nocontent HTTP/1.1\r\nHost: h\r\n\r\n", status: 204, header: map[string]string{"Content-Length": "", "Transfer-Encoding": ""}},
		{name: "sniffed", raw: "GET /sniff HTTP/1.1\r\nHost: h\r\n\r\n", status: 200, body: "<html><body>hi", header: map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		{name: "head", raw: "HEAD /echo HTTP/1.1\r\nHost: h\r\n\r\n", method: "HEAD", status: 200, header: map[string]string{"Content-Length": ""}},
		{name: "big", raw: "GET /big HTTP/1.1\r\nHost: h\r\n\r\n", status: 200, body: strings.Repeat("x", 10000), chunked: true},
		{name: "handler closes", raw: "GET /close HTTP/1.1\r\nHost: h\r\n\r\n", status: 200, body: "bye", closed: true},
		{name: "client closes", raw: "GET /unread HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", status: 200, body: "ok", closed: true,
			header: map[string]string{"Connection": "close"}},
		{name: "HTTP/1.0", raw: "GET /unread HTTP/1.0\r\n\r\n", status: 200, body: "ok", closed: true},
		{name: "HTTP/1.0 keep-alive", raw: "GET /unread HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", status: 200, body: "ok",
			header: map[string]string{"Connection": "keep-alive", "Content-Length": "2"}},
		{name: "HTTP/1.0 keep-alive flushed", raw: "GET /flush HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", status: 200, body: "data: 1\n\ndata: 2\n\n", closed: true},
		{name: "small unread body drained", raw: "POST /unread HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789", status: 200, body: "ok"},
		{name: "large unread body", raw: "POST /unread HTTP/1.1\r\nHost: h\r\nContent-Length: 300000\r\n\r\n0123456789", status: 200, body: "ok", closed: true,
			header: map[string]string{"Connection": "close"}},
		{name: "absolute form", raw: "GET http://other/echo HTTP/1.1\r\nHost: h\r\n\r\n", status: 200, header: map[string]string{"X-Host": "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dial(t, addr)
			if _, err := io.WriteString(c, tt.raw); err != nil {
				t.Fatal(err)
			}
			if tt.method == "" {
				tt.method = "GET"
			}
			a := readAnswer(t, c, br, tt.method, true)
			if a.resp.StatusCode != tt.status || (tt.body != "" && a.body != tt.body) {
				t.Errorf("got %d %q, want %d %q", a.resp.StatusCode, a.body, tt.status, tt.body)
			}
			if a.closed != tt.closed {
				t.Errorf("got closed %v, want %v", a.closed, tt.closed)
			}
			if got := len(a.resp.TransferEncoding) > 0; got != tt.chunked {
				t.Errorf("got chunked %v, want %v", got, tt.chunked)
			}
			if a.resp.Header.Get("Date") == "" {
				t.Error("no Date header")
			}
			for k, v := range tt.header {
				got := a.resp.Header.Get(k)
				if k == "Connection" && a.resp.Close {
					got = "close" // ReadResponse moves it to Close
				}
				if got != v {
					t.Errorf("got %s %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestPipelined: requests sent at once are answered in order on one
// connection.
func TestPipelined(t *testing.T) {
	_, addr := serve(t, echo)
	c, br := dial(t, addr)
	var raw string
	for _, b := range []string{"one", "two", "three"} {
		raw += "POST /" + b + " HTTP/1.1\r\nHost: h\r\nContent-Length: " + string(rune('0'+len(b))) + "\r\n\r\n" + b
	}
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two", "three"} {
		if a := readAnswer(t, c, br, "POST", false); a.body != want || a.resp.Header.Get("X-Uri") != "/"+want {
			t.Errorf("got %q for %s, want %q", a.body, a.resp.Header.Get("X-Uri"), want)
		}
	}
}

// TestExpectContinue: 100 Continue goes out when the handler reads the
// body, and not when it answers without reading.
func TestExpectContinue(t *testing.T) {
	h := http.NewServeMux()
	h.Handle("/echo", echo)
	h.HandleFunc("/refuse", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusUnauthorized) })
	_, addr := serve(t, h)
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("got %q %v, want 100 Continue", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "hi"); err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, c, br, "POST", false); a.body != "hi" {
		t.Errorf("got %q, want hi", a.body)
	}
	if _, err := io.WriteString(c, "POST /refuse HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, c, br, "POST", true); a.resp.StatusCode != 401 || !a.closed {
		t.Errorf("got %d closed %v, want 401 without 100 Continue and the connection closed", a.resp.StatusCode, a.closed)
	}
}

// TestHangUpCancels: a client that hangs up while its request is served
// cancels the request's context, without the server reading.
func TestHangUpCancels(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	_, addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			cancelled <- nil
		case <-time.After(5 * time.Second):
			cancelled <- errors.New("not cancelled within 5s")
		}
	}))
	c, _ := dial(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	c.Close()
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
}

// TestHijack: a hijacked connection carries the bytes the server had
// already read, and the 101 head the handler chose.
func TestHijack(t *testing.T) {
	_, addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Upgrade", "x")
		w.Header().Set("Connection", "Upgrade")
		w.WriteHeader(http.StatusSwitchingProtocols)
		nc, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		line, _ := brw.ReadString('\n')
		_, _ = io.WriteString(nc, "echo "+line)
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\nearly\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("got %v %v, want 101", resp, err)
	}
	if line, err := br.ReadString('\n'); line != "echo early\n" {
		t.Errorf("got %q %v, want the early bytes echoed", line, err)
	}
}

// TestPanic: a handler's panic closes its connection; the server serves
// on.
func TestPanic(t *testing.T) {
	h := http.NewServeMux()
	h.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	h.Handle("/echo", echo)
	_, addr := serve(t, h)
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET /panic HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("got %v, want EOF", err)
	}
	c, br = dial(t, addr)
	if _, err := io.WriteString(c, "GET /echo HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if a := readAnswer(t, c, br, "GET", false); a.resp.StatusCode != 200 {
		t.Errorf("got %d after a panic, want 200", a.resp.StatusCode)
	}
}

// TestShutdown: Shutdown closes idle connections, lets the request in
// flight finish, calls the hooks; past its context it reports so, and
// Close ends the rest.
func TestShutdown(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "done")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var states atomic.Int64
	accepted := make(chan struct{}, 2)
	s := &Server{Handler: h, ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			states.Add(1)
			accepted <- struct{}{}
		} else {
			states.Add(-1)
		}
	}}
	hooked := make(chan struct{})
	s.RegisterOnShutdown(func() { close(hooked) })
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	addr := ln.Addr().String()

	busy, busyR := dial(t, addr)
	idle, idleR := dial(t, addr)
	if _, err := io.WriteString(busy, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	// Both connections accepted (a connection still in the listener's
	// backlog when Shutdown closes it is reset by the kernel).
	<-accepted
	<-accepted
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	<-hooked
	if _, err := idleR.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: got %v, want EOF", err)
	}
	_ = idle
	close(release)
	if a := readAnswer(t, busy, busyR, "GET", true); a.body != "done" || !a.closed {
		t.Errorf("in flight: got %q closed %v, want done and closed", a.body, a.closed)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	if n := states.Load(); n != 0 {
		t.Errorf("ConnState: %d connections not closed", n)
	}

	// Past the context: an error, and Close cancels the request.
	release2 := make(chan struct{})
	defer close(release2)
	s2, addr2 := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}))
	c2, br2 := dial(t, addr2)
	if _, err := io.WriteString(c2, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s2.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown past its context: %v, want context.Canceled", err)
	}
	_ = s2.Close()
	if _, err := br2.ReadByte(); err == nil {
		t.Error("Close left the connection open")
	}
}

// TestMaxConns: past MaxConns a connection waits in the accept queue
// until one closes.
func TestMaxConns(t *testing.T) {
	_, addr := serve(t, echo, func(s *Server) { s.MaxConns = 1 })
	c1, br1 := dial(t, addr)
	if _, err := io.WriteString(c1, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	readAnswer(t, c1, br1, "GET", false)
	c2, br2 := dial(t, addr)
	if _, err := io.WriteString(c2, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c2.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := br2.ReadByte(); err == nil {
		t.Fatal("a second connection was served past MaxConns 1")
	}
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	c1.Close()
	if a := readAnswer(t, c2, br2, "GET", false); a.resp.StatusCode != 200 {
		t.Errorf("got %d once the first closed, want 200", a.resp.StatusCode)
	}
}

// TestWriteAfterReturn: a goroutine the handler left behind that writes,
// flushes or sets headers after the handler returned gets an error and
// reaches nothing of the next answer on the same connection.
func TestWriteAfterReturn(t *testing.T) {
	stale := make(chan http.ResponseWriter, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			w.Header().Set("X-First", "1")
			_, _ = io.WriteString(w, "first")
			stale <- w
			return
		}
		w2 := <-stale
		w2.Header().Set("X-Leak", "from the first request")
		if _, err := w2.Write([]byte("LEAK")); !errors.Is(err, errHandlerDone) {
			t.Errorf("a write after the handler returned: %v, want errHandlerDone", err)
		}
		if err := http.NewResponseController(w2).Flush(); !errors.Is(err, errHandlerDone) {
			t.Errorf("a flush after the handler returned: %v, want errHandlerDone", err)
		}
		if err := http.NewResponseController(w2).SetWriteDeadline(time.Now()); !errors.Is(err, errHandlerDone) {
			t.Errorf("a deadline after the handler returned: %v, want errHandlerDone", err)
		}
		_, _ = io.WriteString(w, "second")
	})
	_, addr := serve(t, h)
	c, br := dial(t, addr)
	for _, path := range []string{"/first", "/second"} {
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		a := readAnswer(t, c, br, "GET", false)
		if want := strings.TrimPrefix(path, "/"); a.body != want {
			t.Errorf("%s: body %q, want %q", path, a.body, want)
		}
		if a.resp.Header.Get("X-Leak") != "" || (path == "/second" && a.resp.Header.Get("X-First") != "") {
			t.Errorf("%s: headers %v carry another request's", path, a.resp.Header)
		}
	}
}

// TestBuffersHeld: a connection holds its read buffer only while bytes
// are read or wait in it, and its body buffer only while answer bytes
// wait in it: a stream between events holds neither (buffers.go).
func TestBuffersHeld(t *testing.T) {
	type held struct{ reader, out bool }
	got := make(chan held, 4)
	_, addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			t.Error(err)
		}
		_, _ = io.WriteString(w, "data: x\n\n")
		w.(http.Flusher).Flush()
		c := w.(*response).c
		got <- held{reader: c.br != nil, out: c.out != nil}
		_, _ = io.WriteString(w, "data: y\n\n")
	}))
	tests := []struct {
		name string
		raw  string
		n    int  // requests in raw
		want held // during the first
	}{
		{"no body", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", 1, held{}},
		{"body", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi", 1, held{}},
		{"chunked body", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", 1, held{}},
		{"pipelined", "GET / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 2, held{reader: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, br := dial(t, addr)
			if _, err := io.WriteString(c, tt.raw); err != nil {
				t.Fatal(err)
			}
			for i := range tt.n {
				if a := readAnswer(t, c, br, "GET", false); a.body != "data: x\n\ndata: y\n\n" {
					t.Errorf("answer %d: %q", i, a.body)
				}
				h := <-got
				if i == 0 && h != tt.want {
					t.Errorf("between events: read buffer held %v, body buffer held %v; want %v, %v", h.reader, h.out, tt.want.reader, tt.want.out)
				}
			}
		})
	}
}

// TestHeaderDropped: once an answer's head is sent, its header map is not
// kept for the rest of the answer (a stream's life); Header after that is
// a new map whose changes go nowhere, as net/http's after the head.
func TestHeaderDropped(t *testing.T) {
	kept := make(chan bool, 1)
	_, addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Before", "1")
		_, _ = io.WriteString(w, "data: x\n\n")
		w.(http.Flusher).Flush()
		kept <- w.(*response).header != nil
		w.Header().Set("X-After", "1")
		_, _ = io.WriteString(w, "data: y\n\n")
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	a := readAnswer(t, c, br, "GET", false)
	if a.body != "data: x\n\ndata: y\n\n" || a.resp.Header.Get("X-Before") != "1" || a.resp.Header.Get("X-After") != "" {
		t.Errorf("answer %q, headers %v", a.body, a.resp.Header)
	}
	if <-kept {
		t.Error("the header map is kept after the head was sent")
	}
}

// TestHijackUnbuffered: a connection hijacked with no bytes read beyond
// the head (its read buffer released) reads what the client sends next.
func TestHijackUnbuffered(t *testing.T) {
	_, addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusSwitchingProtocols)
		nc, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		line, _ := brw.ReadString('\n')
		_, _ = io.WriteString(nc, "echo "+line)
	}))
	c, br := dial(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 101 {
		t.Fatalf("got %v %v, want 101", resp, err)
	}
	if _, err := io.WriteString(c, "late\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); line != "echo late\n" {
		t.Errorf("got %q %v, want the late bytes echoed", line, err)
	}
}

// TestHeadDeadlineNotOnBody: the head's deadline, left on the socket
// once the head is read (conn.rdNone), does not bound a body the handler
// reads without a deadline of its own: a body whose rest comes after
// ReadHeaderTimeout is read whole, Content-Length or chunked.
func TestHeadDeadlineNotOnBody(t *testing.T) {
	const timeout = 30 * time.Millisecond
	tests := []struct {
		name, head, first, rest, want string
	}{
		{"content-length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n", "hello", "world", "helloworld"},
		{"chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "5\r\nhello\r\n", "5\r\nworld\r\n0\r\n\r\n", "helloworld"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := serve(t, echo, func(s *Server) { s.ReadHeaderTimeout = timeout })
			c, br := dial(t, addr)
			if _, err := io.WriteString(c, tc.head+tc.first); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * timeout) // the head's deadline passes while the body is awaited
			if _, err := io.WriteString(c, tc.rest); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK || string(b) != tc.want {
				t.Errorf("got %d %q %v, want 200 %q", resp.StatusCode, b, err, tc.want)
			}
		})
	}
}

// TestSetField: fields set outside the header map go out as the map's
// would, the same answer (fields and framing) as the handler setting them
// in the map gives: the last set of a name wins, here or in the map;
// Content-Length frames the body (and one that is no number is dropped);
// Content-Type set so stops the sniffing and Connection: close so ends the
// connection; past ten fields they go in the map; after the head is sent
// nothing changes. Header does not show them.
func TestSetField(t *testing.T) {
	type setter interface{ SetField(key, v string) }
	for _, c := range []struct {
		name    string
		handler func(w http.ResponseWriter, set func(k, v string))
		header  map[string][]string // of the answer; "" key absent
		body    string
		chunked bool
		closed  bool
	}{
		{"fields", func(w http.ResponseWriter, set func(k, v string)) {
			set("X-Request-Id", "r1")
			set("Content-Type", "application/json")
			set("Content-Length", "2")
			_, _ = io.WriteString(w, "{}")
		}, map[string][]string{"X-Request-Id": {"r1"}, "Content-Type": {"application/json"}, "Content-Length": {"2"}}, "{}", false, false},
		{"last set wins", func(w http.ResponseWriter, set func(k, v string)) {
			set("X-A", "1")
			w.Header().Set("X-A", "2") // the map's, later
			w.Header().Set("X-B", "1")
			set("X-B", "2") // SetField's, later
			set("X-C", "1")
			set("X-C", "2")
		}, map[string][]string{"X-A": {"2"}, "X-B": {"2"}, "X-C": {"2"}}, "", false, false},
		{"bad length dropped", func(w http.ResponseWriter, set func(k, v string)) {
			set("Content-Length", "x")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "hello")
		}, map[string][]string{"Content-Length": nil}, "hello", true, false},
		{"close", func(w http.ResponseWriter, set func(k, v string)) {
			set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		}, nil, "bye", false, true},
		{"eleven", func(w http.ResponseWriter, set func(k, v string)) {
			for i := range 11 {
				set("X-F"+strconv.Itoa(i), strconv.Itoa(i))
			}
		}, map[string][]string{"X-F0": {"0"}, "X-F9": {"9"}, "X-F10": {"10"}}, "", false, false},
		{"after the head", func(w http.ResponseWriter, set func(k, v string)) {
			set("X-A", "1")
			w.(http.Flusher).Flush()
			set("X-A", "2")
			set("X-B", "2")
		}, map[string][]string{"X-A": {"1"}, "X-B": nil}, "", true, false},
	} {
		for _, outside := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/outside=%v", c.name, outside), func(t *testing.T) {
				_, addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					set := func(k, v string) { w.Header()[k] = []string{v} }
					if outside {
						set = w.(setter).SetField
					}
					c.handler(w, set)
					if outside && c.name == "fields" && len(w.Header()) != 0 {
						t.Errorf("Header() = %v, want the fields outside it", w.Header())
					}
				}))
				conn, br := dial(t, addr)
				io.WriteString(conn, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
				a := readAnswer(t, conn, br, "GET", true)
				for k, want := range c.header {
					if got := a.resp.Header[k]; !reflect.DeepEqual(got, want) {
						t.Errorf("%s: %q, want %q", k, got, want)
					}
				}
				if a.body != c.body || a.closed != c.closed || (len(a.resp.TransferEncoding) > 0) != c.chunked {
					t.Errorf("body %q closed %v chunked %v, want %q %v %v", a.body, a.closed, a.resp.TransferEncoding, c.body, c.closed, c.chunked)
				}
			})
		}
	}
}

// TestHeadReused: the head's storage is reused (parsedHead): on one
// connection each request sees its own header fields and URL, never a
// field or query of the request before it, whatever their sizes (a head
// of more lines than the pooled storage holds, a handler that added to
// the header map).
func TestHeadReused(t *testing.T) {
	type seen struct {
		path, query string
		header      http.Header
	}
	got := make(chan seen, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.Path, r.URL.RawQuery, r.Header.Clone()}
		if r.URL.Path == "/grow" {
			for i := range 40 {
				r.Header.Set(fmt.Sprintf("X-Added-%d", i), "v")
			}
		}
	})
	_, addr := serve(t, h)
	c, br := dial(t, addr)
	many := ""
	for i := range 20 {
		many += fmt.Sprintf("X-Line-%d: %d\r\n", i, i)
	}
	for _, step := range []struct {
		path, fields string
		want         http.Header
	}{
		{"/a?x=1", "X-A: 1\r\nX-B: 2\r\nX-B: 3\r\n", http.Header{"X-A": {"1"}, "X-B": {"2", "3"}}},
		{"/b", "", http.Header{}},
		{"/many", many, func() http.Header {
			h := http.Header{}
			for i := range 20 {
				h.Set(fmt.Sprintf("X-Line-%d", i), strconv.Itoa(i))
			}
			return h
		}()},
		{"/grow", "X-C: 4\r\n", http.Header{"X-C": {"4"}}},
		{"/c", "X-D: 5\r\n", http.Header{"X-D": {"5"}}},
	} {
		if _, err := io.WriteString(c, "GET "+step.path+" HTTP/1.1\r\nHost: h\r\n"+step.fields+"\r\n"); err != nil {
			t.Fatal(err)
		}
		readAnswer(t, c, br, "GET", false)
		s := <-got
		path, query, _ := strings.Cut(step.path, "?")
		if s.path != path || s.query != query {
			t.Errorf("%s: the handler saw path %q, query %q", step.path, s.path, s.query)
		}
		if !reflect.DeepEqual(s.header, step.want) {
			t.Errorf("%s: the handler saw the header %v, want %v", step.path, s.header, step.want)
		}
	}
}

// TestHijackKeepsHead: a handler that hijacked its connection keeps its
// request's head: the goroutine it leaves reading the connection reads
// the request's header and URL after the handler returned and after
// other requests took the pooled storage: had it been put back, the
// goroutine would read another request's head, or an empty one.
func TestHijackKeepsHead(t *testing.T) {
	later := make(chan string, 1)
	served := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws" {
			return
		}
		w.WriteHeader(http.StatusSwitchingProtocols)
		nc, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		go func() {
			defer nc.Close()
			<-served
			later <- r.URL.Path + " " + r.Header.Get("X-Mine")
		}()
	})
	_, addr := serve(t, h)
	ws, wbr := dial(t, addr)
	if _, err := io.WriteString(ws, "GET /ws HTTP/1.1\r\nHost: h\r\nX-Mine: kept\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(wbr, nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("got %v %v, want 101", resp, err)
	}
	c, br := dial(t, addr)
	for range 20 {
		if _, err := io.WriteString(c, "GET /other HTTP/1.1\r\nHost: h\r\nX-Mine: theirs\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		readAnswer(t, c, br, "GET", false)
	}
	close(served)
	if s := <-later; s != "/ws kept" {
		t.Errorf("the hijacked request's head read %q after others were served, want %q", s, "/ws kept")
	}
}
