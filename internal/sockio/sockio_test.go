//go:build linux

package sockio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pair is a connected loopback TCP pair: a wrapped (the *Conn under
// test) and b, net's own conn at the other end.
func pair(t *testing.T) (*Conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-ch
	if peer == nil {
		t.Fatal("accept failed")
	}
	c, ok := Wrap(nc).(*Conn)
	if !ok {
		t.Fatalf("Wrap(%T) did not wrap", nc)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c, peer.(*net.TCPConn)
}

func TestWrapLeavesOthers(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := Wrap(a); got != a {
		t.Errorf("Wrap(pipe) = %T, want the pipe itself", got)
	}
}

// TestReadWrite: bytes both ways, and the end of the peer's writing is
// io.EOF, as on net's conn.
func TestReadWrite(t *testing.T) {
	c, peer := pair(t)
	if n, err := c.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	buf := make([]byte, 16)
	if n, err := io.ReadFull(peer, buf[:5]); n != 5 || err != nil || string(buf[:5]) != "hello" {
		t.Fatalf("peer read %q, %v", buf[:n], err)
	}
	if _, err := peer.Write([]byte("world")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(c, buf[:5]); n != 5 || err != nil || string(buf[:5]) != "world" {
		t.Fatalf("Read %q, %v", buf[:n], err)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v; want 0, nil", n, err)
	}
	_ = peer.CloseWrite()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("Read after the peer's end = %d, %v; want 0, io.EOF", n, err)
	}
}

// TestWriteWaits: a write larger than the socket's buffers waits in the
// poller (EAGAIN) and completes once the peer reads; every byte arrives
// in order.
func TestWriteWaits(t *testing.T) {
	c, peer := pair(t)
	_ = c.SetWriteBuffer(4 << 10)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<20/16) // 1 MiB: far beyond both sockets' buffers
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(20 * time.Millisecond) // the writer finds the buffers full first
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	if n, err := c.Write(want); n != len(want) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	_ = c.CloseWrite()
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("peer read %d bytes, not the %d written", len(b), len(want))
	}
}

// TestWriteBuffers: more buffers than one writev takes, empty ones among
// them, a total beyond the socket's buffers; written in order, *v
// consumed, and no reference to them kept.
func TestWriteBuffers(t *testing.T) {
	c, peer := pair(t)
	_ = c.SetWriteBuffer(4 << 10)
	var v net.Buffers
	var want []byte
	for i := range 21 {
		b := bytes.Repeat([]byte{byte('a' + i)}, i*3<<10)
		v = append(v, b, nil)
		want = append(want, b...)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	n, err := c.WriteBuffers(&v)
	if n != int64(len(want)) || err != nil {
		t.Fatalf("WriteBuffers = %d, %v; want %d, nil", n, err, len(want))
	}
	if len(v) != 0 {
		t.Errorf("%d buffers left unconsumed", len(v))
	}
	for i, b := range c.iov {
		if b.Base != nil {
			t.Errorf("iov[%d] still points at the caller's bytes", i)
		}
	}
	_ = c.CloseWrite()
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("peer read %d bytes, not the %d written in order", len(b), len(want))
	}
}

// TestErrors: a deadline, a closed conn and a reset come back as net's
// conn gives them (errors.Is and net.Error as callers test them).
func TestErrors(t *testing.T) {
	c, peer := pair(t)
	buf := make([]byte, 8)

	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(buf)
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("Read past its deadline: %v; want a timeout (os.ErrDeadlineExceeded)", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" || oe.Source == nil || oe.Addr == nil {
		t.Errorf("Read's error %#v is not net's *OpError with its addresses", err)
	}
	_ = c.SetReadDeadline(time.Time{})

	// The peer resets: SO_LINGER 0 then close sends RST.
	_ = peer.SetLinger(0)
	_ = peer.Close()
	// The Read waits in the poller until the reset arrives.
	if _, err := c.Read(buf); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("Read after a reset: %v; want ECONNRESET", err)
	}
	if _, err := c.Write([]byte("x")); err == nil {
		// A reset socket fails writes at once (EPIPE or ECONNRESET).
		t.Error("Write after a reset succeeded")
	}

	_ = c.Close()
	if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v; want net.ErrClosed", err)
	}
	if _, err := c.Write(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v; want net.ErrClosed", err)
	}
	v := net.Buffers{buf}
	if _, err := c.WriteBuffers(&v); !errors.Is(err, net.ErrClosed) {
		t.Errorf("WriteBuffers after Close: %v; want net.ErrClosed", err)
	}
}

// TestCloseWakesRead: a Read waiting in the poller returns when the conn
// is closed from another goroutine.
func TestCloseWakesRead(t *testing.T) {
	c, _ := pair(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	_ = c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Read = %v; want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still waiting after Close")
	}
}

// TestConcurrent: several readers and writers at once lose and mix no
// bytes (run with -race).
func TestConcurrent(t *testing.T) {
	c, peer := pair(t)
	const writers, each = 4, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			msg := []byte{byte('A' + w), byte('A' + w), byte('A' + w), byte('A' + w)}
			for i := range each {
				if i%2 == 0 {
					_, _ = c.Write(msg)
				} else {
					v := net.Buffers{msg[:2], msg[2:]}
					_, _ = c.WriteBuffers(&v)
				}
			}
		})
	}
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, writers*each*4)
		_, _ = io.ReadFull(peer, b)
		got <- b
	}()
	wg.Wait()
	b := <-got
	count := map[byte]int{}
	for i := 0; i < len(b); i += 4 {
		if b[i] != b[i+1] || b[i] != b[i+2] || b[i] != b[i+3] {
			t.Fatalf("message at %d mixed: %q", i, b[i:i+4])
		}
		count[b[i]]++
	}
	for w := range writers {
		if count[byte('A'+w)] != each {
			t.Errorf("writer %d: %d messages arrived, want %d", w, count[byte('A'+w)], each)
		}
	}

	// Readers at once: every byte the peer sends is read exactly once.
	go func() { _, _ = peer.Write(bytes.Repeat([]byte("z"), 64<<10)); _ = peer.CloseWrite() }()
	var total int
	var mu sync.Mutex
	var rg sync.WaitGroup
	for range 3 {
		rg.Go(func() {
			buf := make([]byte, 1000)
			for {
				n, err := c.Read(buf)
				mu.Lock()
				total += n
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	rg.Wait()
	if total != 64<<10 {
		t.Errorf("readers read %d bytes together, want %d", total, 64<<10)
	}
}

// TestPeekAndRead: Peek and Read on the bare descriptor, as internal/h1
// uses them inside RawConn's callbacks.
func TestPeekAndRead(t *testing.T) {
	c, peer := pair(t)
	var fd int
	_ = c.rc.Control(func(f uintptr) { fd = int(f) })
	buf := make([]byte, 8)
	if got := Peek(fd); got != 0 {
		t.Errorf("Peek on a quiet socket = %d, want 0", got)
	}
	if n, errno := Read(fd, buf); n != 0 || errno != syscall.EAGAIN {
		t.Errorf("Read on a quiet socket = %d, %v; want EAGAIN", n, errno)
	}
	_, _ = peer.Write([]byte("ab"))
	if got := peekUntil(fd, 1); got != 1 {
		t.Errorf("Peek with bytes waiting = %d, want 1", got)
	}
	if n, errno := Read(fd, buf); n != 2 || errno != 0 || string(buf[:2]) != "ab" {
		t.Errorf("Read = %q, %v", buf[:n], errno)
	}
	_ = peer.Close()
	if got := peekUntil(fd, -1); got != -1 {
		t.Errorf("Peek after the peer closed = %d, want -1", got)
	}
	if n, errno := Read(fd, buf); n != 0 || errno != 0 {
		t.Errorf("Read after the peer closed = %d, %v; want 0 (the end)", n, errno)
	}
}

// peekUntil peeks at fd until it sees want (what the peer did has
// crossed loopback) or 5 s have passed, and returns what it saw last.
func peekUntil(fd, want int) int {
	got := Peek(fd)
	for deadline := time.Now().Add(5 * time.Second); got != want && time.Now().Before(deadline); got = Peek(fd) {
		time.Sleep(time.Millisecond)
	}
	return got
}

// TestAllocations: a read, a write and a vectored write allocate nothing.
func TestAllocations(t *testing.T) {
	c, peer := pair(t)
	msg := []byte("0123456789")
	buf := make([]byte, 64)
	pbuf := make([]byte, 64)
	// WriteBuffers consumes *v from its front, as net.Buffers.WriteTo
	// does: each round refills it from base, as h1server's answer does.
	base := make(net.Buffers, 0, 2)
	v := new(net.Buffers)
	n := testing.AllocsPerRun(200, func() {
		_, _ = c.Write(msg)
		*v = append(base[:0], msg[:4], msg[4:])
		_, _ = c.WriteBuffers(v)
		_, _ = io.ReadFull(peer, pbuf[:20])
		_, _ = peer.Write(msg)
		_, _ = io.ReadFull(c, buf[:10])
	})
	if n != 0 {
		t.Errorf("got %v allocations a round, want 0", n)
	}
}

// TestHappensBefore: what a goroutine wrote before sending bytes is
// seen by the goroutine that read them, both ways, without a race report
// (run with -race: raw calls tell the detector what syscall's do).
func TestHappensBefore(t *testing.T) {
	c, peer := pair(t)
	var shared int
	done := make(chan struct{})
	go func() {
		defer close(done)
		shared = 1
		_, _ = c.Write([]byte("x")) // raw write, then net's read
	}()
	if _, err := io.ReadFull(peer, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if shared != 1 {
		t.Error("the write's effects were not seen")
	}
	<-done
	go func() {
		shared = 2
		_, _ = peer.Write([]byte("y")) // net's write, then a raw read
	}()
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if shared != 2 {
		t.Error("the write's effects were not seen")
	}
}
