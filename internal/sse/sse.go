package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
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

// Reader reads events from an event stream.
type Reader struct {
	br   *bufio.Reader
	max  int
	name []byte
	data []byte
	line []byte
}

// readBuffer is the Reader's buffer. Chat chunks are a few hundred bytes;
// a longer line is gathered across reads, so a small buffer costs nothing
// but memory saved on every open stream.
const readBuffer = 2 << 10

// NewReader returns a Reader on r with the default event size limit.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, readBuffer), max: DefaultMaxEvent}
}

// Pending reports whether the data already read from the connection holds
// a whole data event, so Next would return without waiting on the network.
// A relay uses it to batch writes: flush only when nothing more is ready.
func (r *Reader) Pending() bool {
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
		line, err := r.readLine()
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

// readLine returns one line without its terminator (LF or CRLF, and any
// CRs before it). It
// copies only lines longer than the bufio buffer. A last line with no
// terminator is returned as a line; the call after it returns io.EOF.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
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
		// CRs before the LF go too: "data:x\r\r\n" is, to a reader that
		// also ends lines at a lone CR as the SSE specification does, the
		// line "data:x" and a blank line; the blank line the LF makes
		// next dispatches the same event.
		line = bytes.TrimSuffix(line, []byte{'\n'})
		return bytes.TrimRight(line, "\r"), nil
	}
}

// AppendData appends payload framed as one "data:" event. A payload with
// newlines (a provider's pretty-printed JSON joined from several data
// lines) becomes one "data:" line per line, which a reader joins back.
func AppendData(dst, payload []byte) []byte {
	for {
		i := bytes.IndexByte(payload, '\n')
		if i < 0 {
			break
		}
		dst = append(dst, "data: "...)
		dst = append(dst, bytes.TrimRight(payload[:i], "\r")...)
		dst = append(dst, '\n')
		payload = payload[i+1:]
	}
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, '\n', '\n')
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
