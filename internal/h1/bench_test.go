package h1

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmrouter/llmrouter/internal/reqctx"
)

// benchJSON and benchStream are answers shaped as the bench's fake
// upstream sends them (OpenAI's rate-limit headers, a 331-byte JSON body;
// 22 SSE events, each its own chunk).
var (
	benchHead = "HTTP/1.1 200 OK\r\nX-Ratelimit-Limit-Requests: 100000000\r\nX-Ratelimit-Limit-Tokens: 10000000000\r\n" +
		"X-Ratelimit-Remaining-Requests: 99999999\r\nX-Ratelimit-Remaining-Tokens: 9999999000\r\n" +
		"X-Ratelimit-Reset-Requests: 1ms\r\nX-Ratelimit-Reset-Tokens: 1ms\r\nDate: Mon, 07 Dec 2026 14:00:00 GMT\r\n"
	benchJSON   = benchHead + "Content-Type: application/json\r\nContent-Length: 331\r\n\r\n" + strings.Repeat("x", 331)
	benchStream = func() string {
		var b strings.Builder
		ev := "data: " + strings.Repeat("y", 190) + "\n\n"
		b.WriteString(benchHead + "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
		for range 22 {
			b.WriteString(strconv.FormatInt(int64(len(ev)), 16) + "\r\n" + ev + "\r\n")
		}
		b.WriteString("0\r\n\r\n")
		return b.String()
	}()
)

// quietServer answers every request (a head and a 2-byte body) on each
// connection with answer, allocating nothing per request, so that a
// benchmark's allocations are the client's.
func quietServer(b *testing.B, answer string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	out := []byte(answer)
	var wg sync.WaitGroup
	b.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer nc.Close()
				buf := make([]byte, 4096)
				have := 0
				for {
					n, err := nc.Read(buf[have:])
					if err != nil {
						return
					}
					have += n
					end := bytes.Index(buf[:have], []byte("\r\n\r\n"))
					if end < 0 || have < end+4+2 {
						continue
					}
					have = copy(buf, buf[end+4+2:have])
					if _, err := nc.Write(out); err != nil {
						return
					}
				}
			})
		}
	})
	b.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

// BenchmarkRoundTrip is one request and its whole answer over a kept
// loopback connection: the allocations are the request's and the
// transport's.
// The request's context is the standard library's, or (/reqctx) the
// router's own, watched without an allocation.
func BenchmarkRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name, answer string
		own          bool
	}{{"json", benchJSON, false}, {"stream", benchStream, false}, {"json/reqctx", benchJSON, true}} {
		b.Run(c.name, func(b *testing.B) {
			url := quietServer(b, c.answer)
			tr := newTransport()
			defer tr.CloseIdleConnections()
			var ctx context.Context
			if c.own {
				rc := reqctx.New(context.Background())
				defer rc.Cancel(nil)
				ctx = rc
			} else {
				sc, cancel := context.WithCancel(context.Background())
				defer cancel()
				ctx = sc
			}
			buf := make([]byte, 2048)
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(`{}`))
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				resp.Body.Close()
			}
		})
	}
}
