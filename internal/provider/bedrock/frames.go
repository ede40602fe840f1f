package bedrock

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// frameBuffer is the read buffer of a stream's frames: a frame is a
// prelude, a few headers and a JSON payload of a few hundred bytes.
const frameBuffer = 4 << 10

// Frame sizes a stream may declare (docs/ARCHITECTURE.md, "Memory"). A
// frame is its 12-byte prelude (total length, headers length, CRC), its
// headers and payload, and a 4-byte CRC. Its prelude may declare up to
// 4 GiB, and the SDK's decoder reads whatever it declares into memory as
// it arrives, so the declaration is checked before the decoder sees it.
// One frame carries one event: an InvokeModel stream's is a Messages
// event in base64 (4/3 of its size), and maxFrame holds the SSE path's
// largest event (sse.DefaultMaxEvent, 4 MiB) so encoded, with its headers.
const (
	minFrame = 16
	maxFrame = 8 << 20
)

// frames reads an AWS event stream (application/vnd.amazon.eventstream),
// the framing of ConverseStream and InvokeModelWithResponseStream, one
// message at a time with the SDK's decoder, which checks each frame's
// lengths and CRCs. It is for one goroutine.
type frames struct {
	ctx context.Context
	r   *bufio.Reader
	dec *eventstream.Decoder
	buf []byte // the payload buffer, reused by every frame
}

func newFrames(ctx context.Context, body io.Reader) frames {
	return frames{ctx: ctx, r: bufio.NewReaderSize(body, frameBuffer), dec: eventstream.NewDecoder()}
}

// next returns the next event frame's :event-type and payload, valid until
// the next call. An exception or error frame is returned as its
// *outcome.Error (exceptionError). io.EOF means the body ended cleanly
// between frames; a frame cut short or damaged is a cut, classified by
// provider.TransportError (Network, or the context's cause).
func (f *frames) next() (string, []byte, error) {
	if _, err := f.r.Peek(1); err == io.EOF {
		return "", nil, io.EOF
	}
	// From here on, even io.EOF is a frame cut short. A prelude the reader
	// cannot peek whole is the decoder's to find cut.
	if b, err := f.r.Peek(8); err == nil {
		total, headers := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
		if total < minFrame || total > maxFrame || headers > total-minFrame {
			return "", nil, &outcome.Error{Kind: outcome.ServerError, Message: "reading bedrock event stream: a frame declares " +
				strconv.FormatUint(uint64(total), 10) + " bytes with " + strconv.FormatUint(uint64(headers), 10) +
				" of headers (at most " + strconv.Itoa(maxFrame) + ")"}
		}
	}
	msg, err := f.dec.Decode(f.r, f.buf[:0])
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", nil, provider.TransportError(f.ctx, "reading bedrock event stream", err)
	}
	if cap(msg.Payload) > cap(f.buf) {
		f.buf = msg.Payload[:0]
	}
	switch headerString(msg.Headers, ":message-type") {
	case "exception":
		return "", nil, exceptionError(headerString(msg.Headers, ":exception-type"), msg.Payload)
	case "error":
		return "", nil, exceptionError(headerString(msg.Headers, ":error-code"),
			[]byte(`{"message":`+quoteJSON(headerString(msg.Headers, ":error-message"))+`}`))
	}
	return headerString(msg.Headers, ":event-type"), msg.Payload, nil
}

// pending reports whether a whole frame is already buffered: the prelude's
// total length is at most what the reader holds.
func (f *frames) pending() bool {
	n := f.r.Buffered()
	if n < 4 {
		return false
	}
	b, _ := f.r.Peek(4)
	return int(binary.BigEndian.Uint32(b)) <= n
}

func headerString(hs eventstream.Headers, name string) string {
	for i := range hs {
		if hs[i].Name == name {
			if v, ok := hs[i].Value.(eventstream.StringValue); ok {
				return string(v)
			}
			return hs[i].Value.String()
		}
	}
	return ""
}

// quoteJSON is s as a JSON string.
func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// invokeEvents is the Messages event stream inside an
// InvokeModelWithResponseStream answer (anthropic.Events): each "chunk"
// frame's payload is {"bytes": base64 of one Messages event's JSON}, which
// Next decodes into a buffer it reuses. Frames of other types are skipped.
type invokeEvents struct {
	f    frames
	data []byte
}

var _ anthropic.Events = (*invokeEvents)(nil)

func newInvokeEvents(ctx context.Context, body io.Reader) *invokeEvents {
	return &invokeEvents{f: newFrames(ctx, body)}
}

// Next returns the next Messages event, its Data valid until the next
// call; errors are frames.next's, and a chunk that is not base64 JSON is a
// ServerError.
func (e *invokeEvents) Next() (sse.Event, error) {
	for {
		typ, payload, err := e.f.next()
		if err != nil {
			return sse.Event{}, err
		}
		if typ != "chunk" {
			continue
		}
		b64 := gjson.GetBytes(payload, "bytes")
		if b64.Type != gjson.String || b64.Index == 0 {
			return sse.Event{}, invalidChunk("a chunk without bytes")
		}
		// The raw value sits in payload at Index, quotes included; base64
		// has nothing JSON would escape.
		src := payload[b64.Index+1 : b64.Index+len(b64.Raw)-1]
		if e.data, err = base64.StdEncoding.AppendDecode(e.data[:0], src); err != nil {
			return sse.Event{}, invalidChunk("a chunk's bytes are not base64")
		}
		if !jsoncheck.Valid(e.data) {
			return sse.Event{}, invalidChunk("a chunk is not JSON")
		}
		return sse.Event{Data: e.data}, nil
	}
}

// Pending reports whether the next frame is already buffered.
func (e *invokeEvents) Pending() bool { return e.f.pending() }

func invalidChunk(what string) *outcome.Error {
	return &outcome.Error{Kind: outcome.ServerError, Message: "reading bedrock invoke stream: " + what}
}
