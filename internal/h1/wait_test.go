package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parkConn is a TCP connection whose raw reads call parked each time the
// read's callback finds nothing and the goroutine is about to wait.
type parkConn struct {
	*net.TCPConn
	parked func()
}

func (p parkConn) SyscallConn() (syscall.RawConn, error) {
	rc, err := p.TCPConn.SyscallConn()
	return parkRaw{rc, p.parked}, err
}

type parkRaw struct {
	syscall.RawConn
	parked func()
}

func (r parkRaw) Read(f func(uintptr) bool) error {
	return r.RawConn.Read(func(fd uintptr) bool {
		if f(fd) {
			return true
		}
		r.parked()
		return false
	})
}

// TestBufferBetweenEvents: a stream's body waiting for its next event
// holds no read buffer, and what then happens to the connection (the
// event arrives, the upstream hangs up, the request is cancelled) reads as
// it did through a held buffer; the connection is pooled only after a
// whole body.
func TestBufferBetweenEvents(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	ev1, ev2 := "data: 1\n\n", "data: 2\n\n"
	tests := []struct {
		name    string
		then    string // what happens while the body waits: send, hang up, cancel
		body    string
		wantErr error // nil: the body ends cleanly
	}{
		{"event arrives", "send", ev1 + ev2, nil},
		{"upstream hangs up", "hang up", ev1, io.ErrUnexpectedEOF},
		{"request cancelled", "cancel", ev1, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			next := make(chan struct{})
			served := make(chan struct{})
			go func() {
				defer close(served)
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				if _, err := http.ReadRequest(bufio.NewReader(nc)); err != nil {
					return
				}
				io.WriteString(nc, head+chunked(ev1)[:len(chunked(ev1))-len("0\r\n\r\n")])
				select {
				case <-next:
				case <-time.After(5 * time.Second):
					return // the body never waited without its buffer: end it
				}
				switch tt.then {
				case "send":
					io.WriteString(nc, chunked(ev2))
					io.Copy(io.Discard, nc) // until the transport closes it
				case "cancel":
					io.Copy(io.Discard, nc)
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var c *conn
			parks, held := 0, false
			tr := &Transport{MaxIdle: 4, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return parkConn{nc.(*net.TCPConn), func() {
					parks++
					held = held || c.br != nil
					if parks == 1 {
						if tt.then == "cancel" {
							cancel()
						}
						close(next)
					}
				}}, nil
			}}
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions", strings.NewReader(`{}`))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			c = resp.Body.(*body).c
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.then == "cancel" && err != nil && ctx.Err() != nil {
				err = ctx.Err() // as the adapters read a failure once the context ended
			}
			if string(got) != tt.body || !errors.Is(err, tt.wantErr) {
				t.Errorf("body %q, %v; want %q, %v", got, err, tt.body, tt.wantErr)
			}
			if parks == 0 || held {
				t.Errorf("waits %d, a read buffer held during one %v: want a wait without one", parks, held)
			}
			tr.mu.Lock()
			pooled := len(tr.idle[ln.Addr().String()])
			tr.mu.Unlock()
			if want := tt.wantErr == nil; (pooled == 1) != want || c.br != nil {
				t.Errorf("pooled %d, read buffer kept %v; want pooled %v, no buffer", pooled, c.br != nil, want)
			}
			tr.CloseIdleConnections()
			<-served
		})
	}
}

// FuzzChunked: on the same bytes, read in the same sizes, chunkReader
// gives the same bytes and the same error as httputil's chunked reader
// (net/http's), through a buffer of the same size.
func FuzzChunked(f *testing.F) {
	for _, s := range []string{
		chunked("hello", "world"),
		chunked("data: 1\n\n"),
		"5\r\nhel",
		"5;ext=1\r\nhello\r\n0\r\n\r\n",
		"5 \t\r\nhello\r\n0\r\n",
		"5\nhello\r\n0\r\n",
		"5\r\nhelloXX0\r\n",
		"10000000000000000\r\n",
		"\r\n",
		"g\r\n",
		"1\r\nx\r\n1\r\ny\r\n1\r\nz\r\n0\r\n\r\n",
		strings.Repeat("1;"+strings.Repeat("e", 100)+"\r\nx\r\n", 200),
		"",
	} {
		f.Add(s, uint8(7), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in string, readSize, size uint8) {
		rs := int(readSize)%64 + 1
		bs := []int{16, 64, 4096}[int(size)%3]
		theirs := httputil.NewChunkedReader(bufio.NewReaderSize(strings.NewReader(in), bs))
		var cr chunkReader
		br := bufio.NewReaderSize(strings.NewReader(in), bs)
		tb, terr := readIn(theirs.Read, rs)
		ob, oerr := readIn(func(p []byte) (int, error) { return cr.read(br, p) }, rs)
		if tb != ob || errText(terr) != errText(oerr) {
			t.Fatalf("%q, reads of %d, buffer %d: net/http %q %v, ours %q %v", in, rs, bs, tb, terr, ob, oerr)
		}
	})
}

// readIn reads with read in reads of n bytes to its first error.
func readIn(read func([]byte) (int, error), n int) (string, error) {
	var out []byte
	buf := make([]byte, n)
	for range 1 << 16 {
		m, err := read(buf)
		out = append(out, buf[:m]...)
		if err != nil {
			return string(out), err
		}
	}
	return string(out), errors.New("no end")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
