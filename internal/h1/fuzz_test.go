package h1

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// FuzzAnswer feeds any bytes to the transport as an upstream's answer:
// RoundTrip and reading the body end (an answer or an error, never a panic
// or a hang).
func FuzzAnswer(f *testing.F) {
	for _, seed := range []string{
		okJSON,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
		"HTTP/1.1 103 Early Hints\r\n\r\n" + okJSON,
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody",
		"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
		"garbage\r\n\r\n",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		tr := &Transport{MaxIdle: 1, Dial: func(context.Context, string, string) (net.Conn, error) {
			c, s := net.Pipe()
			go func() {
				go io.Copy(io.Discard, s)
				io.WriteString(s, answer)
				s.Close()
			}()
			return c, nil
		}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPost, "http://upstream/v1/chat/completions", strings.NewReader(`{}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	})
}
