package provider

import (
	"io"
	"sync/atomic"
)

// Activity is a stream's liveness: how many reads of its provider's body
// gave bytes (docs/ARCHITECTURE.md, "Streaming": a stall is a gap after
// the first content). The attempt loop lends one to a stream attempt
// through its context: a context whose Value(ActivityKey{}) is a
// *Activity makes Send read the provider's answer through it, so every
// byte counts, the provider's own pings and comments included, and
// nothing the router writes to its client does. A read costs one atomic
// add (no clock: the watcher reads the count when it looks); the zero
// Activity is ready to use.
type Activity struct {
	reads atomic.Uint64 // reads that gave bytes
	body  io.ReadCloser // the provider's answer, read through the Activity
}

// ActivityKey is the context key under which a stream attempt's context
// carries its *Activity.
type ActivityKey struct{}

// Reads is how many reads of the body gave bytes so far: a watcher that
// sees it unchanged between two looks knows nothing came in between.
func (a *Activity) Reads() uint64 { return a.reads.Load() }

// Watching reports whether a body is read through a (Send attached one).
func (a *Activity) Watching() bool { return a.body != nil }

// attach makes a read body through a from now on.
func (a *Activity) attach(body io.ReadCloser) io.ReadCloser {
	a.body = body
	return a
}

func (a *Activity) Read(p []byte) (int, error) {
	n, err := a.body.Read(p)
	if n > 0 {
		a.reads.Add(1)
	}
	return n, err
}

func (a *Activity) Close() error { return a.body.Close() }
