package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// DefaultMaxEvent bounds one event's data (a tool call's arguments arrive
// in pieces, so single events stay small; 4 MiB is generous).
const DefaultMaxEvent = 4 << 20

// ErrEventTooLarge is returned when one event's data exceeds the limit.
var ErrEventTooLarge = errors.New("sse: event too large")

// Event is one dispatched event. Name is the "event:" field ("" when
// absent); Data is the joined "data:" lines. Both are valid until the next
// call to Next.
type Event struct {
	Name []byte
	Data []byte
}

// Reader reads events from an event stream. It holds its read buffer
// only while the buffer holds bytes: between events, when all that was
// read is consumed, the buffer goes back to a pool shared by every
// Reader, and the wait for the next event reads one byte without it (a
// stream waits for its events most of its life; docs/BENCHMARKS.md,
// "Memory per stream").
type Reader struct {
	br   *bufio.Reader // nil between events (see above)
	src  first         // what br reads: the source, after the byte read without br
	max  int
	name []byte
	data []byte
	line []byte
	// rest is what is left of the LF-terminated line being read after the
	// lines already taken from it (ended by bare CRs); more says there is
	// one.
	rest []byte
	more bool
}

// readBuffer is the Reader's buffer. Chat chunks are a few hundred bytes;
// a longer line is gathered across reads, so a small buffer costs nothing
// but memory saved on every open stream.
const readBuffer = 2 << 10

// NewReader returns a Reader on r with the default event size limit.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: first{r: r}, max: DefaultMaxEvent}
}

// first is a Reader's source with the byte read while it held no buffer
// put back in front.
type first struct {
	r   io.Reader
	b   [1]byte
	has bool
	err error // the source's error that came with b
}

func (f *first) Read(p []byte) (int, error) {
	if !f.has {
		return f.r.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], f.has = f.b[0], false
	err := f.err
	f.err = nil
	return 1, err
}

var buffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBuffer) }}

// fill takes a buffer for the next bytes: first the next byte is read
// without one (the wait for the next event), then a pooled buffer reads
// on from it. Its error is the source's when no byte came.
func (r *Reader) fill() error {
	var n int
	var err error
	for i := 0; n == 0 && err == nil; i++ {
		if i == 100 { // as bufio gives up on a source that returns nothing
			return io.ErrNoProgress
		}
		n, err = r.src.r.Read(r.src.b[:])
	}
	if n == 0 {
		return err
	}
	r.src.has, r.src.err = true, err
	r.br = buffers.Get().(*bufio.Reader)
	r.br.Reset(&r.src)
	return nil
}

// release gives the buffer back once nothing in it is left to read and no
// line taken from it is still in use.
func (r *Reader) release() {
	if r.br != nil && r.br.Buffered() == 0 && !r.more {
		r.br.Reset(nil)
		buffers.Put(r.br)
		r.br = nil
	}
}

// Pending reports whether the data already read from the connection holds
// a whole data event, so Next would return without waiting on the network.
// A relay uses it to batch writes: flush only when nothing more is ready.
func (r *Reader) Pending() bool {
	if r.br == nil {
		return false
	}
	n := r.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.br.Peek(n)
	i := bytes.Index(b, []byte("data:"))
	return i >= 0 && (bytes.Contains(b[i:], []byte("\n\n")) || bytes.Contains(b[i:], []byte("\r\n\r\n")))
}

// Next returns the next event that carries data or a name. io.EOF means
// the stream ended cleanly between events; io.ErrUnexpectedEOF means it
// ended in the middle of one (a cut connection, never a whole answer).
func (r *Reader) Next() (Event, error) {
	r.name = r.name[:0]
	r.data = r.data[:0]
	hasData, inEvent := false, false
	for {
		line, err := r.nextLine()
		if err != nil {
			if err == io.EOF && inEvent {
				// The spec discards an event not ended by a blank
				// line; for an API stream that is a cut.
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData || len(r.name) > 0 {
				r.release() // the event's name and data are copies
				return Event{Name: r.name, Data: r.data}, nil
			}
			inEvent = false
			continue
		}
		if line[0] == ':' {
			continue // comment / keep-alive
		}
		inEvent = true
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			if len(r.data)+len(value) > r.max {
				return Event{}, fmt.Errorf("%w (over %d bytes)", ErrEventTooLarge, r.max)
			}
			r.data = append(r.data, value...)
			hasData = true
		case "event":
			r.name = append(r.name[:0], value...)
		}
	}
}

// nextLine returns the next line as the SSE specification reads them:
// ended by CRLF, LF or a bare CR. A bare CR inside what the provider sent
// as one line ends a line there for a browser's EventSource and every
// reader that follows the specification, so it does here too: the router
// must read what the client will (issue 31, finding 4). A stream whose
// lines end in bare CRs only is read as its LFs arrive (or is too large).
func (r *Reader) nextLine() ([]byte, error) {
	if !r.more {
		l, err := r.readLine()
		if err != nil {
			return nil, err
		}
		r.rest, r.more = l, true
	}
	line, rest, found := bytes.Cut(r.rest, []byte{'\r'})
	r.rest, r.more = rest, found
	return line, nil
}

// readLine returns one LF-terminated line without its terminator (LF or
// CRLF): CRs inside it are nextLine's to split at. It
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		if r.br == nil {
			if err := r.fill(); err != nil {
				return nil, err // between events: r.line is empty
			}
		}
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if len(r.line)+len(chunk) > r.max {
				return nil, fmt.Errorf("%w (line over %d bytes)", ErrEventTooLarge, r.max)
			}
			r.line = append(r.line, chunk...)
			continue
		case err == io.EOF:
			if len(r.line)+len(chunk) == 0 {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		line := chunk
		if len(r.line) > 0 {
			r.line = append(r.line, chunk...)
			line = r.line
		}
		// A line that filled the buffer is held to the limit as it grows
		// (the ErrBufferFull case above); check here too, or a line of
		// exactly the buffer's size arriving with EOF would slip past.
		if len(line) >= r.br.Size() && len(line) > r.max {
			return nil, fmt.Errorf("%w (line over %d bytes)", ErrEventTooLarge, r.max)
		}
		// One CR before the LF is CRLF's; any other is a bare CR ending a
		// line of its own ("data:x\r\r\n" is the line "data:x" and a
		// blank line).
		line = bytes.TrimSuffix(line, []byte{'\n'})
		return bytes.TrimSuffix(line, []byte{'\r'}), nil
	}
}

// AppendData appends payload framed as one "data:" event. A payload with
// line breaks (a provider's pretty-printed JSON joined from several data
// lines) becomes one "data:" line per line, each break CRLF, LF or a bare
// CR, as a reader following the SSE specification splits them, so that
// no byte of the payload ends a line inside a data line (issue 31,
// finding 4); a reader joins the lines back with LFs.
func AppendData(dst, payload []byte) []byte {
	for {
		i := bytes.IndexAny(payload, "\r\n")
		if i < 0 {
			break
		}
		dst = append(dst, "data: "...)
		dst = append(dst, payload[:i]...)
		dst = append(dst, '\n')
		if payload[i] == '\r' && i+1 < len(payload) && payload[i+1] == '\n' {
			i++
		}
		payload = payload[i+1:]
	}
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, '\n', '\n')
}

// EventName reports whether name may be written as an event line copied
// from a provider's payload: [a-z_]+ (the Messages API's event types), or
// with dots [a-z_.]+ (the Responses API's). A type decoded from JSON may
// hold line breaks, which would write the client's framing (issue 31,
// finding 4); a stream whose type is anything else is malformed.
func EventName(name string, dots bool) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && c != '_' && (c != '.' || !dots) {
			return false
		}
	}
	return true
}

// AppendComment appends text as one SSE comment (": text"), which every
// reader skips; a line break in text ends it there.
func AppendComment(dst []byte, text string) []byte {
	if i := strings.IndexAny(text, "\r\n"); i >= 0 {
		text = text[:i]
	}
	dst = append(dst, ": "...)
	dst = append(dst, text...)
	return append(dst, '\n', '\n')
}

// Done is the OpenAI end-of-stream sentinel event.
var Done = []byte("data: [DONE]\n\n")

// IsDone reports whether data is the OpenAI "[DONE]" sentinel.
func IsDone(data []byte) bool { return string(data) == "[DONE]" }
