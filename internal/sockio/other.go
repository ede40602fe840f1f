//go:build !linux

package sockio

import (
	"net"
	"syscall"
)

// Wrap is nc: raw system calls are for Linux only.
func Wrap(nc net.Conn) net.Conn { return nc }

// Read is one read(2) of fd into p, EINTR retried.
func Read(fd int, p []byte) (int, syscall.Errno) {
	for {
		n, err := syscall.Read(fd, p)
		if err == nil {
			return n, 0
		}
		if err != syscall.EINTR {
			e, _ := err.(syscall.Errno)
			return 0, e
		}
	}
}

// Peek says what a read of fd would find, without waiting or consuming:
// 0 nothing yet, 1 bytes, -1 closed or failed.
func Peek(fd int) int {
	var b [1]byte
	n, _, err := syscall.Recvfrom(fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		return 0
	case err != nil || n == 0:
		return -1
	}
	return 1
}
