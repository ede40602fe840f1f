package proxy

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request bodies (docs/ARCHITECTURE.md, "Memory"): a body's buffer grows
// as its bytes arrive, through pooled size classes, never from the
// Content-Length a client declares. Every byte of buffer capacity is
// charged to one budget for the process (limits.body_buffer_bytes) from
// the first byte until the request ends, so the memory bodies hold is
// bounded whatever clients promise: a body that would pass the budget is
// refused with 503 and Retry-After, and its connection is closed.

// bodyClasses are the pooled buffer sizes, smallest first; a body that
// outgrows the last one gets a plain allocation, doubled as it grows.
var bodyClasses = [...]int{4 << 10, 32 << 10, 256 << 10, 1 << 20}

var bodyPools [len(bodyClasses)]sync.Pool

// reqBody is one request's body buffer and what it is charged.
type reqBody struct {
	b     []byte
	class int // index in bodyClasses; -1: not pooled
}

// budget is the bytes of body buffers held at once, against a limit.
type budget struct {
	used atomic.Int64
}

// take charges n bytes if the total stays within limit.
func (b *budget) take(n, limit int64) bool {
	for {
		u := b.used.Load()
		if u+n > limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *budget) give(n int64) { b.used.Add(-n) }

// newBody returns a buffer of class i, charged to the budget, or nil when
// the budget cannot take it.
func (s *Server) newBody(i int, limit int64) *reqBody {
	if !s.bodies.take(int64(bodyClasses[i]), limit) {
		return nil
	}
	if rb, ok := bodyPools[i].Get().(*reqBody); ok {
		return rb
	}
	return &reqBody{b: make([]byte, 0, bodyClasses[i]), class: i}
}

// freeBody gives rb's capacity back to the budget and its buffer to its
// pool.
func (s *Server) freeBody(rb *reqBody) {
	s.bodies.give(int64(cap(rb.b)))
	if rb.class >= 0 {
		rb.b = rb.b[:0]
		bodyPools[rb.class].Put(rb)
	}
}

// grow moves rb's bytes into a buffer of the next size, at most limit+1
// bytes (one more than a body may have, to tell an oversized one), and
// charges the difference. nil means the budget is spent; rb is then
// freed.
func (s *Server) grow(rb *reqBody, maxBody, budgetLimit int64) *reqBody {
	next := &reqBody{class: -1}
	if rb.class >= 0 && rb.class+1 < len(bodyClasses) && int64(bodyClasses[rb.class]) <= maxBody {
		n := s.newBody(rb.class+1, budgetLimit)
		if n == nil {
			s.freeBody(rb)
			return nil
		}
		next = n
	} else {
		size := min(int64(cap(rb.b))*2, maxBody+1)
		if !s.bodies.take(size, budgetLimit) {
			s.freeBody(rb)
			return nil
		}
		next.b = make([]byte, 0, size)
	}
	next.b = append(next.b, rb.b...)
	s.freeBody(rb)
	return next
}

// readBody reads the whole body within the limits into a charged buffer
// the caller must return with freeBody. An error that leaves the body
// unread ends the connection (apiError.endConn).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, lim LimitsConfig) (*reqBody, *apiError) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			e := badRequest("", "unsupported content type "+quote(ct)+": send the body as application/json")
			e.endConn = r.ContentLength != 0
			return nil, e
		}
	}
	if r.ContentLength > lim.MaxBodyBytes {
		e := tooLarge(lim.MaxBodyBytes)
		e.endConn = true
		return nil, e
	}
	if r.ContentLength == 0 {
		return nil, badRequest("", "the request body is empty: send a JSON object")
	}
	rb := s.newBody(0, lim.BodyBufferBytes)
	if rb == nil {
		return nil, bodiesFull()
	}
	// The deadline is cleared afterwards: the server would otherwise
	// cancel the request's context when it passes during a long stream.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(lim.BodyReadTimeout))
	var err error
	for {
		if len(rb.b) == cap(rb.b) {
			if int64(len(rb.b)) > lim.MaxBodyBytes {
				err = errTooLarge
				break
			}
			if rb = s.grow(rb, lim.MaxBodyBytes, lim.BodyBufferBytes); rb == nil {
				return nil, bodiesFull()
			}
		}
		var n int
		n, err = r.Body.Read(rb.b[len(rb.b):cap(rb.b)])
		rb.b = rb.b[:len(rb.b)+n]
		if err != nil {
			break
		}
	}
	if err == io.EOF && int64(len(rb.b)) > lim.MaxBodyBytes {
		err = errTooLarge
	}
	if err != io.EOF {
		s.freeBody(rb)
		var e *apiError
		switch {
		case err == errTooLarge:
			e = tooLarge(lim.MaxBodyBytes)
		case errors.Is(err, os.ErrDeadlineExceeded):
			e = &apiError{status: http.StatusRequestTimeout, typ: "invalid_request_error", code: "request_timeout",
				message: "the request body did not arrive within limits.body_read_timeout (" + lim.BodyReadTimeout.String() + ")"}
		case errors.Is(err, io.ErrUnexpectedEOF):
			e = badRequest("", "the request body ended early")
		default:
			e = badRequest("", "could not read the request body: "+err.Error())
		}
		e.endConn = true
		return nil, e
	}
	_ = rc.SetReadDeadline(time.Time{})
	if len(rb.b) == 0 {
		s.freeBody(rb)
		return nil, badRequest("", "the request body is empty: send a JSON object")
	}
	return rb, nil
}

var errTooLarge = errors.New("body too large")

func tooLarge(max int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
		message: "the request body is larger than the limit of " + itoa(max) + " bytes"}
}

func bodiesFull() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "service_unavailable",
		message:    "the router is holding as many request bodies as limits.body_buffer_bytes allows; retry later",
		retryAfter: time.Second, endConn: true}
}

// endConnection makes the answer about to be written the connection's
// last, for an answer that leaves the request body unread: the server
// would otherwise read (and wait for) the rest of the body before
// answering, with no deadline, and keep the connection. Connection: close
// skips that; the expired read deadline makes the server's final drain of
// the body return at once, so a silent client can hold neither the
// answer nor the connection.
func endConnection(w http.ResponseWriter) {
	w.Header()["Connection"] = valClose
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}
