package openai

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// maxPooledBody is the largest buffer kept for reuse; a rare 10 MiB
// request must not pin 10 MiB per pooled buffer for ever.
const maxPooledBody = 1 << 20

var bodyPool = sync.Pool{New: func() any {
	b := new(body)
	b.getBody = func() (io.ReadCloser, error) { return b.reader(), nil }
	return b
}}

var errBodyClosed = errors.New("request body read after close")

// body is one request's outgoing bytes, shared by the readers handed to
// the transport. refs counts Do's own hold plus every open reader; the
// buffer goes back to the pool when it drops to zero. The RoundTripper
// contract allows the transport to close (and even read) a body after
// RoundTrip returned, and to ask for it again through GetBody while
// RoundTrip runs (a replay on a fresh connection after a stale keep-alive).
// Do holds its reference until client.Do returned, so every GetBody call
// finds the buffer alive.
type body struct {
	buf  []byte
	refs atomic.Int32
	// getBody is the request's GetBody, made once per pooled body: a
	// reader of b (when called while the request is in flight, as above).
	getBody func() (io.ReadCloser, error)
}

// getBody returns an empty pooled body holding one reference (the caller's).
func getBody() *body {
	b := bodyPool.Get().(*body)
	b.buf = b.buf[:0]
	b.refs.Store(1)
	return b
}

// release drops one reference.
func (b *body) release() {
	switch n := b.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("openai: request body released more often than acquired")
	}
	if cap(b.buf) > maxPooledBody {
		b.buf = nil
	}
	bodyPool.Put(b)
}

// reader returns a new reader of the whole buffer holding its own reference,
// dropped on its first Close.
func (b *body) reader() io.ReadCloser {
	b.refs.Add(1)
	return &bodyReader{b: b}
}

// bodyReader reads a body. The transport may Close it from another
// goroutine while a Read is in flight (HTTP/2 stream resets), so the two
// are serialised: once closed, the buffer may already serve another
// request and must not be touched. Read only copies memory under the lock,
// so Close never waits on the network (which is why there is no WriteTo).
type bodyReader struct {
	mu     sync.Mutex // guards off, closed
	b      *body
	off    int
	closed bool
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errBodyClosed
	}
	if r.off >= len(r.b.buf) {
		return 0, io.EOF
	}
	n := copy(p, r.b.buf[r.off:])
	r.off += n
	return n, nil
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	closed := r.closed
	r.closed = true
	r.mu.Unlock()
	if !closed {
		r.b.release()
	}
	return nil
}
