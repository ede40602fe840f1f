package anthropic

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// maxBlocks bounds the content block indexes the stream tracks; an index
// beyond it is a protocol violation and its deltas are dropped.
const maxBlocks = 1 << 12

// stream turns Anthropic's Messages event stream into OpenAI
// chat.completion.chunk payloads (see the package doc). Next, Usage and the
// chunks it returns are for one goroutine; Close may be called from any.
type stream struct {
	upstream
	includeUsage bool

	// chunk is the payload every Next fills in and encodes with enc into
	// buf, reused so that an event costs no allocation: its id and model
	// are fixed by message_start, its one choice lives in choice and a
	// tool call's piece in call. Strings a delta takes from an event point
	// into the event's bytes and are cleared once the chunk is encoded.
	chunk  openaiwire.ChatCompletionChunk
	choice [1]openaiwire.ChunkChoice
	call   [1]openaiwire.ToolCallDelta
	text   string // the delta's content
	enc    openaiwire.Encoder
	buf    []byte // the chunk Next returned last

	// tools maps an Anthropic content block index to its OpenAI tool call
	// index plus one (0: not a tool_use block). nTools is the running
	// counter OpenAI clients see as tool_calls[].index.
	tools  []int32
	nTools int32
}

var _ provider.Stream = (*stream)(nil)

// emptyContent is the first delta's content.
var emptyContent = ""

func newStream(ctx context.Context, body io.ReadCloser, model string, created int64, includeUsage bool) *stream {
	return newStreamOn(ctx, sse.NewReader(body), body, model, created, includeUsage)
}

// newStreamOn is newStream on events from any transport; body is closed
// by Close.
func newStreamOn(ctx context.Context, events Events, body io.Closer, model string, created int64, includeUsage bool) *stream {
	s := &stream{
		upstream:     upstream{ctx: ctx, body: body, events: events, target: model},
		includeUsage: includeUsage,
		buf:          make([]byte, 0, 512),
	}
	s.chunk = openaiwire.ChatCompletionChunk{Object: openaiwire.ObjectChatCompletionChunk, Created: created, Model: model}
	return s
}

// setHead fixes the chunks' id and model from message_start's: the id is
// "" when it is not a string, the model the target's when message_start
// names none. Both are copied out of the event (the model interned).
func (s *stream) setHead(id, model gjson.Result) {
	s.chunk.ID = strings.Clone(id.Str)
	s.model = models.Name(model.Str, s.target)
	s.chunk.Model = s.model
	if s.model == "" {
		s.chunk.Model = s.target
	}
}

// Next returns the next chunk. io.EOF follows message_stop, or a clean
// end of the body after message_delta gave the stop reason (a whole
// answer, docs/ARCHITECTURE.md "Streaming"), and the usage chunk when
// include_usage was asked for; any other error is an *outcome.Error and
// repeats on later calls.
func (s *stream) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.done {
		return nil, io.EOF
	}
	for {
		// data stays untouched until the next read; a chunk is encoded
		// before that, and what outlives it is copied.
		_, data, typ, err := s.next()
		if err == io.EOF {
			typ = "message_stop" // the body ended cleanly after the stop reason
		} else if err != nil {
			return nil, err
		}
		switch typ {
		case "message_start":
			msg := gjson.Get(data, "message")
			s.setHead(msg.Get("id"), msg.Get("model"))
			s.usage.read(msg.Get("usage"))
			return s.emit(openaiwire.Delta{Role: "assistant", Content: &emptyContent}, "")

		case "content_block_start":
			block := gjson.Get(data, "content_block")
			if block.Get("type").Str != "tool_use" {
				continue // text starts empty; thinking is not relayed
			}
			idx := gjson.Get(data, "index").Int()
			if idx < 0 || idx >= maxBlocks {
				continue
			}
			for int64(len(s.tools)) <= idx {
				s.tools = append(s.tools, 0)
			}
			k := s.nTools
			s.nTools++
			s.tools[idx] = k + 1
			s.call[0] = openaiwire.ToolCallDelta{Index: int(k), ID: block.Get("id").Str, Type: "function",
				Function: openaiwire.FunctionDelta{Name: block.Get("name").Str}}
			return s.emit(openaiwire.Delta{ToolCalls: s.call[:]}, "")

		case "content_block_delta":
			delta := gjson.Get(data, "delta")
			switch delta.Get("type").Str {
			case "text_delta":
				text := delta.Get("text")
				if text.Type != gjson.String || text.Str == "" {
					continue
				}
				s.text = text.Str
				return s.emit(openaiwire.Delta{Content: &s.text}, "")
			case "input_json_delta":
				part := delta.Get("partial_json")
				idx := gjson.Get(data, "index").Int()
				if part.Type != gjson.String || part.Str == "" || idx < 0 || idx >= int64(len(s.tools)) || s.tools[idx] == 0 {
					continue
				}
				s.call[0] = openaiwire.ToolCallDelta{Index: int(s.tools[idx] - 1),
					Function: openaiwire.FunctionDelta{Arguments: part.Str}}
				return s.emit(openaiwire.Delta{ToolCalls: s.call[:]}, "")
			}
			continue // thinking, signature, citations

		case "message_delta":
			// Anthropic's counts here are cumulative: the last one wins.
			s.usage.read(gjson.Get(data, "usage"))
			stop := gjson.Get(data, "delta.stop_reason")
			if stop.Type != gjson.String {
				continue
			}
			s.finished = true
			return s.emit(openaiwire.Delta{}, finishReason(stop.Str))

		case "message_stop":
			s.done = true
			if !s.includeUsage {
				return nil, io.EOF
			}
			s.chunk.Choices = s.choice[:0]
			s.chunk.Usage = s.usage.wire()
			return s.encode()

		case "error":
			return nil, s.fail(eventError(gjson.Get(data, "error")))
		}
		// ping, content_block_stop and event types added later.
	}
}

// emit encodes the chunk of one choice with delta d; finish "" is null.
func (s *stream) emit(d openaiwire.Delta, finish string) ([]byte, error) {
	s.choice[0] = openaiwire.ChunkChoice{Delta: d, Logprobs: nullLogprobs, FinishReason: openaiwire.Finish(finish)}
	s.chunk.Choices = s.choice[:]
	p, err := s.encode()
	// Drop the views into the event's bytes.
	s.choice[0], s.call[0], s.text = openaiwire.ChunkChoice{}, openaiwire.ToolCallDelta{}, ""
	return p, err
}

// encode writes s.chunk into buf.
func (s *stream) encode() ([]byte, error) {
	var err error
	if s.buf, err = s.enc.Append(s.buf[:0], &s.chunk); err != nil {
		// Only strings and numbers are encoded: this does not happen.
		return nil, s.fail(&outcome.Error{Kind: outcome.ServerError, Message: "encoding anthropic stream chunk: " + err.Error(), Err: err})
	}
	return s.buf, nil
}

// upstream is what both stream kinds read: the answer's events (SSE from
// Anthropic, event-stream frames from a cloud), bound to the request's
// context, and what they said so far. Next, Usage and Pending are for one
// goroutine; Close may be called from any.
type upstream struct {
	ctx    context.Context
	body   io.Closer
	events Events
	target string // the model asked for

	usage    usage
	model    string // the model message_start named; "" before it, or when it named none
	finished bool   // message_delta gave the stop reason: a clean end from here on is whole
	done     bool   // message_stop seen and handled
	err      error  // sticky failure

	closeOnce sync.Once
	closeErr  error
}

// next reads the next event that has data, checked as JSON: its data
// (valid until the next call; data views raw) and its type (the data's
// "type", else the event's name). An event with a name and no data is
// skipped (a browser would not dispatch it either). A failure is sticky
// (fail). io.EOF, not sticky, is a clean end of the body after the stop
// reason: the answer is whole without its message_stop, as a chat answer
// is without [DONE] (docs/ARCHITECTURE.md, "Streaming"); the caller ends
// the stream as message_stop would.
func (s *upstream) next() (raw []byte, data, typ string, err error) {
	for {
		ev, err := s.events.Next()
		if err == io.EOF && s.finished {
			return nil, "", "", io.EOF
		}
		if err != nil {
			return nil, "", "", s.fail(s.readError(err))
		}
		if len(ev.Data) == 0 {
			continue
		}
		if !jsoncheck.Valid(ev.Data) {
			return nil, "", "", s.fail(&outcome.Error{Kind: outcome.ServerError,
				Message: "reading anthropic stream: event " + strconv.Quote(string(ev.Name)) + " is not valid JSON"})
		}
		data = unsafeString(ev.Data)
		if typ = gjson.Get(data, "type").Str; typ == "" {
			typ = unsafeString(ev.Name)
		}
		if typ != "" && !sse.EventName(typ, false) {
			return nil, "", "", s.fail(&outcome.Error{Kind: outcome.ServerError,
				Message: "reading anthropic stream: an event's type " + strconv.Quote(typ) + " is not a Messages event name"})
		}
		return ev.Data, data, typ, nil
	}
}

// readError classifies a failure to read the next event. A clean end of
// the body before the stop reason is a cut here (after it, next does not
// call this). An
// *outcome.Error (a cloud's exception frame) is kept as it is.
func (s *upstream) readError(err error) error {
	if errors.Is(err, sse.ErrEventTooLarge) {
		return &outcome.Error{Kind: outcome.ServerError, Message: "reading anthropic stream: " + err.Error(), Err: err}
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return provider.TransportError(s.ctx, "reading anthropic stream before its stop reason", err)
}

func (s *upstream) fail(err error) error {
	s.err = err
	return err
}

// Usage is prompt tokens from message_start (cache reads and writes
// included, and reported apart), completion tokens from the last
// message_delta, and the model message_start named.
func (s *upstream) Usage() outcome.Usage {
	u := s.usage.outcome()
	u.Model = s.model
	return u
}

// Close releases the connection; later calls return the first result.
func (s *upstream) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.body.Close() })
	return s.closeErr
}

// Pending reports whether the next payload is probably already read from
// the connection (a whole data event is buffered), so the relay may hold
// its flush. A wrong "true" only delays a flush until that event arrives.
func (s *upstream) Pending() bool { return !s.done && s.err == nil && s.events.Pending() }
