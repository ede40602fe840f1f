package relay

import (
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

// maxHeld bounds the preamble chunks (role-only, or a native stream's
// opening events) held back before the commit point; past it the stream
// commits anyway.
const maxHeld = 16

// Preamble reads a stream up to its first chunk with content (hasContent)
// and returns the chunks read (copies), so nothing is written before the
// provider has shown it can answer. A stream that ends cleanly before any
// content returns what it had.
func Preamble(st provider.Stream) ([][]byte, error) {
	var held [][]byte
	for {
		p, err := st.Next()
		if err == io.EOF {
			return held, nil
		}
		if err != nil {
			return nil, err
		}
		held = append(held, append([]byte(nil), p...))
		if len(held) >= maxHeld || hasContent(p) {
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
// it arrives. A write blocked for writeTimeout (a client that stopped
// reading) ends the stream. A provider failure after the commit ends it
// with one error event and no [DONE], so no client mistakes a truncated
// answer for a whole one.
func Stream(w http.ResponseWriter, st provider.Stream, held [][]byte, writeTimeout time.Duration) End {
	return relay(w, st, held, writeTimeout, nil)
}

// Translate is Stream with every chunk, the end and a failure written by
// f instead of as chat chunks, [DONE] and an error event.
func Translate(w http.ResponseWriter, st provider.Stream, held [][]byte, writeTimeout time.Duration, f Framer) End {
	return relay(w, st, held, writeTimeout, f)
}

// relay is Stream (f nil) and Translate.
func relay(w http.ResponseWriter, st provider.Stream, held [][]byte, writeTimeout time.Duration, f Framer) (end End) {
	h := w.Header()
	h["Content-Type"] = valEventStream
	h["Cache-Control"] = valNoCache
	h["X-Accel-Buffering"] = valNo
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 1024)
	var deadline time.Time
	// renew is how close to its deadline a write renews it: at most about
	// once a second (setting it is not free), and a client that stops
	// reading is still cut within writeTimeout.
	renew := writeTimeout - min(time.Second, writeTimeout/2)
	// mu serializes writes when a Pinger's timer may write too (nil
	// otherwise); lastWrite is when the latest write ended, done that the
	// relay has returned. All three are guarded by mu.
	var (
		mu        *sync.Mutex
		lastWrite time.Time
		done      bool
	)
	// write sends b, flushing when flush is set; false means the client
	// is gone or stopped reading.
	write := func(b []byte, flush bool) bool {
		if mu != nil {
			mu.Lock()
			defer mu.Unlock()
		}
		now := time.Now()
		if deadline.Sub(now) < renew {
			deadline = now.Add(writeTimeout)
			_ = rc.SetWriteDeadline(deadline)
		}
		_, err := w.Write(b)
		if err == nil && flush {
			err = rc.Flush()
		}
		lastWrite = now
		if err != nil {
			end.WriteErr = err
			return false
		}
		return true
	}
	// A stream that can tell whether its next event is already buffered
	// lets events that arrived together leave in one flush (one syscall)
	// instead of one each; an event with nothing behind it is flushed at
	// once, so no token waits.
	pending, _ := st.(interface{ Pending() bool })
	// The deadline must not outlive this request on a kept-alive
	// connection (the next request's answer may come much later).
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	if p, ok := f.(Pinger); ok {
		// Keep-alive events during the provider's silent gaps
		// (docs/ARCHITECTURE.md, "Anthropic Messages API"): a timer
		// callback, not a goroutine of the request's; it never writes
		// after the relay returned.
		mu = new(sync.Mutex)
		every := p.Every()
		var t *time.Timer // set under mu, before the callback can read it
		mu.Lock()
		t = time.AfterFunc(every, func() {
			mu.Lock()
			defer mu.Unlock()
			if done || end.WriteErr != nil {
				return
			}
			if since := time.Since(lastWrite); since < every {
				t.Reset(every - since)
				return
			}
			now := time.Now()
			if deadline.Sub(now) < renew {
				deadline = now.Add(writeTimeout)
				_ = rc.SetWriteDeadline(deadline)
			}
			_, err := w.Write(p.Ping(nil))
			if err == nil {
				err = rc.Flush()
			}
			lastWrite = now
			if err != nil {
				end.WriteErr = err
				return
			}
			t.Reset(every)
		})
		mu.Unlock()
		defer func() {
			mu.Lock()
			done = true
			mu.Unlock()
			t.Stop()
		}()
	}
	// frame appends one chunk as the client's events.
	frame := func(dst, p []byte) ([]byte, error) {
		if f == nil {
			return sse.AppendData(dst, p), nil
		}
		return f.Chunk(dst, p)
	}
	var err error
	for _, p := range held {
		if buf, err = frame(buf, p); err != nil {
			break
		}
	}
	if len(buf) > 0 && !write(buf, true) {
		end.Kind = outcome.Canceled
		return end
	}
	for err == nil {
		var p []byte
		if p, err = st.Next(); err != nil {
			break
		}
		if buf, err = frame(buf[:0], p); err != nil {
			break
		}
		if len(buf) > 0 && !write(buf, pending == nil || !pending.Pending()) {
			end.Kind = outcome.Canceled
			return end
		}
	}
	if err == io.EOF {
		if f == nil {
			write(sse.Done, true)
		} else {
			write(f.End(buf[:0]), true)
		}
		end.Kind = outcome.OK
		return end
	}
	end.Kind, end.Err = outcome.KindOf(err), err
	if end.Kind == outcome.Canceled {
		return end // the client left; nobody to tell
	}
	if f != nil {
		write(f.Fail(buf[:0], end.Kind), true)
		return end
	}
	buf = append(buf[:0], "data: "...)
	buf = openaiwire.AppendError(buf, openaiwire.Error{Type: "server_error", Code: "upstream_error",
		Message: "the provider's stream failed after it started (" + end.Kind.String() + "); the answer is incomplete"})
	buf = append(buf, "\n\n"...)
	write(buf, true)
	return end
}

// Shared header values: net/http only reads them.
var (
	valEventStream = []string{"text/event-stream"}
	valNoCache     = []string{"no-cache"}
	valNo          = []string{"no"}
)
