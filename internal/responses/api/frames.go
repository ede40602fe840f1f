package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// frames is the http.ResponseWriter one WebSocket message's answer is
// written to (docs/ARCHITECTURE.md, "Responses API over WebSocket"): the
// answer writer and the relay write it exactly as they write a POST's,
// and frames sends it as text messages: each server-sent event's data as
// one message (comments and event lines dropped: the type is in the
// data); an error answer as one error event, {"type":"error","status",
// "error"} (OpenAI's and Codex's wrapped error); a whole Response (a
// warm-up's) as its response.created, response.output_item.done and
// terminal events. Each send is bounded by the write deadline the writer
// set (limits.client_write_timeout); past it the connection is closed.
type frames struct {
	ctx  context.Context // the connection's
	send func(ctx context.Context, b []byte) error
	body *msgBody // the message being answered: its read deadline
	h    http.Header

	status int  // 0 until WriteHeader
	events bool // the answer is server-sent events
	// pend is what was written and not sent yet: an unfinished line of
	// events, or a whole answer's body (sent by finish). data is the
	// current event's data lines.
	pend, data []byte
	deadline   time.Time // the write deadline set last
	err        error     // the first failed send: the answer is over
}

func newFrames(ctx context.Context, send func(context.Context, []byte) error, body *msgBody) *frames {
	return &frames{ctx: ctx, send: send, body: body, h: make(http.Header, 4)}
}

func (f *frames) Header() http.Header { return f.h }

func (f *frames) WriteHeader(status int) {
	if f.status != 0 {
		return
	}
	f.status = status
	f.events = status == http.StatusOK && strings.HasPrefix(f.h.Get("Content-Type"), "text/event-stream")
}

func (f *frames) Write(p []byte) (int, error) {
	if f.status == 0 {
		f.WriteHeader(http.StatusOK)
	}
	if f.err != nil {
		return 0, f.err
	}
	f.pend = append(f.pend, p...)
	if f.events {
		f.lines()
	}
	return len(p), f.err
}

// lines sends the events whose blank line has arrived, keeping an
// unfinished line for the next write.
func (f *frames) lines() {
	rest := f.pend
	for f.err == nil {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(rest[:i], []byte{'\r'})
		rest = rest[i+1:]
		switch {
		case len(line) == 0:
			if len(f.data) > 0 {
				f.sendMsg(f.data)
				f.data = f.data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte{' '})
			if len(f.data) > 0 {
				f.data = append(f.data, '\n')
			}
			f.data = append(f.data, v...)
		}
	}
	f.pend = append(f.pend[:0], rest...)
}

// sendMsg sends b as one text message under the write deadline.
func (f *frames) sendMsg(b []byte) {
	ctx, cancel := f.ctx, context.CancelFunc(nil)
	if !f.deadline.IsZero() {
		ctx, cancel = context.WithDeadline(f.ctx, f.deadline)
		defer cancel()
	}
	if err := f.send(ctx, b); err != nil {
		if ctx.Err() == context.DeadlineExceeded && f.ctx.Err() == nil {
			// A client that stopped reading: the writer counts it as it
			// counts a POST's.
			err = fmt.Errorf("sending a websocket message: %w", os.ErrDeadlineExceeded)
		}
		f.err = err
	}
}

// finish sends a whole answer (not events) once the handler is done:
// an error answer as one error event, a 200 (a Response) as its events.
func (f *frames) finish() error {
	if f.events || f.err != nil || f.status == 0 {
		return f.err
	}
	body := bytes.TrimSpace(f.pend)
	if f.status != http.StatusOK {
		f.sendMsg(errorEvent(f.status, body))
		return f.err
	}
	resp := gjson.ParseBytes(body)
	seq := 0
	event := func(typ string, fields ...string) {
		b := append(make([]byte, 0, 64+len(body)), `{"type":"`...)
		b = append(b, typ...)
		b = append(b, `","sequence_number":`...)
		b = strconv.AppendInt(b, int64(seq), 10)
		for i := 0; i+1 < len(fields); i += 2 {
			b = append(b, `,"`...)
			b = append(b, fields[i]...)
			b = append(b, `":`...)
			b = append(b, fields[i+1]...)
		}
		f.sendMsg(append(b, '}'))
		seq++
	}
	event("response.created", "response", string(body))
	for i, it := range resp.Get("output").Array() {
		event("response.output_item.done", "output_index", strconv.Itoa(i), "item", it.Raw)
	}
	terminal := "response.completed"
	switch resp.Get("status").Str {
	case "incomplete":
		terminal = "response.incomplete"
	case "failed":
		terminal = "response.failed"
	}
	event(terminal, "response", string(body))
	return f.err
}

// errorEvent is the error event for an error answer (status, and its
// OpenAI-shaped body {"error":{…}}).
func errorEvent(status int, body []byte) []byte {
	e := gjson.GetBytes(body, "error")
	b := append(make([]byte, 0, 48+len(body)), `{"type":"error","status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"error":`...)
	if e.IsObject() {
		b = append(b, e.Raw...)
	} else {
		b = append(b, `{"type":"server_error","message":`...)
		b = strconv.AppendQuote(b, http.StatusText(status))
		b = append(b, '}')
	}
	return append(b, '}')
}

// Flush sends nothing more: an event is sent when its blank line is
// written.
func (f *frames) Flush() {}

// FlushError reports a failed send (http.ResponseController.Flush).
func (f *frames) FlushError() error { return f.err }

// SetWriteDeadline bounds the sends that follow (zero: none).
func (f *frames) SetWriteDeadline(t time.Time) error {
	f.deadline = t
	return nil
}

// SetReadDeadline bounds the reading of the message being answered
// (limits.body_read_timeout); a deadline already passed ends the
// connection once the answer is sent (apierror.EndConnection).
func (f *frames) SetReadDeadline(t time.Time) error {
	f.body.setDeadline(t)
	return nil
}

// msgBody is one client message as a request body: read by the front
// door's body reader within its limits, never held whole by the
// connection. The connection's reader reads the next message only once
// this one was read to its end (or given up, release).
type msgBody struct {
	r io.Reader
	// closeConn closes the connection: a read past its deadline.
	closeConn func()
	done      chan struct{} // closed once read to its end, or released
	once      sync.Once
	eof       atomic.Bool // read to its end
	end       atomic.Bool // the connection is to end after the answer
	expired   atomic.Bool // its read deadline passed

	mu    sync.Mutex  // guards timer
	timer *time.Timer // the read deadline's
}

func newMsgBody(r io.Reader, closeConn func()) *msgBody {
	return &msgBody{r: r, closeConn: closeConn, done: make(chan struct{})}
}

func (b *msgBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	switch {
	case err == io.EOF:
		b.eof.Store(true)
		b.release()
	case err != nil && b.expired.Load():
		err = fmt.Errorf("reading a websocket message: %w", os.ErrDeadlineExceeded)
	}
	return n, err
}

func (b *msgBody) Close() error { return nil }

// release lets the connection's reader go on.
func (b *msgBody) release() { b.once.Do(func() { close(b.done) }) }

// complete reports whether the message was read to its end, and the
// connection may go on.
func (b *msgBody) complete() bool { return b.eof.Load() && !b.end.Load() }

// setDeadline is the body reader's read deadline: zero clears it, a
// passed one asks for the connection's end after the answer, a future
// one closes the connection if the message is still unread then.
func (b *msgBody) setDeadline(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	switch {
	case t.IsZero():
	case !t.After(time.Now()):
		b.end.Store(true)
	default:
		b.timer = time.AfterFunc(time.Until(t), func() {
			if !b.eof.Load() {
				b.expired.Store(true)
				b.closeConn()
			}
		})
	}
}

// stop clears the read deadline's timer.
func (b *msgBody) stop() { b.setDeadline(time.Time{}) }
