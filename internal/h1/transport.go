package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Transport is an http.RoundTripper for http:// upstreams: HTTP/1.1 over a
// pool of keep-alive connections, each request written and its answer read
// by the calling goroutine. The zero value is not usable; set Dial.
type Transport struct {
	// Dial opens a connection to host:port.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdle bounds the idle connections kept per host (0: none kept).
	MaxIdle int
	// IdleTimeout closes a connection idle for longer (0: 90 s).
	IdleTimeout time.Duration
	// ReadBufferSize and WriteBufferSize size each connection's buffers
	// (0: 4 KiB).
	ReadBufferSize, WriteBufferSize int
	// Now is the clock idle ages are measured on (nil: time.Now).
	Now func() time.Time

	mu   sync.Mutex
	idle map[string][]*conn // per host:port, oldest first

	readers, writers sync.Pool // *bufio.Reader, *bufio.Writer of the sizes above
}

var errSchemeNotHTTP = errors.New("h1: only http:// URLs")

const defaultIdleTimeout = 90 * time.Second

// conn is one upstream connection with its buffers.
type conn struct {
	t      *Transport
	nc     net.Conn
	br     *bufio.Reader // nil while idle, and while a body waits (wait)
	src    source        // what br reads
	key    string
	idleAt time.Time
	used   bool // has carried a request before this one

	// The socket, looked at without reading (peek): made once.
	raw    syscall.RawConn // nil when nc is not a socket
	rawErr error
	peekFn func(fd uintptr) bool
	peeked int                   // what peekFn saw last
	waitFn func(fd uintptr) bool // wait's; made once

	expire func() // puts a past deadline on nc (exchange); made once
}

// RoundTrip sends req on an idle connection to its host (or a new one) and
// reads the answer's head. The answer's body reads from the connection;
// reading it to its end returns the connection to the pool, closing it
// early closes the connection (docs/ARCHITECTURE.md, "Upstream
// connections").
//
// A request that fails while being written on a reused connection (the
// upstream closed it while idle) is sent again once on a new connection
// when its body can be had again (GetBody) or it has none. Nothing else is
// retried here: a reused connection that ends before the answer's first
// byte is a network error for the attempt loop, as net/http's Transport
// reports it for a POST.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	a, err := t.roundTrip(req)
	if err != nil {
		return nil, err
	}
	a.resp.Header = a.fields.Header()
	return &a.resp, nil
}

// RoundTripFields is RoundTrip for a caller that reads the answer's header
// fields through the Fields it returns, and makes no header map:
// resp.Header is nil. Fields lives as long as the answer.
func (t *Transport) RoundTripFields(req *http.Request) (*http.Response, *Fields, error) {
	a, err := t.roundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	return &a.resp, &a.fields, nil
}

// roundTrip is RoundTrip's work; a failure closes req's body.
func (t *Transport) roundTrip(req *http.Request) (*answer, error) {
	a, err := t.send(req)
	if err != nil && req.Body != nil {
		req.Body.Close()
	}
	return a, err
}

func (t *Transport) send(req *http.Request) (*answer, error) {
	if req.URL == nil || req.URL.Scheme != "http" {
		return nil, errSchemeNotHTTP
	}
	if err := validHeader(req.Header); err != nil {
		return nil, err
	}
	ctx := req.Context()
	addr := canonicalAddr(req.URL.Host)
	// second is the request sent again on a new connection: RoundTrip
	// closes the caller's body, the body had again is closed here.
	var second *http.Request
	fail := func(err error) (*answer, error) {
		if second != nil && second.Body != nil {
			second.Body.Close()
		}
		return nil, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		c, err := t.get(ctx, addr)
		if err != nil {
			return fail(err)
		}
		a, written, err := t.exchange(ctx, c, req)
		if err == nil {
			return a, nil
		}
		if second == nil && c.used && !written && ctx.Err() == nil {
			if body, berr := rewind(req); berr == nil {
				second = cloneWithBody(req, body)
				req = second
				continue
			}
		}
		return fail(err)
	}
}

// exchange writes req on c and reads the answer's head. written says
// whether the request left whole (a failure after that may have reached
// the upstream). On failure c is closed.
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request) (*answer, bool, error) {
	var stop watch
	if w, ok := ctx.(watchable); ok {
		// The router's own request context: watched without an
		// allocation (docs/ARCHITECTURE.md, "Request contexts").
		stop.w, stop.id = w, w.Watch(c.expireFunc())
	} else if ctx.Done() != nil {
		stop.stop = context.AfterFunc(ctx, c.expireFunc())
	}
	fail := func(err error, written bool) (*answer, bool, error) {
		stop.end()
		c.nc.Close()
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return nil, written, err
	}
	bw := t.writer(c.nc)
	err := writeRequest(bw, req)
	t.putWriter(bw)
	if err != nil {
		return fail(err, false)
	}
	budget := maxHeadBytes // for the answer's head and any 1xx before it
	for {
		a, err := readAnswer(c.br, req, &budget)
		if err != nil {
			return fail(err, true)
		}
		resp := &a.resp
		if resp.StatusCode >= 200 {
			if c.raw != nil && c.rawErr == nil && a.frame.kind != noBody {
				a.frame.c = c // a socket: the body waits without a buffer
			}
			a.body = body{t: t, c: c, rc: resp.Body, stop: stop,
				reuse: !resp.Close && !req.Close && framed(resp)}
			resp.Body = &a.body
			return a, true, nil
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return fail(errors.New("h1: unexpected 101 Switching Protocols"), true)
		}
		// 1xx informational: its head is all there is; the answer follows.
	}
}

// expireFunc is the function that puts a past deadline on c's socket,
// made once per connection (a function handed to a watch escapes).
func (c *conn) expireFunc() func() {
	if c.expire == nil {
		c.expire = func() { c.nc.SetDeadline(aLongTimeAgo) }
	}
	return c.expire
}

// watchable is a context that calls a function when it ends without an
// allocation: internal/reqctx's Ctx (Watch gives 0 when it has ended, and
// has then called f).
type watchable interface {
	Watch(f func()) (id uint64)
	Unwatch(id uint64) bool
}

// watch is an exchange's watch on its request's context, which puts a
// past deadline on the connection when the context ends: a watchable's
// own, or context.AfterFunc's for any other context that can end; the
// zero watch is none (a context that never ends).
type watch struct {
	w    watchable
	id   uint64
	stop func() bool
}

// end unregisters the watch; false when the context ended first (its
// deadline is on the connection).
func (w watch) end() bool {
	switch {
	case w.stop != nil:
		return w.stop()
	case w.w != nil:
		return w.w.Unwatch(w.id)
	}
	return true
}

// framed says whether the body's end is known without the connection
// closing (Content-Length, chunked or no body at all).
func framed(resp *http.Response) bool {
	if resp.ContentLength >= 0 {
		return true
	}
	for _, te := range resp.TransferEncoding {
		if te == "chunked" {
			return true
		}
	}
	return false
}

// writeRequest writes req's line, headers and body. The body is closed.
func writeRequest(bw *bufio.Writer, req *http.Request) (err error) {
	if req.Body != nil {
		defer func() {
			if cerr := req.Body.Close(); err == nil {
				err = cerr
			}
		}()
	}
	uri := req.URL.RequestURI()
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !httpguts.ValidHostHeader(host) || strings.ContainsAny(uri, " \r\n") || !validMethod(req.Method) {
		return fmt.Errorf("h1: invalid request line or host %q", host)
	}
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(uri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	for k, vs := range req.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection":
			continue
		}
		for _, v := range vs {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		bw.WriteString("User-Agent: llmrouter\r\n")
	}
	if req.Close {
		bw.WriteString("Connection: close\r\n")
	}
	chunked := false
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		if req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
			bw.WriteString("Content-Length: 0\r\n")
		}
	case req.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), req.ContentLength, 10))
		bw.WriteString("\r\n")
	default:
		chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
	if req.Body != nil && req.Body != http.NoBody {
		if chunked {
			cw := httputil.NewChunkedWriter(bw)
			if _, err := io.Copy(cw, req.Body); err != nil {
				return err
			}
			if err := cw.Close(); err != nil {
				return err
			}
			bw.WriteString("\r\n")
		} else {
			if err := copyBody(bw, req.Body, req.ContentLength); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// copyBody copies want bytes of body into bw. A body that fits in what is
// left of bw's buffer is read straight into it (io.Copy through an
// io.LimitReader allocates the limiter); a larger one goes through
// io.Copy, which hands the socket the reader once the buffer is flushed
// (large writes, not one per buffer). A body shorter than want is an
// error; bytes beyond want are not read.
func copyBody(bw *bufio.Writer, body io.Reader, want int64) error {
	var n int64
	if want > int64(bw.Available()) {
		var err error
		if n, err = io.Copy(bw, io.LimitReader(body, want)); err != nil {
			return err
		}
	} else {
		for n < want {
			buf := bw.AvailableBuffer()[:want-n]
			m, err := body.Read(buf)
			bw.Write(buf[:m])
			n += int64(m)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	if n != want {
		return fmt.Errorf("h1: body is %d bytes, ContentLength says %d", n, want)
	}
	return nil
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		if !httpguts.IsTokenRune(rune(m[i])) {
			return false
		}
	}
	return true
}

// validHeader refuses header names and values that would break the
// request's framing (a CR or LF smuggled in from a config value).
func validHeader(h http.Header) error {
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("h1: invalid header name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("h1: invalid value for header %q", k)
			}
		}
	}
	return nil
}

// rewind gives the request's body again for a second send.
func rewind(req *http.Request) (io.ReadCloser, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req.Body, nil
	}
	if req.GetBody == nil {
		return nil, errors.New("h1: body cannot be sent again")
	}
	return req.GetBody()
}

func cloneWithBody(req *http.Request, b io.ReadCloser) *http.Request {
	r := *req
	r.Body = b
	return &r
}

// canonicalAddr adds the default port to a host without one.
func canonicalAddr(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		return host + ":80"
	}
	return net.JoinHostPort(host, "80")
}

var aLongTimeAgo = time.Unix(1, 0)
