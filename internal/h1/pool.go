package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
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
			c.br = t.reader(c.nc)
			return c, nil
		}
		c.nc.Close()
	}
	nc, err := t.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	return newConn(nc, t.reader(nc), addr), nil
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
	return d.nc, d.err
}

// A connection holds a read buffer only while it carries an answer, and a
// write buffer only while its request is written: an idle connection, or
// one relaying a long stream, costs no write buffer and (idle) no read
// buffer either.
func (t *Transport) reader(nc net.Conn) *bufio.Reader {
	if br, ok := t.readers.Get().(*bufio.Reader); ok {
		br.Reset(nc)
		return br
	}
	return bufio.NewReaderSize(nc, size(t.ReadBufferSize))
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
	c.br.Reset(nil)
	t.readers.Put(c.br)
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
func newConn(nc net.Conn, br *bufio.Reader, addr string) *conn {
	c := &conn{nc: nc, br: br, key: addr}
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, c.rawErr = sc.SyscallConn()
		// Made once per connection, not per look: a closure passed to
		// RawConn.Read escapes.
		c.peekFn = func(fd uintptr) bool {
			n, _, err := syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
				c.peeked = 0
			case err != nil || n == 0:
				c.peeked = -1
			default:
				c.peeked = 1
			}
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
			b.t.put(b.c)
			return
		}
		if err != nil {
			break
		}
	}
	b.c.nc.Close()
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
	if keep {
		b.t.put(b.c)
		return
	}
	b.c.nc.Close()
}
