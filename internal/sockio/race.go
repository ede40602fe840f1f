//go:build linux && race

package sockio

import "syscall"

// Under the race detector, the syscall package's reads and writes tell it
// that a write to any descriptor happens before every later successful
// read (its ioSync), so that goroutines of one process that meet through
// a socket (a test's client and the router's server) are not reported as
// racing. Raw system calls skip that; these make syscall's own calls for
// it, at the cost of one more system call each, in race builds only.

// beforeWrite is syscall.Write's release: on a descriptor that cannot be
// written, so nothing is.
func beforeWrite() { _, _ = syscall.Write(-1, nil) }

// afterRead is syscall.Read's acquire: a read of no bytes, which succeeds
// on a socket whatever waits in it.
func afterRead(fd uintptr) { _, _ = syscall.Read(int(fd), nil) }
