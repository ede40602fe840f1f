package h1server

import (
	"encoding/binary"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// watcher notices clients that hang up while their request is served,
// without a goroutine or a system call per request: every connection's
// socket is registered once, at accept, in a private epoll instance for
// EPOLLRDHUP only (not readability: request bytes wake nothing), one-shot;
// one goroutine per server waits on it. The peer's FIN or reset cancels
// the request in flight (conn.peerGone), as net/http's background read
// does on EOF. A connection leaves the instance before its socket closes,
// and events carry a registration number, so that a reused fd never
// reaches the wrong connection.
type watcher struct {
	epfd, evfd int

	mu       sync.Mutex // guards the fields below, and the instance's registrations
	conns    map[int32]*conn
	next     uint32
	stopping bool // stop was called: close once no connection is registered
}

func newWatcher() (*watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, err
	}
	w := &watcher{epfd: epfd, evfd: evfd, conns: map[int32]*conn{}}
	go w.run()
	return w, nil
}

// add registers c's socket; a connection that cannot be registered is
// served unwatched (its hang-up is noticed at its next write).
func (w *watcher) add(c *conn) {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		w.next++
		ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(fd), Pad: int32(w.next)}
		if unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev) == nil {
			c.wfd, c.wid = int(fd), w.next
			w.conns[int32(fd)] = c
		}
	})
}

// remove deregisters c; called before its socket closes.
func (w *watcher) remove(c *conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, c.wfd, nil)
	delete(w.conns, int32(c.wfd))
	c.wfd = -1
	if w.stopping && len(w.conns) == 0 {
		w.wakeLocked()
	}
}

// stop ends the watcher once no connection is registered.
func (w *watcher) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopping = true
	if len(w.conns) == 0 {
		w.wakeLocked()
	}
}

func (w *watcher) wakeLocked() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(w.evfd, one[:])
}

func (w *watcher) run() {
	var evs [64]unix.EpollEvent
	for {
		n, err := unix.EpollWait(w.epfd, evs[:], -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // EBADF cannot happen: only run closes the instance
		}
		for _, ev := range evs[:n] {
			if int(ev.Fd) == w.evfd {
				w.mu.Lock()
				done := w.stopping && len(w.conns) == 0
				w.mu.Unlock()
				if done {
					unix.Close(w.epfd)
					unix.Close(w.evfd)
					return
				}
				continue
			}
			w.mu.Lock()
			c := w.conns[ev.Fd]
			if c != nil && c.wid != uint32(ev.Pad) {
				c = nil
			}
			w.mu.Unlock()
			if c != nil {
				c.peerGone()
			}
		}
	}
}
