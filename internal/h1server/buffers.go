package h1server

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"sync"
)

// A connection holds its buffers only while they hold bytes
// (docs/ARCHITECTURE.md, "The API listener"): the read buffer while a
// request's head and body are read, the head buffer while a head is
// parsed or written, the body buffer while answer bytes wait in it. A
// stream between two events holds none of them, so 1,000 open streams
// do not hold 1,000 of each.

// readSize is the read buffer's size, as net/http's.
const readSize = 4 << 10

var (
	parsedHeads = sync.Pool{New: func() any { return &parsedHead{header: make(http.Header)} }}
	readers     sync.Pool // *bufio.Reader of readSize, reading nothing
	heads       = sync.Pool{New: func() any { return &headBuf{b: make([]byte, 0, 1<<10)} }}
	outs        = sync.Pool{New: func() any { return new([outSize]byte) }}
)

// headBuf is a head buffer: it grows to the longest head it held.
type headBuf struct{ b []byte }

// maxPooledHead bounds the head buffers kept for reuse: a head of the
// largest size allowed is not kept.
const maxPooledHead = 16 << 10

func getReader(nc net.Conn) *bufio.Reader {
	if br, ok := readers.Get().(*bufio.Reader); ok {
		br.Reset(nc)
		return br
	}
	return bufio.NewReaderSize(nc, readSize)
}

func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readers.Put(br)
}

func getHead() *headBuf { return heads.Get().(*headBuf) }

func putHead(h *headBuf) {
	if cap(h.b) > maxPooledHead {
		return
	}
	h.b = h.b[:0]
	heads.Put(h)
}

// releaseReader returns the connection's read buffer once it holds no
// bytes: the request's head and body are read and no next request has
// arrived behind them. The next request's read takes one again.
func (c *conn) releaseReader() {
	if c.br != nil && c.br.Buffered() == 0 {
		putReader(c.br)
		c.br = nil
	}
}

// outBuf is the body buffer for bytes about to be appended, taken when
// the buffer is empty.
func (c *conn) outBuf() []byte {
	if c.out == nil {
		c.out = outs.Get().(*[outSize]byte)[:0]
	}
	return c.out
}

// releaseOut returns the body buffer once its bytes are sent.
func (c *conn) releaseOut() {
	if c.out != nil {
		outs.Put((*[outSize]byte)(c.out[:outSize]))
		c.out = nil
	}
}

// parsedHead is the storage of a parsed head: its header map, the values
// of up to len(vals) header lines (a head of more has a map and values of
// its own) and its URL. A request's head is only read by its handler, and
// not after it returns (docs/ARCHITECTURE.md, "The API listener",
// ownership), so the storage is reused: put back once the answer is
// complete, cleared, unless the handler hijacked the connection (a
// WebSocket keeps reading its request). The map keeps the size it grew
// to, unless it grew past len(vals) entries.
type parsedHead struct {
	header http.Header
	vals   [16]string
	url    url.URL
}

func getParsed() *parsedHead { return parsedHeads.Get().(*parsedHead) }

// release puts r's head storage back, cleared: a handler's goroutine
// that broke the rule reads an empty head (or the next request's), and
// the race detector may report the clearing writes against its reads.
func (r *request) release() {
	ph := r.ph
	if ph == nil {
		return
	}
	r.ph, r.header = nil, nil
	if len(ph.header) > len(ph.vals) {
		ph.header = make(http.Header) // a handler added to it: not kept grown
	} else {
		clear(ph.header)
	}
	ph.vals = [len(ph.vals)]string{}
	ph.url = url.URL{}
	parsedHeads.Put(ph)
}
