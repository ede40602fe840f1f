//go:build linux

package sockio

import (
	"sync"
	"sync/atomic"
	"time"
)

// A deadline on net's socket is a timer in the runtime: setting one
// modifies the timer heap under its lock, and the API listener's request
// sets six (the idle and head deadlines, the body's and its clearing, the
// answer's write deadline and its clearing), about 2 µs a request on the
// project's rig, where a plain answer's one write and a body already read
// with the head never wait in the poller (docs/ARCHITECTURE.md, "The API
// listener"). A Conn made by WrapLazy keeps a deadline set while nothing
// waits as its own and puts it on the socket only when it could matter:
//
//   - before a read (write) of the Conn, when the socket holds an older
//     deadline (the poller would see that one first, and it may have
//     passed) or the new one has already passed (the read fails, as net's
//     does);
//   - when the read (write) finds the socket not ready, before the poller
//     waits;
//   - at once, when a read (write) is waiting in the poller: another
//     goroutine's deadline reaches it as net's does.
//
// A deadline set and replaced (or cleared) between two such points never
// reaches the socket. What a read or write sees is what net's would: the
// last deadline set before it, or while it waits.

// deadline is one direction's deadline on a lazy Conn.
type deadline struct {
	mu      sync.Mutex
	set     func(time.Time) error // the socket's (the *net.TCPConn's)
	t       time.Time             // the deadline set last, while pending
	pending atomic.Bool           // t is not on the socket yet
	armed   bool                  // the socket holds a non-zero deadline
	waiting atomic.Bool           // a read (write) waits in the poller
}

// Set is the Conn's SetReadDeadline (SetWriteDeadline).
func (d *deadline) Set(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting.Load() {
		d.pending.Store(false)
		return d.applyLocked(t)
	}
	if t.IsZero() && !d.armed {
		d.pending.Store(false) // nothing on the socket to clear
		return nil
	}
	d.t = t
	d.pending.Store(true)
	return nil
}

func (d *deadline) applyLocked(t time.Time) error {
	err := d.set(t)
	d.armed = !t.IsZero()
	return err
}

// before runs before a read (write) that may reach the socket: a pending
// deadline goes on it when the socket holds an older one, or when it has
// passed.
func (d *deadline) before() {
	if !d.pending.Load() {
		return
	}
	d.mu.Lock()
	if d.pending.Load() && (d.armed || !d.t.After(time.Now())) {
		d.pending.Store(false)
		_ = d.applyLocked(d.t) // a closed socket's error: the read's own says it
	}
	d.mu.Unlock()
}

// wait runs when the read (write) found the socket not ready, before the
// poller waits: a pending deadline goes on the socket, and deadlines set
// while it waits go there at once.
func (d *deadline) wait() {
	d.mu.Lock()
	if d.pending.Load() {
		d.pending.Store(false)
		_ = d.applyLocked(d.t)
	}
	d.waiting.Store(true)
	d.mu.Unlock()
}

// after runs when the read (write) returned.
func (d *deadline) after() {
	if d.waiting.Load() {
		d.mu.Lock()
		d.waiting.Store(false)
		d.mu.Unlock()
	}
}
