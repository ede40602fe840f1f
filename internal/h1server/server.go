package h1server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmrouter/llmrouter/internal/reqctx"
	"github.com/llmrouter/llmrouter/internal/sockio"
)

// Server serves HTTP/1.1 on a listener (see the package doc). Set its
// fields before Serve; they are not changed afterwards.
type Server struct {
	// Handler answers every request.
	Handler http.Handler
	// ReadHeaderTimeout bounds the reading of a request's head, from its
	// first byte; 0: no bound.
	ReadHeaderTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection; 0: ReadHeaderTimeout.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's head (request line and headers);
	// as net/http, 4 KiB more are allowed. 0: http.DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxConns bounds the open connections, hijacked ones included:
	// past it, connections wait in the kernel's accept queue (as
	// netutil.LimitListener). 0: no bound.
	MaxConns int
	// Logger receives the server's warnings (handler panics, superfluous
	// WriteHeader calls); nil: slog.Default().
	Logger *slog.Logger
	// ConnState, if not nil, is told of each connection's StateNew,
	// StateHijacked and StateClosed.
	ConnState func(net.Conn, http.ConnState)

	shutting atomic.Bool // Shutdown or Close began

	mu         sync.Mutex // guards the fields below
	ln         net.Listener
	conns      map[*conn]struct{}
	onShutdown []func()
	watch      *watcher
	stopped    chan struct{} // closed when shutting and no connection is left
	sem        chan struct{} // one token per open connection (MaxConns)
}

// Serve accepts connections on ln and serves each in its own goroutine
// until Shutdown or Close; it then returns http.ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.conns = map[*conn]struct{}{}
	s.stopped = make(chan struct{})
	if s.MaxConns > 0 {
		s.sem = make(chan struct{}, s.MaxConns)
	}
	w, err := newWatcher()
	if err != nil {
		s.logf("h1server: no disconnect watcher: %v", err)
	}
	s.watch = w
	sem := s.sem
	s.mu.Unlock()
	var delay time.Duration // after a temporary accept error
	for {
		if sem != nil {
			sem <- struct{}{} // freed by a connection's end, or Close
		}
		nc, err := ln.Accept()
		if err != nil {
			if sem != nil {
				<-sem
			}
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			if t, ok := err.(interface{ Temporary() bool }); ok && t.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logf("http: Accept error: %v; retrying in %v", err, delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		c := s.newConn(nc)
		if c == nil {
			continue
		}
		go c.serve()
	}
}

// RegisterOnShutdown registers f to be called, in its own goroutine, when
// Shutdown begins: the owner of hijacked connections drains them.
func (s *Server) RegisterOnShutdown(f func()) {
	s.mu.Lock()
	s.onShutdown = append(s.onShutdown, f)
	s.mu.Unlock()
}

// Shutdown stops accepting, closes idle connections, and waits until
// every request in flight is answered and its connection closed, or ctx
// ends: then it returns ctx's error (the caller then calls Close). It
// does not wait for hijacked connections.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	s.mu.Lock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	for _, f := range s.onShutdown {
		go f()
	}
	for c := range s.conns {
		c.closeIfIdle()
	}
	stopped := s.stopped
	s.checkStoppedLocked()
	s.mu.Unlock()
	if stopped == nil {
		return nil // never served
	}
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting and ends every connection at once: its request's
// context is cancelled and its reads and writes fail.
func (s *Server) Close() error {
	s.shutting.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.kill()
	}
	s.checkStoppedLocked()
	return err
}

// checkStoppedLocked closes stopped and ends the watcher once shutting
// and no connection is left.
func (s *Server) checkStoppedLocked() {
	if !s.shutting.Load() || len(s.conns) > 0 || s.stopped == nil {
		return
	}
	select {
	case <-s.stopped:
	default:
		close(s.stopped)
		if s.watch != nil {
			s.watch.stop()
		}
	}
}

func (s *Server) logf(format string, args ...any) {
	l := s.Logger
	if l == nil {
		l = slog.Default()
	}
	l.Warn(fmt.Sprintf(format, args...))
}

func (s *Server) maxHead() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes + 4096
	}
	return http.DefaultMaxHeaderBytes + 4096
}

// Connection states: a connection waiting for a request's first byte
// is idle and Shutdown may close it; one that is reading or answering a
// request is active.
const (
	stateActive int32 = iota
	stateIdle
	stateClosing
)

// conn is one client connection, served by one goroutine (serve) that
// reads a request, runs the handler and writes the answer, in turn.
type conn struct {
	s      *Server
	nc     net.Conn
	sock   buffersWriter // nc, when it is a *sockio.Conn: its writes of several buffers are one writev
	br     *bufio.Reader // nil while it would hold no bytes (buffers.go)
	remote string
	state  atomic.Int32
	killed atomic.Bool // Close ended it: writes fail
	// The serving goroutine's buffers: out the answer's body bytes not
	// yet written (nil when there are none: buffers.go); iov the pieces
	// of one write.
	out []byte
	iov net.Buffers
	// req is the request's head as parsed.
	req  request
	wfd  int    // the fd the watcher knows it by; -1 unwatched
	wid  uint32 // its registration, against fd reuse
	done bool   // the connection is finished with (closed or hijacked)
	// linger: close by shutting down the write side and reading what the
	// client still sends for a moment, so that a reset does not destroy
	// the answer before the client read it (a body left unread).
	linger bool
	// rdNone: the socket is to have no read deadline, not yet applied
	// (readDeadlineNone): the head's deadline, or the one a handler
	// cleared, stays on the socket until a read may reach it, or the
	// next request's idle or head deadline replaces it. A plain request
	// changes the socket's read timer twice less (docs/ARCHITECTURE.md,
	// "The API listener").
	rdNone bool

	mu   sync.Mutex  // guards ctx and gone
	ctx  *reqctx.Ctx // the request in flight's; nil between requests
	gone bool        // the peer hung up
}

// outSize is the body bytes an answer buffers before it is sent.
const outSize = 4 << 10

// buffersWriter is a connection that writes several buffers at once
// itself (internal/sockio's Conn, on Linux): net.Buffers.WriteTo would
// reach the *net.TCPConn it embeds and write through net instead.
type buffersWriter interface {
	WriteBuffers(v *net.Buffers) (int64, error)
}

func (s *Server) newConn(nc net.Conn) *conn {
	// Reads and writes as raw system calls (internal/sockio).
	nc = sockio.Wrap(nc)
	c := &conn{s: s, nc: nc, remote: nc.RemoteAddr().String(), wfd: -1}
	c.sock, _ = nc.(buffersWriter)
	c.state.Store(stateIdle)
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		_ = nc.Close()
		if s.sem != nil {
			<-s.sem
		}
		return nil
	}
	s.conns[c] = struct{}{}
	if s.watch != nil {
		s.watch.add(c)
	}
	s.mu.Unlock()
	if s.ConnState != nil {
		s.ConnState(nc, http.StateNew)
	}
	return c
}

// peerGone is the watcher's news that the client hung up: the request in
// flight is cancelled, as net/http's background read does.
func (c *conn) peerGone() {
	c.mu.Lock()
	c.gone = true
	ctx := c.ctx
	c.mu.Unlock()
	if ctx != nil {
		ctx.Cancel(nil)
	}
}

// setCtx installs the context of the request in flight (nil: none).
func (c *conn) setCtx(ctx *reqctx.Ctx) {
	c.mu.Lock()
	c.ctx = ctx
	gone := c.gone
	c.mu.Unlock()
	if gone && ctx != nil {
		ctx.Cancel(nil)
	}
}

// closeIfIdle wakes an idle connection's read so that it closes.
func (c *conn) closeIfIdle() {
	if c.state.CompareAndSwap(stateIdle, stateClosing) {
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
	}
}

// kill ends the connection from another goroutine: its request is
// cancelled and its reads and writes fail; its own goroutine closes it.
func (c *conn) kill() {
	c.killed.Store(true)
	c.state.Store(stateClosing)
	_ = c.nc.SetDeadline(aLongTimeAgo)
	c.peerGone()
}

var aLongTimeAgo = time.Unix(1, 0)

func (c *conn) serve() {
	defer c.end()
	for {
		if !c.awaitRequest() {
			return
		}
		h := getHead()
		hb, lines, err := readHead(c.br, h.b, c.s.maxHead())
		if err == nil {
			err = parseHead(hb, lines, &c.req) // copies what it keeps
		}
		h.b = hb
		putHead(h)
		if err != nil {
			c.req.release()
			c.refuse(err)
			return
		}
		c.rdNone = true
		keep, hijacked := c.serveRequest(&c.req)
		if !hijacked {
			c.req.release()
		}
		if !keep {
			return
		}
	}
}

// awaitRequest waits for the next request's first byte, within
// IdleTimeout, then starts ReadHeaderTimeout; false: close.
func (c *conn) awaitRequest() bool {
	s := c.s
	if c.br == nil {
		c.br = getReader(c.nc)
	}
	if c.br.Buffered() == 0 {
		idle := s.IdleTimeout
		if idle == 0 {
			idle = s.ReadHeaderTimeout
		}
		if idle > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		c.rdNone = false
		c.state.Store(stateIdle)
		if s.shutting.Load() {
			return false
		}
		if _, err := c.br.Peek(1); err != nil {
			return false
		}
		if !c.state.CompareAndSwap(stateIdle, stateActive) {
			return false
		}
	} else if s.shutting.Load() {
		return false
	}
	if d := s.ReadHeaderTimeout; d > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
		c.rdNone = false
	} else {
		c.readDeadlineNone()
	}
	return true
}

// readDeadlineNone applies a pending rdNone: before a read that may
// reach the socket. A killed connection keeps its past deadline.
func (c *conn) readDeadlineNone() {
	if c.rdNone {
		c.rdNone = false
		if !c.killed.Load() {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
	}
}

// refuse answers a request the server does not pass on (a statusError)
// and closes; a read error (EOF, timeout) closes without an answer.
func (c *conn) refuse(err error) {
	var se *statusError
	if !errors.As(err, &se) {
		return
	}
	text := http.StatusText(se.code)
	msg := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n%d %s: %s",
		se.code, text, se.code, text, se.text)
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c.nc, msg)
	c.linger = true
}

// exchange is one request's context, writer and body, in one allocation
// that is the request's own, never reused: what acts on the connection
// or ends with the request stays the request's, so that a goroutine a
// handler left behind gets the request's end (its context cancelled, a
// write's errHandlerDone, a read's http.ErrBodyReadAfterClose), never
// the next request's context, answer or body. The head's storage, which
// handlers only read, is reused (parsedHead).
type exchange struct {
	ctx reqctx.Ctx
	w   response
	b   body
}

// serveRequest runs the handler for r and completes its answer; keep
// false: the connection is not to be used again; hijacked: the handler
// took the connection, and r's head with it.
func (c *conn) serveRequest(r *request) (keep, hijacked bool) {
	ex := new(exchange)
	ctx := &ex.ctx
	defer ctx.Cancel(nil)
	var b *body
	if r.contentLength != 0 {
		ex.b = body{c: c, n: r.contentLength}
		b = &ex.b
	} else {
		c.releaseReader()
	}
	req, err := r.build(ctx, c.remote, b)
	if err != nil {
		c.refuse(err)
		return false, false
	}
	w := &ex.w
	// The header map is the request's own, not the connection's reused:
	// a handler's goroutine that outlives it must not reach the next
	// answer's headers. Made when first asked for: the router's answers
	// set their own fields outside it (SetField) and the few left in it
	// (Content-Type, a stream's Cache-Control…) keep it within eight
	// entries, two allocations where more than eight cost four.
	*w = response{c: c, req: r, body: b, length: -1}
	if r.expectContinue {
		ex.b.cont = w.sendContinue
	}
	c.setCtx(ctx)
	ok := c.run(w, req)
	c.setCtx(nil)
	if w.hijacked {
		return false, true
	}
	if !ok {
		c.linger = b != nil
		return false, false
	}
	w.finish()
	if b != nil {
		b.closed = true
		if b.err != io.EOF {
			w.closeAfter = true
			c.linger = true
		}
	}
	return !w.closeAfter && !c.s.shutting.Load(), false
}

// run runs the handler, recovering a panic as net/http does: logged
// (unless http.ErrAbortHandler) and the connection closed.
func (c *conn) run(w *response, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.s.logf("http: panic serving %v: %v\n%s", c.remote, p, buf)
			}
			ok = false
		}
	}()
	c.s.Handler.ServeHTTP(w, req)
	return true
}

// hijack hands the connection over: unwatched, no longer counted as
// open, its slot of MaxConns held until the handler closes it.
func (c *conn) hijack() net.Conn {
	c.done = true
	c.unwatch()
	s := c.s
	s.mu.Lock()
	delete(s.conns, c)
	s.checkStoppedLocked()
	s.mu.Unlock()
	if s.ConnState != nil {
		s.ConnState(c.nc, http.StateHijacked)
	}
	if s.sem == nil {
		return c.nc
	}
	return &hijacked{Conn: c.nc, release: func() { <-s.sem }}
}

// hijacked is a hijacked connection that frees its MaxConns slot when
// closed.
type hijacked struct {
	net.Conn
	once    sync.Once
	release func()
}

func (h *hijacked) Close() error {
	err := h.Conn.Close()
	h.once.Do(h.release)
	return err
}

func (c *conn) unwatch() {
	if c.wfd >= 0 {
		c.s.watch.remove(c)
	}
}

// lingerTime bounds a lingering close (net/http's rstAvoidanceDelay).
const lingerTime = 500 * time.Millisecond

// end closes the connection unless hijacked.
func (c *conn) end() {
	if c.done {
		return
	}
	c.done = true
	c.unwatch()
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok && c.linger && !c.killed.Load() {
		_ = cw.CloseWrite()
		_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
		_, _ = io.Copy(io.Discard, c.nc)
	}
	_ = c.nc.Close()
	if c.br != nil {
		putReader(c.br)
		c.br = nil
	}
	c.releaseOut()
	s := c.s
	if s.sem != nil {
		<-s.sem
	}
	if s.ConnState != nil {
		s.ConnState(c.nc, http.StateClosed)
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.checkStoppedLocked()
	s.mu.Unlock()
}
