package relay

import (
	"io"
	"net/http"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// maxHeld bounds the role-only preamble chunks held back before the
// commit point; past it the stream commits anyway.
const maxHeld = 16

// Preamble reads a stream up to its first chunk with content and returns
// the chunks read (copies), so nothing is written before the provider has
// shown it can answer. A stream that ends cleanly before any content
// returns what it had.
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
// do not know (which we must not hold back).
func hasContent(p []byte) bool {
	ch := gjson.GetBytes(p, "choices")
	if !ch.IsArray() {
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

// Stream commits the stream: headers, the held chunks, then every chunk as
// it arrives. A write blocked for writeTimeout (a client that stopped
// reading) ends the stream. A provider failure after the commit ends it
// with one error event and no [DONE], so no client mistakes a truncated
// answer for a whole one.
func Stream(w http.ResponseWriter, st provider.Stream, held [][]byte, writeTimeout time.Duration) (end End) {
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
	// write sends b, flushing when flush is set; false means the client
	// is gone or stopped reading.
	write := func(b []byte, flush bool) bool {
		if now := time.Now(); deadline.Sub(now) < renew {
			deadline = now.Add(writeTimeout)
			_ = rc.SetWriteDeadline(deadline)
		}
		_, err := w.Write(b)
		if err == nil && flush {
			err = rc.Flush()
		}
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
	for _, p := range held {
		buf = sse.AppendData(buf, p)
	}
	if len(buf) > 0 && !write(buf, true) {
		end.Kind = outcome.Canceled
		return end
	}
	for {
		p, err := st.Next()
		if err == io.EOF {
			write(sse.Done, true)
			end.Kind = outcome.OK
			return end
		}
		if err != nil {
			end.Kind, end.Err = outcome.KindOf(err), err
			if end.Kind == outcome.Canceled {
				return end // the client left; nobody to tell
			}
			buf = append(buf[:0], "data: "...)
			buf = openaiwire.AppendError(buf, openaiwire.Error{Type: "server_error", Code: "upstream_error",
				Message: "the provider's stream failed after it started (" + end.Kind.String() + "); the answer is incomplete"})
			buf = append(buf, "\n\n"...)
			write(buf, true)
			return end
		}
		buf = sse.AppendData(buf[:0], p)
		if !write(buf, pending == nil || !pending.Pending()) {
			end.Kind = outcome.Canceled
			return end
		}
	}
}

// Shared header values: net/http only reads them.
var (
	valEventStream = []string{"text/event-stream"}
	valNoCache     = []string{"no-cache"}
	valNo          = []string{"no"}
)
