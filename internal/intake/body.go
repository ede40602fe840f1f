package intake

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

	"github.com/llmrouter/llmrouter/internal/apierror"
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
// The first, 1 KiB, is only for a body that declares a Content-Length
// below it (a declared length only ever makes the first buffer smaller);
// others start at the second.
var bodyClasses = [...]int{1 << 10, 4 << 10, 32 << 10, 256 << 10, 1 << 20}

var bodyPools [len(bodyClasses)]sync.Pool

// Body is one request's body, charged to a Budget until Free.
type Body struct {
	// B is the body's bytes.
	B     []byte
	class int // index in bodyClasses; -1: not pooled
}

// Budget is the bytes of body buffers held at once, against a limit
// (limits.body_buffer_bytes). The zero Budget is empty and ready.
type Budget struct {
	used atomic.Int64
}

// Used is the bytes charged now.
func (b *Budget) Used() int64 { return b.used.Load() }

// take charges n bytes if the total stays within limit.
func (b *Budget) take(n, limit int64) bool {
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

func (b *Budget) give(n int64) { b.used.Add(-n) }

// newBody returns a first buffer, of the 4 KiB class, of the 1 KiB one
// for a body declared shorter than that (declared: its Content-Length,
// -1 unknown), or maxBody bytes when that is less, charged to the
// budget; nil when the budget cannot take it. A body of a few hundred
// bytes then holds 1 KiB, not 4, while it waits for its answer (for a
// stream's whole life when a rescue may need it; docs/BENCHMARKS.md,
// "Memory per stream, the retentions").
func (bud *Budget) newBody(maxBody, limit, declared int64) *Body {
	class := 1
	if declared > 0 && declared < int64(bodyClasses[0]) {
		class = 0
	}
	size := int64(bodyClasses[class])
	if size > maxBody {
		size, class = maxBody, -1
	}
	if !bud.take(size, limit) {
		return nil
	}
	if class >= 0 {
		if rb, ok := bodyPools[class].Get().(*Body); ok {
			return rb
		}
	}
	return &Body{B: make([]byte, 0, size), class: class}
}

// Free gives rb's capacity back to the budget and its buffer to its pool.
func (bud *Budget) Free(rb *Body) {
	bud.give(int64(cap(rb.B)))
	if rb.class >= 0 {
		rb.B = rb.B[:0]
		bodyPools[rb.class].Put(rb)
	}
}

// grow moves rb's bytes into a buffer of the next size, at most maxBody
// bytes, and charges the difference: the budget counts the buffers bodies hold, and
// the smaller one goes back to its pool as soon as its bytes have moved.
// nil means the budget is spent; rb is then freed.
func (bud *Budget) grow(rb *Body, maxBody, budgetLimit int64) *Body {
	size := int64(cap(rb.B)) * 2
	class := -1
	if c := rb.class + 1; rb.class >= 0 && c < len(bodyClasses) {
		size = int64(bodyClasses[c])
		if size <= maxBody {
			class = c
		}
	}
	size = min(size, maxBody)
	if !bud.take(size-int64(cap(rb.B)), budgetLimit) {
		bud.Free(rb)
		return nil
	}
	var next *Body
	if class >= 0 {
		if pooled, ok := bodyPools[class].Get().(*Body); ok {
			next = pooled
		}
	}
	if next == nil {
		next = &Body{B: make([]byte, 0, size), class: class}
	}
	next.B = append(next.B, rb.B...)
	// rb's capacity is now next's charge: return the buffer, not the bytes.
	if rb.class >= 0 {
		rb.B = rb.B[:0]
		bodyPools[rb.class].Put(rb)
	}
	return next
}

// Limits bound one body.
type Limits struct {
	// MaxBody is the largest body accepted (413 past it).
	MaxBody int64
	// Budget is the most all bodies may hold at once (503 past it).
	Budget int64
	// ReadTimeout bounds the time to receive the body (408 past it).
	ReadTimeout time.Duration
}

// Read reads r's whole body within lim into a buffer charged to bud; the
// caller must give it back with bud.Free. An error that leaves the body
// unread ends the connection (Error.EndConn).
func (bud *Budget) Read(w http.ResponseWriter, r *http.Request, lim Limits) (*Body, *apierror.Error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			e := apierror.BadRequest("", "unsupported content type "+apierror.Quote(ct)+": send the body as application/json")
			e.EndConn = r.ContentLength != 0
			return nil, e
		}
	}
	if r.ContentLength > lim.MaxBody {
		e := tooLarge(lim.MaxBody)
		e.EndConn = true
		return nil, e
	}
	if r.ContentLength == 0 {
		return nil, apierror.BadRequest("", "the request body is empty: send a JSON object")
	}
	rb := bud.newBody(lim.MaxBody, lim.Budget, r.ContentLength)
	if rb == nil {
		return nil, bodiesFull()
	}
	// The deadline is cleared afterwards: the server would otherwise
	// cancel the request's context when it passes during a long stream.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(lim.ReadTimeout))
	var err error
	for {
		if len(rb.B) == cap(rb.B) {
			if int64(len(rb.B)) >= lim.MaxBody {
				// Full at the limit: one more byte makes it too large.
				var one [1]byte
				if _, err = io.ReadFull(r.Body, one[:]); err == nil {
					err = errTooLarge
				}
				break
			}
			if rb = bud.grow(rb, lim.MaxBody, lim.Budget); rb == nil {
				return nil, bodiesFull()
			}
		}
		var n int
		n, err = r.Body.Read(rb.B[len(rb.B):cap(rb.B)])
		rb.B = rb.B[:len(rb.B)+n]
		if err != nil {
			break
		}
	}
	if err != io.EOF {
		bud.Free(rb)
		var e *apierror.Error
		switch {
		case err == errTooLarge:
			e = tooLarge(lim.MaxBody)
		case errors.Is(err, os.ErrDeadlineExceeded):
			e = &apierror.Error{Status: http.StatusRequestTimeout, Type: "invalid_request_error", Code: "request_timeout",
				Message: "the request body did not arrive within limits.body_read_timeout (" + lim.ReadTimeout.String() + ")"}
		case errors.Is(err, io.ErrUnexpectedEOF):
			e = apierror.BadRequest("", "the request body ended early")
		default:
			e = apierror.BadRequest("", "could not read the request body: "+err.Error())
		}
		e.EndConn = true
		return nil, e
	}
	_ = rc.SetReadDeadline(time.Time{})
	if len(rb.B) == 0 {
		bud.Free(rb)
		return nil, apierror.BadRequest("", "the request body is empty: send a JSON object")
	}
	return rb, nil
}

var errTooLarge = errors.New("body too large")

func tooLarge(max int64) *apierror.Error {
	return &apierror.Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
		Message: "the request body is larger than the limit of " + itoa64(max) + " bytes"}
}

func bodiesFull() *apierror.Error {
	return &apierror.Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
		Message:    "the router is holding as many request bodies as limits.body_buffer_bytes allows; retry later",
		RetryAfter: time.Second, EndConn: true}
}
