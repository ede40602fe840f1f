package provider

import (
	"io"
	"sync/atomic"
	"time"
)

// Activity is a stream's liveness: when its provider's body last gave
// bytes (docs/ARCHITECTURE.md, "Streaming": a stall is a gap after the
// first content). The attempt loop lends one to a stream attempt through
// its context: a context whose Value(ActivityKey{}) is a *Activity makes
// Send read the provider's answer through it, so every byte counts, the
// provider's own pings and comments included, and nothing the router
// writes to its client does. It costs a read one clock reading and an
// atomic store; the zero Activity is ready to use.
type Activity struct {
	last atomic.Int64  // the latest read that gave bytes: nanoseconds since epoch
	body io.ReadCloser // the provider's answer, read through the Activity
}

// ActivityKey is the context key under which a stream attempt's context
// carries its *Activity.
type ActivityKey struct{}

// epoch is the monotonic origin of Activity's instants.
var epoch = time.Now()

// Since is how long it has been, at now, since the body last gave bytes
// (or since it was attached, before any).
func (a *Activity) Since(now time.Time) time.Duration {
	return now.Sub(epoch) - time.Duration(a.last.Load())
}

// Watching reports whether a body is read through a (Send attached one).
func (a *Activity) Watching() bool { return a.body != nil }

// attach makes a read body through a from now on.
func (a *Activity) attach(body io.ReadCloser) io.ReadCloser {
	a.body = body
	a.last.Store(int64(time.Since(epoch)))
	return a
}

func (a *Activity) Read(p []byte) (int, error) {
	n, err := a.body.Read(p)
	if n > 0 {
		a.last.Store(int64(time.Since(epoch)))
	}
	return n, err
}

func (a *Activity) Close() error { return a.body.Close() }
