//go:build linux

// Package sockio reads and writes a connected TCP socket the way net does
// (the same non-blocking socket, the same poller, deadlines and errors),
// but issues each read and write as a raw system call: one that does not
// tell the scheduler it entered the kernel.
//
// Why: a goroutine in a system call leaves its processor (P) marked "in a
// system call"; the runtime's monitor thread (sysmon) takes such a P away
// and hands it to another thread when it finds the same call on two of its
// rounds, and every time it takes one it goes back to waking every 20 µs.
// On a loaded machine a socket write that wakes its reader (loopback, a
// sidecar's neighbour) is often preempted on its way out of the kernel,
// long enough to be seen twice: measured on the project's bench at
// plain c=16, 140 hand-offs a second kept sysmon at 3,400 wake-ups a
// second, 8% of the router's CPU (docs/BENCHMARKS.md, "The scheduler's
// share"). A read or write of a non-blocking socket never waits in the
// kernel (EAGAIN sends it to the poller, outside any system call), so
// nothing is gained by handing its P away; being preempted in the kernel
// costs the P what being preempted outside it does. The runtime's own
// rule for raw system calls is exactly this: ones that do not block.
//
// Wrap applies to *net.TCPConn only; anything else (TLS, a pipe, a test's
// conn) is returned as it is.
package sockio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose Read, Write and WriteBuffers are raw
// system calls. Every other method is the *net.TCPConn's. As with net's
// conn, any of them may be called from several goroutines: reads are
// serialized among themselves, and writes among themselves.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	rmu sync.Mutex // held by a Read: guards rp, rn, rerr
	wmu sync.Mutex // held by a Write or WriteBuffers: guards the write fields

	// Made once per connection: a closure given to RawConn.Read escapes.
	readFn, writeFn, writevFn func(fd uintptr) bool

	rp   []byte // the read's buffer
	rn   int
	rerr syscall.Errno

	wp   []byte       // Write's bytes (wn of them written)
	vb   *net.Buffers // WriteBuffers' buffers, consumed as written
	wn   int64        // the bytes written so far
	werr syscall.Errno
	iov  [8]syscall.Iovec
}

// Wrap is nc as a *Conn when it is a TCP connection whose descriptor can
// be reached, else nc.
func Wrap(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &Conn{TCPConn: tc, rc: rc}
	c.readFn = c.read
	c.writeFn = c.write
	c.writevFn = c.writev
	return c
}

// Read reads as net's conn does: 0 bytes from a socket with bytes to give
// is io.EOF; failures are *net.OpError.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	c.rp, c.rn, c.rerr = p, 0, 0
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerr
	c.rp = nil
	c.rmu.Unlock()
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *Conn) read(fd uintptr) bool {
	n, errno := Read(int(fd), c.rp)
	if errno == syscall.EAGAIN {
		return false // the poller waits for bytes, then the read again
	}
	c.rn, c.rerr = n, errno
	return true
}

// Write writes all of p, waiting in the poller while the socket's buffer
// is full, as net's conn does.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	c.wp = p
	n, err := c.send(c.writeFn, "write")
	c.wp = nil
	c.wmu.Unlock()
	return int(n), err
}

// WriteBuffers writes every buffer of *v in order with writev, as
// net.Buffers.WriteTo does on net's conn, consuming *v as it goes.
func (c *Conn) WriteBuffers(v *net.Buffers) (int64, error) {
	c.wmu.Lock()
	c.vb = v
	n, err := c.send(c.writevFn, "writev")
	c.vb = nil
	clear(c.iov[:]) // no reference to the caller's bytes stays
	c.wmu.Unlock()
	return n, err
}

// send runs a write callback (write or writev) in net's write loop, with
// c.wmu held: the bytes it wrote, and the failure as net's error.
func (c *Conn) send(fn func(fd uintptr) bool, op string) (int64, error) {
	beforeWrite()
	c.wn, c.werr = 0, 0
	err := c.rc.Write(fn)
	if err == nil && c.werr != 0 {
		err = os.NewSyscallError(op, c.werr)
	}
	if err != nil {
		return c.wn, c.opError(op, err)
	}
	return c.wn, nil
}

func (c *Conn) write(fd uintptr) bool {
	for c.wn < int64(len(c.wp)) {
		p := c.wp[c.wn:]
		if len(p) > maxRW {
			p = p[:maxRW]
		}
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if !c.wrote(n, e) {
			return e != syscall.EAGAIN
		}
	}
	return true
}

func (c *Conn) writev(fd uintptr) bool {
	for {
		iov := c.iov[:0]
		for _, b := range *c.vb {
			if len(iov) == len(c.iov) {
				break
			}
			if len(b) == 0 {
				continue
			}
			iov = append(iov, syscall.Iovec{Base: &b[0]})
			iov[len(iov)-1].SetLen(len(b))
		}
		if len(iov) == 0 {
			*c.vb = (*c.vb)[:0]
			return true
		}
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		if !c.wrote(n, e) {
			return e != syscall.EAGAIN
		}
		consume(c.vb, int64(n))
	}
}

// wrote takes one write's result: true to go on writing (bytes written,
// or EINTR: n is then 0); false on EAGAIN (the poller waits, then the
// callback again) or a failure (kept in c.werr).
func (c *Conn) wrote(n uintptr, e syscall.Errno) bool {
	switch e {
	case 0:
		c.wn += int64(n)
		return true
	case syscall.EINTR:
		return true
	case syscall.EAGAIN:
		return false
	}
	c.werr = e
	return false
}

// consume drops n written bytes from the front of *v.
func consume(v *net.Buffers, n int64) {
	for len(*v) > 0 {
		if n < int64(len((*v)[0])) {
			(*v)[0] = (*v)[0][n:]
			return
		}
		n -= int64(len((*v)[0]))
		(*v)[0] = nil
		*v = (*v)[1:]
	}
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// maxRW is the most one read or write asks of the kernel, as in
// internal/poll (1 GiB; some kernels refuse more).
const maxRW = 1 << 30

// Read is one raw read(2) of fd into p, EINTR retried: the bytes read,
// or the errno (EAGAIN when nothing has arrived). 0 bytes and no errno is
// the peer's end.
func Read(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case 0:
			afterRead(uintptr(fd))
			return int(n), 0
		case syscall.EINTR:
		default:
			return 0, e
		}
	}
}

// Peek says what a read of fd would find, without waiting or consuming:
// 0 when nothing has arrived, 1 when bytes have, -1 when the peer closed
// the connection or it failed (one raw recvfrom with MSG_PEEK).
func Peek(fd int) int {
	var b [1]byte
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return 0
		case e != 0 || n == 0:
			return -1
		}
		return 1
	}
}
