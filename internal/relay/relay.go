package relay

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// maxHeld and maxHeldBytes bound the preamble chunks (role-only, or a
// native stream's opening events) held back before the commit point: past
// either the stream commits anyway, as if the chunk had content. A
// preamble is a few hundred bytes (a Responses stream's opening events
// echo the request's instructions and tools, tens of KiB), but one event
// may be as large as the stream's reader allows (4 MiB an SSE event), so
// counting chunks alone let a stream hold 16 of them, 64 MiB (issue 31,
// finding 8). What a stream holds is now under maxHeldBytes plus the one
// chunk that reached it (docs/ARCHITECTURE.md, "Memory").
const (
	maxHeld      = 16
	maxHeldBytes = 1 << 20
)

// Preamble reads a stream up to its first chunk with content (hasContent)
// and returns the chunks read (copies), so nothing is written before the
// provider has shown it can answer. A stream that ends cleanly before any
// content returns what it had.
func Preamble(st provider.Stream) ([][]byte, error) {
	var held [][]byte
	size := 0
	for {
		p, err := st.Next()
		if err == io.EOF {
			return held, nil
		}
		if err != nil {
			return nil, err
		}
		held = append(held, append([]byte(nil), p...))
		size += len(p)
		if len(held) >= maxHeld || size >= maxHeldBytes || hasContent(p) {
			return held, nil
		}
	}
}

// hasContent reports whether a chunk carries anything beyond the role-only
// opening delta: text, a tool call, a finish reason, usage, or a shape we
// do not know (which we must not hold back). An event of a native stream
// has content unless it is one a provider sends before it has produced
// anything, so the router may still fail over (docs/ARCHITECTURE.md,
// "Streaming"): for the Responses API the lifecycle events that open a
// stream (response.created, response.in_progress, response.queued); for
// the Messages API message_start, ping and content_block_start (a block's
// opening, empty for text and thinking). An error event never gets here:
// the stream returns it as its error.
func hasContent(p []byte) bool {
	ch := gjson.GetBytes(p, "choices")
	if !ch.IsArray() {
		// Not a chat chunk: only then is "type" worth a second look
		// (GetManyBytes would cost every chat chunk an allocation).
		switch gjson.GetBytes(p, "type").Str {
		case "response.created", "response.in_progress", "response.queued",
			"message_start", "ping", "content_block_start":
			return false
		}
		return true
	}
	content, n := false, 0
	ch.ForEach(func(_, c gjson.Result) bool {
		n++
		if fr := c.Get("finish_reason"); fr.Exists() && fr.Type != gjson.Null {
			content = true
			return false
		}
		if t := c.Get("text"); t.Type == gjson.String && t.Str != "" {
			content = true
			return false
		}
		c.Get("delta").ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "role":
			case "content", "refusal", "reasoning_content":
				if v.Type != gjson.Null && v.Str != "" {
					content = true
				}
			default:
				if v.Type != gjson.Null {
					content = true
				}
			}
			return !content
		})
		return !content
	})
	return content || n == 0
}

// End is how a relayed stream ended.
type End struct {
	// Kind is OK (the provider's end and [DONE] were written), the
	// provider's failure after the commit (one error event was written),
	// or Canceled (the client went away or stopped reading).
	Kind outcome.Kind
	// Err is the provider's error when Kind is a failure.
	Err error
	// WriteErr is the failed write to the client, if any: one past its
	// deadline means the client stopped reading.
	WriteErr error
}

// Framer writes a provider's chat stream as another API's event stream
// (the Responses API's: internal/responses/chat). Each method appends the SSE
// bytes to write to dst; appending nothing is fine. After End or Fail it
// is not called again.
type Framer interface {
	// Chunk appends the events for one chat chunk payload. An error (a
	// payload it cannot read) ends the stream as a provider failure: Fail
	// is called with the error's kind.
	Chunk(dst, payload []byte) ([]byte, error)
	// End appends the events that close a stream the provider finished.
	End(dst []byte) []byte
	// Fail appends the events that close a stream a provider failure cut
	// after the commit.
	Fail(dst []byte, kind outcome.Kind) []byte
}

// ContentTyper is a Framer whose stream is not server-sent events (the
// Gemini API's streamGenerateContent without alt=sse is one JSON array):
// ContentType is the stream's Content-Type.
type ContentTyper interface {
	Framer
	ContentType() string
}

// Pinger is a Framer whose API keeps a silent stream alive with events
// of its own (the Messages API's ping): during a gap of Every with
// nothing written, the relay writes Ping's bytes.
type Pinger interface {
	Framer
	// Ping appends one keep-alive event to dst.
	Ping(dst []byte) []byte
	// Every is the silence after which a ping is written; > 0.
	Every() time.Duration
}

// Stream commits the stream: headers, the held chunks, then every chunk as
// it arrives. Held's chunks are dropped (its elements set to nil) once
// written. A write blocked for writeTimeout (a client that stopped
// reading) ends the stream. A provider failure after the commit ends it
// with one error event and no [DONE], so no client mistakes a truncated
// answer for a whole one.
func Stream(w http.ResponseWriter, st provider.Stream, held [][]byte, writeTimeout time.Duration) End {
	return relay(w, st, held, writeTimeout, nil, nil)
}

// Translate is Stream with every chunk, the end and a failure written by
// f instead of as chat chunks, [DONE] and an error event.
func Translate(w http.ResponseWriter, st provider.Stream, held [][]byte, writeTimeout time.Duration, f Framer) End {
	return relay(w, st, held, writeTimeout, f, nil)
}

// Rescued is Stream (f nil) or Translate whose failure after the commit
// is first offered to rs (docs/ARCHITECTURE.md, "Streaming": rescue): a
// continuation it gives is relayed into the same client stream, spliced
// so that the client reads one answer with one ending. Only then does
// the relay keep the answer's text; with rs nil it is Stream or
// Translate.
func Rescued(w http.ResponseWriter, st provider.Stream, held [][]byte, writeTimeout time.Duration, f Framer, rs Rescuer) End {
	return relay(w, st, held, writeTimeout, f, rs)
}

// relay is Stream (f nil), Translate and Rescued.
func relay(w http.ResponseWriter, st provider.Stream, held [][]byte, writeTimeout time.Duration, f Framer, rs Rescuer) (end End) {
	h := w.Header()
	h["Content-Type"] = valEventStream
	if ct, ok := f.(ContentTyper); ok {
		h["Content-Type"] = []string{ct.ContentType()}
	}
	h["Cache-Control"] = valNoCache
	h["X-Accel-Buffering"] = valNo
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// renew is how close to its deadline a write renews it: at most about
	// once a second (setting it is not free), and a client that stops
	// reading is still cut within writeTimeout.
	wr := writer{w: w, rc: rc, timeout: writeTimeout, renew: writeTimeout - min(time.Second, writeTimeout/2)}
	// The deadline must not outlive this request on a kept-alive
	// connection (the next request's answer may come much later).
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	if p, ok := f.(Pinger); ok {
		// Keep-alive events during the provider's silent gaps
		// (docs/ARCHITECTURE.md, "Anthropic Messages API"), from a timer
		// callback, not a goroutine of the request's; it never writes
		// after the relay returned. Its writer lives on the heap, which
		// a stream without pings does not pay for.
		hw := new(writer)
		*hw = wr
		hw.startPing(p)
		defer func() {
			hw.stopPing()
			end.WriteErr = hw.err
		}()
		return run(hw, st, held, f, rs)
	}
	end = run(&wr, st, held, f, rs)
	end.WriteErr = wr.err
	return end
}

// writer is a stream's writes to its client, each under the write
// timeout.
type writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration // limits.client_write_timeout
	renew   time.Duration

	// mu serializes writes when a ping timer may write too (nil
	// otherwise); it guards the fields below.
	mu       *sync.Mutex
	deadline time.Time   // the write deadline set last
	last     time.Time   // when the latest write was made
	err      error       // the failed write, if any: writing is over
	ping     *time.Timer // the ping timer; nil without pings
	done     bool        // the relay returned: the timer writes no more
}

// write sends b, flushing when flush is set; false means the client is
// gone or stopped reading.
func (o *writer) write(b []byte, flush bool) bool {
	if o.mu != nil {
		o.mu.Lock()
		defer o.mu.Unlock()
	}
	return o.writeLocked(b, flush)
}

func (o *writer) writeLocked(b []byte, flush bool) bool {
	now := time.Now()
	if o.deadline.Sub(now) < o.renew {
		o.deadline = now.Add(o.timeout)
		_ = o.rc.SetWriteDeadline(o.deadline)
	}
	_, err := o.w.Write(b)
	if err == nil && flush {
		err = o.rc.Flush()
	}
	o.last = now
	if err != nil {
		o.err = err
		return false
	}
	return true
}

// startPing writes p's ping whenever nothing was written for p.Every().
func (o *writer) startPing(p Pinger) {
	o.mu = new(sync.Mutex)
	every := p.Every()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last = time.Now()
	o.ping = time.AfterFunc(every, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.done || o.err != nil {
			return
		}
		if since := time.Since(o.last); since < every {
			o.ping.Reset(every - since)
			return
		}
		if o.writeLocked(p.Ping(nil), true) {
			o.ping.Reset(every)
		}
	})
}

// stopPing ends the pings: none is written after it returns.
func (o *writer) stopPing() {
	o.mu.Lock()
	o.done = true
	o.mu.Unlock()
	o.ping.Stop()
}

// run writes the held chunks, then every chunk as it arrives, then the
// stream's end or its failure; a failure rs continues goes on with the
// continuation's chunks, spliced.
func run(o *writer, st provider.Stream, held [][]byte, f Framer, rs Rescuer) (end End) {
	pu := pump{f: f, rs: rs}
	defer pu.give(nil)
	pu.tr.last = -1
	for {
		err := pu.one(o, st, held, &end)
		if err == nil {
			return end
		}
		if end.Kind == outcome.Canceled {
			return end // the client left; nobody to tell
		}
		if rs == nil || !pu.tr.free() {
			break
		}
		prefix, lost := pu.tr.cut()
		c, ok := rs.Rescue(err, prefix)
		if !ok {
			break
		}
		if c.Note != "" {
			if !o.write(sse.AppendComment(pu.take(), c.Note), false) {
				end.Kind = outcome.Canceled
				return end
			}
		}
		s := newSplice(&pu.tr, lost)
		pu.sp, st, held = &s, c.Stream, c.Held
	}
	buf := pu.take()
	if f != nil {
		o.write(f.Fail(buf, end.Kind), true)
		return end
	}
	buf = append(buf, "data: "...)
	buf = openaiwire.AppendError(buf, openaiwire.Error{Type: "server_error", Code: "upstream_error",
		Message: "the provider's stream failed after it started (" + end.Kind.String() + "); the answer is incomplete"})
	buf = append(buf, "\n\n"...)
	o.write(buf, true)
	return end
}

// pump is run's state: how it frames, the buffer an event is framed in
// (fb, only while it is: a stream waiting for its next event holds none;
// docs/BENCHMARKS.md, "Memory per stream"), and, while rs could continue
// the stream, what the client was sent (tr) and how a continuation's
// chunks are rewritten (sp; nil: none). The writer is not one of its
// fields: it would then escape to the heap.
type pump struct {
	f  Framer
	rs Rescuer
	fb *frameBuf
	tr transcript
	sp *splice
}

// frameBuf is a buffer events are framed in, from frameBufs.
type frameBuf struct{ b []byte }

var frameBufs = sync.Pool{New: func() any { return &frameBuf{b: make([]byte, 0, 1024)} }}

// maxFrameBuf bounds the buffers kept for reuse.
const maxFrameBuf = 64 << 10

// take returns the frame buffer, empty, taking one if none is held.
func (pu *pump) take() []byte {
	if pu.fb == nil {
		pu.fb = frameBufs.Get().(*frameBuf)
	}
	return pu.fb.b[:0]
}

// give returns the frame buffer, b being what it grew to (nil: as it
// was), once its bytes are written.
func (pu *pump) give(b []byte) {
	if pu.fb == nil {
		return
	}
	if b != nil {
		pu.fb.b = b[:0]
	}
	if cap(pu.fb.b) <= maxFrameBuf {
		frameBufs.Put(pu.fb)
	}
	pu.fb = nil
}

// frame appends p as the client's events to dst.
func (pu *pump) frame(dst, p []byte) ([]byte, error) {
	if pu.f == nil {
		return sse.AppendData(dst, p), nil
	}
	return pu.f.Chunk(dst, p)
}

// send frames p into dst; a stream that may be rescued goes through
// sendKept.
func (pu *pump) send(dst, p []byte) ([]byte, error) {
	if pu.rs != nil {
		return pu.sendKept(dst, p)
	}
	return pu.frame(dst, p)
}

// sendKept is send that rewrites a continuation's chunk (sp) and keeps
// what the client is sent (tr).
func (pu *pump) sendKept(dst, p []byte) ([]byte, error) {
	if pu.sp != nil {
		pre, out := pu.sp.rewrite(p)
		if pre != nil {
			pu.tr.add(pre)
			var err error
			if dst, err = pu.frame(dst, pre); err != nil {
				return dst, err
			}
		}
		if p = out; p == nil {
			return dst, nil
		}
	}
	pu.tr.add(p)
	return pu.frame(dst, p)
}

// one writes to o one stream's held chunks, then every chunk as it arrives,
// then its end, setting end; a non-nil error is the provider's failure
// (end says its kind; nothing was written for it) or the client gone
// (Canceled).
func (pu *pump) one(o *writer, st provider.Stream, held [][]byte, end *End) (err error) {
	buf := pu.take()
	// A stream that can tell whether its next event is already buffered
	// lets events that arrived together leave in one flush (one syscall)
	// instead of one each; an event with nothing behind it is flushed at
	// once, so no token waits.
	pending, _ := st.(interface{ Pending() bool })
	kept, f := pu.rs != nil, pu.f
	for _, p := range held {
		if buf, err = pu.send(buf, p); err != nil {
			break
		}
	}
	// Framed (copied into buf): the chunks are not kept for the stream's
	// life by whoever handed them over (failover.Served.Held; a few
	// hundred bytes a stream: docs/BENCHMARKS.md, "Memory per stream").
	clear(held)
	if len(buf) > 0 && !o.write(buf, true) {
		end.Kind = outcome.Canceled
		return errCanceled
	}
	for err == nil {
		var p []byte
		pu.give(buf) // written: the wait holds no buffer
		p, err = st.Next()
		buf = pu.take()
		if err != nil {
			break
		}
		// send, by hand: the hot path pays no call of its own.
		switch {
		case kept:
			buf, err = pu.sendKept(buf[:0], p)
		case f == nil:
			buf = sse.AppendData(buf[:0], p)
		default:
			buf, err = f.Chunk(buf[:0], p)
		}
		if err != nil {
			break
		}
		if len(buf) > 0 && !o.write(buf, pending == nil || !pending.Pending()) {
			end.Kind = outcome.Canceled
			return errCanceled
		}
	}
	pu.fb.b = buf[:0] // grown, for what comes next
	if err == io.EOF {
		if pu.f == nil {
			o.write(sse.Done, true)
		} else {
			o.write(pu.f.End(buf[:0]), true)
		}
		end.Kind = outcome.OK
		return nil
	}
	end.Kind, end.Err = outcome.KindOf(err), err
	return err
}

// errCanceled is pump.one's error for a client that is gone.
var errCanceled = errors.New("the client went away")

// Shared header values: net/http only reads them.
var (
	valEventStream = []string{"text/event-stream"}
	valNoCache     = []string{"no-cache"}
	valNo          = []string{"no"}
)
