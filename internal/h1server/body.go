package h1server

import (
	"io"
	"net/http"
	"net/http/httputil"
)

// body is a request's body read from the connection's reader: n bytes
// of a Content-Length, or chunked (n < 0). Only the handler's goroutine
// reads it. At its end the connection's reader is released (buffers.go):
// a body never reads again once err is set.
type body struct {
	c       *conn
	n       int64     // bytes left of a Content-Length; -1 chunked
	chunked io.Reader // the chunked decoder, made at the first read
	err     error     // sticky: io.EOF at the end, or the read error
	closed  bool      // the handler closed it, or the server after the handler
	// cont, if not nil, is called before the first read: the answer to
	// Expect: 100-continue.
	cont func()
}

func (b *body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.cont != nil {
		f := b.cont
		b.cont = nil
		f()
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.n < 0 {
		return b.readChunked(p)
	}
	if b.n == 0 {
		b.err = io.EOF
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	if b.c.br.Buffered() == 0 {
		b.c.readDeadlineNone() // the read reaches the socket
	}
	n, err := b.c.br.Read(p)
	b.n -= int64(n)
	switch {
	case err == io.EOF:
		b.err = io.ErrUnexpectedEOF
		return n, b.err
	case err != nil:
		b.err = err
		return n, err
	case b.n == 0:
		b.err = io.EOF
		b.c.releaseReader()
		return n, io.EOF
	}
	return n, nil
}

func (b *body) readChunked(p []byte) (int, error) {
	br := b.c.br
	if b.chunked == nil {
		b.chunked = httputil.NewChunkedReader(br)
	}
	b.c.readDeadlineNone()
	n, err := b.chunked.Read(p)
	if err == io.EOF {
		// The last chunk read; what follows is the trailer section,
		// empty here (RFC 9112 7.1.2): trailers are refused.
		if crlf, perr := br.Peek(2); perr != nil {
			err = io.ErrUnexpectedEOF
		} else if crlf[0] != '\r' || crlf[1] != '\n' {
			err = errTrailer
		} else {
			_, _ = br.Discard(2)
		}
	}
	if err != nil {
		b.err = err
		b.chunked = nil
		if err == io.EOF {
			b.c.releaseReader()
		}
	}
	return n, err
}

// Close marks the body closed; what is left unread is the server's to
// drain or to close the connection on.
func (b *body) Close() error {
	b.closed = true
	return nil
}

// maxDrain is how much of a body the handler left unread the server reads
// to keep the connection (net/http's maxPostHandlerReadBytes).
const maxDrain = 256 << 10

// drain reads what the handler left of the body, up to maxDrain, and
// reports whether the body was read to its end (the connection can serve
// another request).
func (b *body) drain() bool {
	if b.err == io.EOF {
		return true
	}
	// Without its 100 Continue the client may never send the body.
	if b.err != nil || b.n > maxDrain || b.cont != nil {
		return false
	}
	b.closed = false
	n, _ := io.CopyN(io.Discard, b, maxDrain+1)
	b.closed = true
	return n <= maxDrain && b.err == io.EOF
}
