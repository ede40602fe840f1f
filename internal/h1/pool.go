package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/llmrouter/llmrouter/internal/sockio"
)

func (t *Transport) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// get takes the newest idle connection to addr that is still open, or
// dials a new one.
func (t *Transport) get(ctx context.Context, addr string) (*conn, error) {
	for {
		c := t.takeIdle(addr)
		if c == nil {
			break
		}
		if c.alive() {
			c.br = t.reader(&c.src)
			return c, nil
		}
		c.nc.Close()
	}
	nc, err := t.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	c := newConn(t, nc, addr)
	c.br = t.reader(&c.src)
	return c, nil
}

// dial dials addr on a goroutine of its own, whose stack ends with it:
// the dialer's frames (the resolver's too, for a host name) would
// otherwise grow the request's goroutine past 8 KiB, and a streaming
// request's goroutine keeps the stack it grew to until the stream ends
// (docs/BENCHMARKS.md, "Memory per stream"). The dial is ctx's as
// before: it ends when ctx does.
func (t *Transport) dial(ctx context.Context, addr string) (net.Conn, error) {
	type dialed struct {
		nc  net.Conn
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		nc, err := t.Dial(ctx, "tcp", addr)
		ch <- dialed{nc, err}
	}()
	d := <-ch
	if d.err != nil {
		return nil, d.err
	}
	// Reads and writes as raw system calls (internal/sockio).
	return sockio.Wrap(d.nc), nil
}

// A connection holds a read buffer only while it carries an answer, and a
// write buffer only while its request is written: an idle connection, or
// one relaying a long stream, costs no write buffer and (idle) no read
// buffer either.
func (t *Transport) reader(r io.Reader) *bufio.Reader {
	if br, ok := t.readers.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, size(t.ReadBufferSize))
}

func (t *Transport) putReader(br *bufio.Reader) {
	br.Reset(nil)
	t.readers.Put(br)
}

// source is what a connection's read buffer reads: the socket, or inside
// wait's callback its descriptor, read as net's conn reads it (EINTR
// retried, 0 bytes io.EOF, a failure a *net.OpError) but without waiting:
// EAGAIN is errAgain.
type source struct {
	nc  net.Conn
	fd  int   // >= 0: the descriptor, inside wait's callback
	err error // the descriptor's read ended with it (io.EOF, a failure): every later read does
}

var errAgain = errors.New("h1: nothing to read yet")

func (s *source) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.fd < 0 {
		return s.nc.Read(p)
	}
	n, errno := sockio.Read(s.fd, p)
	switch {
	case errno == syscall.EAGAIN:
		return 0, errAgain
	case errno != 0:
		s.err = &net.OpError{Op: "read", Net: s.nc.LocalAddr().Network(), Source: s.nc.LocalAddr(), Addr: s.nc.RemoteAddr(),
			Err: os.NewSyscallError("read", errno)}
		return 0, s.err
	case n == 0 && len(p) > 0:
		s.err = io.EOF
		return 0, io.EOF
	}
	return n, nil
}

// wait is a body's read when c's read buffer is empty: the buffer goes
// back to the pool, and one is taken again only when the socket has bytes
// (or its end), read into it at once. The system calls are those of a
// read through the buffer (a read that finds nothing, the wait, the read
// that finds the bytes), so a stream between events costs no read buffer
// (docs/BENCHMARKS.md, "Memory per stream"). It returns c.br, holding
// bytes, or empty when the wait failed (a deadline, the connection
// closed): then the buffer's read through the socket gives net's error.
func (c *conn) wait() *bufio.Reader {
	t := c.t
	t.putReader(c.br)
	c.br = nil
	if c.waitFn == nil {
		// Once per connection: a closure given to RawConn.Read escapes.
		c.waitFn = func(fd uintptr) bool {
			br := t.reader(&c.src)
			c.src.fd = int(fd)
			_, err := br.Peek(1) // the read into br's buffer (source.Read)
			c.src.fd = -1
			if err == errAgain {
				t.putReader(br)
				return false // the poller waits; then the read again
			}
			c.br = br // bytes, or the end (in c.src.err)
			return true
		}
	}
	if err := c.raw.Read(c.waitFn); err != nil {
		c.br = t.reader(&c.src)
	}
	return c.br
}

func (t *Transport) writer(nc net.Conn) *bufio.Writer {
	if bw, ok := t.writers.Get().(*bufio.Writer); ok {
		bw.Reset(nc)
		return bw
	}
	return bufio.NewWriterSize(nc, size(t.WriteBufferSize))
}

func (t *Transport) putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	t.writers.Put(bw)
}

func size(n int) int {
	if n <= 0 {
		return 4 << 10
	}
	return n
}

// takeIdle pops the newest idle connection to addr, closing those idle for
// longer than IdleTimeout.
func (t *Transport) takeIdle(addr string) *conn {
	timeout := t.IdleTimeout
	if timeout <= 0 {
		timeout = defaultIdleTimeout
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	list := t.idle[addr]
	if len(list) == 0 {
		return nil
	}
	// Oldest first: the stale ones are a prefix.
	stale := 0
	for stale < len(list) && now.Sub(list[stale].idleAt) > timeout {
		list[stale].nc.Close()
		list[stale] = nil
		stale++
	}
	if stale > 0 {
		list = append(list[:0], list[stale:]...)
	}
	if len(list) == 0 {
		t.idle[addr] = list
		return nil
	}
	c := list[len(list)-1]
	list[len(list)-1] = nil
	t.idle[addr] = list[:len(list)-1]
	return c
}

// put returns c to the pool, or closes it when the pool is full.
func (t *Transport) put(c *conn) {
	if c.br.Buffered() > 0 {
		c.nc.Close() // bytes nobody asked for: the framing is off
		return
	}
	t.putReader(c.br)
	c.br = nil
	c.used = true
	c.idleAt = t.now()
	t.mu.Lock()
	if len(t.idle[c.key]) >= t.MaxIdle {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	if t.idle == nil {
		t.idle = make(map[string][]*conn)
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	t.mu.Unlock()
}

// CloseIdleConnections closes every idle connection; connections in use
// are closed when their answer ends. http.Client.CloseIdleConnections
// calls it; a provider removed by a reload ends with it.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
}

// newConn is nc, to addr, reading through br.
func newConn(t *Transport, nc net.Conn, addr string) *conn {
	c := &conn{t: t, nc: nc, key: addr, src: source{nc: nc, fd: -1}}
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, c.rawErr = sc.SyscallConn()
		// Made once per connection, not per look: a closure passed to
		// RawConn.Read escapes.
		c.peekFn = func(fd uintptr) bool {
			c.peeked = sockio.Peek(int(fd))
			return true
		}
	}
	return c
}

// alive says whether an idle connection is still open: the upstream has
// neither closed it nor sent anything unasked (both make it unusable).
func (c *conn) alive() bool { return c.peek() == 0 }

// readable says whether a read on the connection would return bytes at
// once.
func (c *conn) readable() bool { return c.peek() > 0 }

// peek looks at the socket without waiting or consuming: 0 when nothing
// has arrived, 1 when bytes have, -1 when the upstream closed it or it
// failed. A connection that cannot be asked (not a socket) reports 0. It
// allocates nothing (one system call, recvfrom with MSG_PEEK).
func (c *conn) peek() int {
	if c.peekFn == nil {
		return 0
	}
	if c.rawErr != nil {
		return -1
	}
	if err := c.raw.Read(c.peekFn); err != nil {
		return -1
	}
	return c.peeked
}

// body is an answer's body on a pooled connection: its end returns the
// connection to the pool, anything else closes it. Unlike net/http's, it
// is for one goroutine: Read and Close are not called at once (the
// adapters read and close a body from the request's goroutine); what
// interrupts a blocked Read is the request's context.
type body struct {
	t     *Transport
	c     *conn
	rc    io.ReadCloser // the framing reader (answer.go: length, chunked, to the end) or http.NoBody
	stop  watch         // the context's deadline-setter
	reuse bool
	done  bool
	err   error
}

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish(true)
		return n, io.EOF
	}
	if err != nil {
		b.finish(false)
		b.err = err
	}
	return n, err
}

// Close ends the body. Before its end, what has already arrived of it is
// read without waiting (the end of a chunked body usually arrives right
// behind a stream's last event); if that reaches the end the connection
// is kept, otherwise it is closed. When nothing more has arrived at all,
// the rest is awaited instead, for at most drainWait on a goroutine of
// its own (the caller does not wait): a stream closed at its last event
// would otherwise cost a new connection to the next request whenever
// the upstream's final chunk is a moment behind its last event, as it
// is at low concurrency.
func (b *body) Close() error {
	if b.done {
		return nil
	}
	if b.reuse {
		if b.c.br.Buffered() == 0 && b.c.peek() == 0 {
			// The framing has read nothing since the caller's last read:
			// its state is whole, and the goroutine takes it over. The
			// context's deadline-setter is stopped first: once it fired,
			// its deadline is on the connection, which cannot be kept.
			if b.stop.end() {
				b.stop = watch{}
				b.done = true
				b.err = errBodyClosed
				go b.drainLater()
				return nil
			}
		} else if b.drain() {
			b.finish(true)
			return nil
		}
	}
	b.finish(false)
	b.err = errBodyClosed
	return nil
}

// drainWait bounds how long a closed body's end is awaited before its
// connection is closed (Close).
const drainWait = 50 * time.Millisecond

// drainLater reads the rest of a closed body for at most drainWait and
// 32 KiB, then keeps the connection if that reached the body's end and
// closes it otherwise. It owns the connection: Close handed it over.
func (b *body) drainLater() {
	b.c.nc.SetReadDeadline(time.Now().Add(drainWait))
	var buf [512]byte
	for range 64 {
		_, err := b.rc.Read(buf[:])
		if err == io.EOF {
			b.c.nc.SetReadDeadline(time.Time{})
			b.settle(true)
			return
		}
		if err != nil {
			break
		}
	}
	b.settle(false)
}

// drain reads what has arrived of the body, without waiting, and says
// whether that reached its end. At most one read of the socket happens,
// and only when it holds bytes; then a read deadline in the past makes
// any read that would wait fail at once. Bounded to 32 KiB.
func (b *body) drain() bool {
	br := b.c.br
	if br.Buffered() < br.Size() && b.c.readable() {
		br.Peek(br.Buffered() + 1)
	}
	b.c.nc.SetReadDeadline(aLongTimeAgo)
	var buf [512]byte
	for range 64 {
		_, err := b.rc.Read(buf[:])
		if err == io.EOF {
			b.c.nc.SetReadDeadline(time.Time{})
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

var errBodyClosed = errors.New("h1: read on closed response body")

// finish settles the connection once: back to the pool when the body
// ended properly on a connection that may be kept and the request's
// context did not fire, closed otherwise.
func (b *body) finish(ended bool) {
	b.done = true
	keep := ended && b.reuse
	if !b.stop.end() {
		keep = false // the context fired: its deadline is on the connection
	}
	b.settle(keep)
}

// settle keeps the connection (keep) or closes it, and leaves the
// framing holding no read buffer.
func (b *body) settle(keep bool) {
	if f, ok := b.rc.(*framing); ok {
		f.br, f.c = nil, nil // the read buffer is the pool's or the next answer's now
	}
	if keep {
		b.t.put(b.c)
		return
	}
	b.c.nc.Close()
	if b.c.br != nil {
		b.t.putReader(b.c.br)
		b.c.br = nil
	}
}
