package h1server

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// servers are the two servers measured side by side on the same handler.
var servers = []struct {
	name  string
	start func(testing.TB, http.Handler) string
}{
	{"h1server", func(tb testing.TB, h http.Handler) string { _, addr := serve(tb, h); return addr }},
	{"net/http", func(tb testing.TB, h http.Handler) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second}
		go func() { _ = s.Serve(ln) }()
		tb.Cleanup(func() { _ = s.Close() })
		return ln.Addr().String()
	}},
}

// chatHandler answers as the router does a JSON request: reads the body,
// sets its headers, writes the answer.
var chatHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["X-Request-Id"] = []string{"req_0123456789"}
	_, _ = w.Write(b)
})

// streamHandler writes an event stream's head and first event, flushed.
var streamHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Content-Type"] = []string{"text/event-stream"}
	h["Cache-Control"] = []string{"no-cache"}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "data: {\"choices\":[]}\n\n")
	w.(http.Flusher).Flush()
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
})

var sdkRequest = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n" +
	"Accept: application/json\r\nContent-Type: application/json\r\nUser-Agent: OpenAI/Python 1.99.0\r\nX-Stainless-Lang: python\r\n" +
	"X-Stainless-Package-Version: 1.99.0\r\nX-Stainless-Os: Linux\r\nX-Stainless-Arch: x64\r\nAuthorization: Bearer sk-test\r\n" +
	"x-stainless-retry-count: 0\r\nContent-Length: 62\r\n\r\n" + `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`

// readAnswerRaw reads one answer (Content-Length or chunked) without
// allocating.
func readAnswerRaw(br *bufio.Reader) error {
	length, chunked := int64(-1), false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) == 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			length, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
		if bytes.HasPrefix(line, []byte("Transfer-Encoding: chunked")) {
			chunked = true
		}
	}
	if !chunked {
		_, err := br.Discard(int(length))
		return err
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		n, _ := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if _, err := br.Discard(int(n) + 2); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// BenchmarkServe: one keep-alive connection, one request at a time; the
// allocations are the server's (the client allocates none).
func BenchmarkServe(b *testing.B) {
	for _, mode := range []struct {
		name string
		h    http.Handler
	}{{"json", chatHandler}, {"stream", streamHandler}} {
		for _, srv := range servers {
			b.Run(mode.name+"/"+srv.name, func(b *testing.B) {
				addr := srv.start(b, mode.h)
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				br := bufio.NewReader(c)
				req := []byte(sdkRequest)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Write(req); err != nil {
						b.Fatal(err)
					}
					if err := readAnswerRaw(br); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestStackPerStream measures the goroutine stacks a held stream costs
// on each server: n streams whose handler blocks after its head and
// first event went out.
func TestStackPerStream(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 200 connections")
	}
	const n = 200
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			release := make(chan struct{})
			started := make(chan struct{}, n)
			addr := srv.start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				streamHandler(w, r)
				started <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			conns := make([]net.Conn, n)
			for i := range conns {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				conns[i] = c
				if _, err := io.WriteString(c, sdkRequest); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range n {
				select {
				case <-started:
				case <-ctx.Done():
					t.Fatal("streams did not start")
				}
			}
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			t.Logf("%s: %.1f KiB of goroutine stacks, %.1f KiB of heap per held stream (server and test client)", srv.name,
				float64(after.StackInuse-before.StackInuse)/n/1024, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n/1024)
			close(release)
			for _, c := range conns {
				c.Close()
			}
		})
	}
}
