package anthropic

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// maxBlocks bounds the content block indexes the stream tracks; an index
// beyond it is a protocol violation and its deltas are dropped.
const maxBlocks = 1 << 12

// stream turns Anthropic's Messages event stream into OpenAI
// chat.completion.chunk payloads (PROVIDERS.md §3.5). Next, Usage and the
// chunks it returns are for one goroutine; Close may be called from any.
type stream struct {
	ctx          context.Context
	body         io.ReadCloser
	events       *sse.Reader
	includeUsage bool
	created      int64
	model        string // the target's model, until message_start names Anthropic's

	// prefix is every chunk's opening up to and including `"choices":`;
	// buf holds the chunk Next returned last.
	prefix []byte
	buf    []byte

	// tools maps an Anthropic content block index to its OpenAI tool call
	// index plus one (0: not a tool_use block). nTools is the running
	// counter OpenAI clients see as tool_calls[].index.
	tools  []int32
	nTools int32

	usage usage
	done  bool  // message_stop seen and handled
	err   error // sticky failure

	closeOnce sync.Once
	closeErr  error
}

var _ provider.Stream = (*stream)(nil)

func newStream(ctx context.Context, body io.ReadCloser, model string, created int64, includeUsage bool) *stream {
	s := &stream{
		ctx:          ctx,
		body:         body,
		events:       sse.NewReader(body),
		includeUsage: includeUsage,
		created:      created,
		model:        model,
		buf:          make([]byte, 0, 512),
	}
	s.setPrefix(gjson.Result{}, gjson.Result{})
	return s
}

// setPrefix builds the chunk opening from message_start's id and model.
func (s *stream) setPrefix(id, model gjson.Result) {
	p := append(s.prefix[:0], `{"id":`...)
	p = appendRawString(p, id)
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, s.created, 10)
	p = append(p, `,"model":`...)
	if model.Type == gjson.String {
		p = append(p, model.Raw...)
	} else {
		p = provider.AppendJSONString(p, s.model)
	}
	s.prefix = append(p, `,"choices":`...)
}

// Next returns the next chunk. io.EOF follows message_stop (and the usage
// chunk when include_usage was asked for); any other error is an
// *outcome.Error and repeats on later calls.
func (s *stream) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.done {
		return nil, io.EOF
	}
	for {
		ev, err := s.events.Next()
		if err != nil {
			return nil, s.fail(s.readError(err))
		}
		if !gjson.ValidBytes(ev.Data) {
			return nil, s.fail(&outcome.Error{Kind: outcome.ServerError,
				Message: "reading anthropic stream: event " + strconv.Quote(string(ev.Name)) + " is not valid JSON"})
		}
		// ev.Data stays untouched until the next events.Next call, and
		// every value taken from it is copied into buf or prefix first.
		data := unsafeString(ev.Data)
		typ := gjson.Get(data, "type").Str
		if typ == "" {
			typ = unsafeString(ev.Name)
		}
		switch typ {
		case "message_start":
			msg := gjson.Get(data, "message")
			s.setPrefix(msg.Get("id"), msg.Get("model"))
			s.usage.read(msg.Get("usage"))
			s.begin()
			s.buf = append(s.buf, `{"role":"assistant","content":""}`...)
			return s.end(""), nil

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
			s.begin()
			s.buf = append(s.buf, `{"tool_calls":[{"index":`...)
			s.buf = strconv.AppendInt(s.buf, int64(k), 10)
			s.buf = append(s.buf, `,"id":`...)
			s.buf = appendRawString(s.buf, block.Get("id"))
			s.buf = append(s.buf, `,"type":"function","function":{"name":`...)
			s.buf = appendRawString(s.buf, block.Get("name"))
			s.buf = append(s.buf, `,"arguments":""}}]}`...)
			return s.end(""), nil

		case "content_block_delta":
			delta := gjson.Get(data, "delta")
			switch delta.Get("type").Str {
			case "text_delta":
				text := delta.Get("text")
				if text.Type != gjson.String || text.Str == "" {
					continue
				}
				s.begin()
				s.buf = append(s.buf, `{"content":`...)
				s.buf = append(s.buf, text.Raw...)
				s.buf = append(s.buf, '}')
				return s.end(""), nil
			case "input_json_delta":
				part := delta.Get("partial_json")
				idx := gjson.Get(data, "index").Int()
				if part.Type != gjson.String || part.Str == "" || idx < 0 || idx >= int64(len(s.tools)) || s.tools[idx] == 0 {
					continue
				}
				s.begin()
				s.buf = append(s.buf, `{"tool_calls":[{"index":`...)
				s.buf = strconv.AppendInt(s.buf, int64(s.tools[idx]-1), 10)
				s.buf = append(s.buf, `,"function":{"arguments":`...)
				s.buf = append(s.buf, part.Raw...)
				s.buf = append(s.buf, "}}]}"...)
				return s.end(""), nil
			}
			continue // thinking, signature, citations

		case "message_delta":
			// Anthropic's counts here are cumulative: the last one wins.
			s.usage.read(gjson.Get(data, "usage"))
			stop := gjson.Get(data, "delta.stop_reason")
			if stop.Type != gjson.String {
				continue
			}
			s.begin()
			s.buf = append(s.buf, "{}"...)
			return s.end(finishReason(stop.Str)), nil

		case "message_stop":
			s.done = true
			if !s.includeUsage {
				return nil, io.EOF
			}
			s.buf = append(s.buf[:0], s.prefix...)
			s.buf = append(s.buf, `[],"usage":`...)
			s.buf = appendUsage(s.buf, s.usage)
			s.buf = append(s.buf, '}')
			return s.buf, nil

		case "error":
			return nil, s.fail(eventError(gjson.Get(data, "error")))
		}
		// ping, content_block_stop and event types added later.
	}
}

// begin starts a chunk in buf, up to its delta value.
func (s *stream) begin() {
	s.buf = append(s.buf[:0], s.prefix...)
	s.buf = append(s.buf, `[{"index":0,"delta":`...)
}

// end closes the chunk begun by begin; finish "" means null.
func (s *stream) end(finish string) []byte {
	s.buf = append(s.buf, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		s.buf = append(s.buf, "null"...)
	} else {
		s.buf = append(s.buf, '"')
		s.buf = append(s.buf, finish...)
		s.buf = append(s.buf, '"')
	}
	s.buf = append(s.buf, "}]}"...)
	return s.buf
}

// readError classifies a failure to read the next event. Even a clean end
// of the body is a cut here: a whole answer ends with message_stop.
func (s *stream) readError(err error) error {
	if errors.Is(err, sse.ErrEventTooLarge) {
		return &outcome.Error{Kind: outcome.ServerError, Message: "reading anthropic stream: " + err.Error(), Err: err}
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return provider.TransportError(s.ctx, "reading anthropic stream before message_stop", err)
}

func (s *stream) fail(err error) error {
	s.err = err
	return err
}

// Usage is prompt tokens from message_start (cache reads and writes
// included) and completion tokens from the last message_delta.
func (s *stream) Usage() outcome.Usage { return s.usage.outcome() }

// Close releases the connection; later calls return the first result.
func (s *stream) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.body.Close() })
	return s.closeErr
}

// Pending reports whether the next payload is probably already read from
// the connection (a whole data event is buffered), so the relay may hold
// its flush. A wrong "true" only delays a flush until that event arrives.
func (s *stream) Pending() bool { return !s.done && s.err == nil && s.events.Pending() }
