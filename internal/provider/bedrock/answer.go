package bedrock

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// usage is Converse's token count as it reports it: inputTokens leaves out
// the prompt cache's reads and writes, reported apart.
type usage struct {
	input, output, cacheRead, cacheWrite int64
}

// read sets the fields present in a Converse usage object.
func (u *usage) read(r gjson.Result) {
	for _, f := range [...]struct {
		key string
		dst *int64
	}{
		{"inputTokens", &u.input},
		{"outputTokens", &u.output},
		{"cacheReadInputTokens", &u.cacheRead},
		{"cacheWriteInputTokens", &u.cacheWrite},
	} {
		if v := r.Get(f.key); v.Type == gjson.Number {
			*f.dst = v.Int()
		}
	}
}

func (u usage) prompt() int64 { return u.input + u.cacheRead + u.cacheWrite }

// outcome is the usage the router counts: the whole prompt, its cache
// reads and writes also apart (they are priced apart).
func (u usage) outcome() outcome.Usage {
	return outcome.Usage{PromptTokens: u.prompt(), CompletionTokens: u.output, CachedInput: u.cacheRead, CacheWrite: u.cacheWrite}
}

func (u usage) wire() *openaiwire.Usage {
	return &openaiwire.Usage{PromptTokens: u.prompt(), CompletionTokens: u.output, TotalTokens: u.prompt() + u.output,
		PromptTokensDetails: &openaiwire.PromptTokensDetails{CachedTokens: u.cacheRead}}
}

// finishReason maps Converse's stopReason to OpenAI's finish_reason;
// unknown reasons are "stop".
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return "stop"
}

// nullLogprobs is every choice's logprobs: Converse has none.
var nullLogprobs = json.RawMessage("null")

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func malformed(what string) *outcome.Error {
	return &outcome.Error{Kind: outcome.ServerError, Status: http.StatusOK, Message: "reading bedrock converse answer: " + what}
}

// convertConverse appends the OpenAI chat.completion for the Converse
// answer raw to dst: text blocks joined, toolUse blocks as tool calls,
// reasoning not relayed.
func convertConverse(dst, raw []byte, id, model string, created int64) ([]byte, usage, error) {
	if !jsoncheck.Valid(raw) {
		return nil, usage{}, malformed("invalid JSON")
	}
	doc := gjson.Parse(unsafeString(raw)) // raw is not modified while doc is in use
	blocks := doc.Get("output.message.content")
	if !blocks.IsArray() {
		return nil, usage{}, malformed("no output.message.content array")
	}
	var text strings.Builder
	nText := 0
	var calls []openaiwire.ToolCall
	blocks.ForEach(func(_, b gjson.Result) bool {
		if t := b.Get("text"); t.Type == gjson.String {
			text.WriteString(t.Str)
			nText++
		}
		if tu := b.Get("toolUse"); tu.IsObject() {
			args := tu.Get("input").Raw
			if args == "" {
				args = "{}"
			}
			calls = append(calls, openaiwire.ToolCall{ID: tu.Get("toolUseId").Str, Type: "function",
				Function: openaiwire.FunctionCall{Name: tu.Get("name").Str, Arguments: args}})
		}
		return true
	})
	msg := openaiwire.ResponseMessage{Role: "assistant", ToolCalls: calls}
	if nText > 0 {
		s := text.String()
		msg.Content = &s
	}
	var u usage
	u.read(doc.Get("usage"))
	out, err := openaiwire.Append(dst, &openaiwire.ChatCompletion{
		ID: id, Object: openaiwire.ObjectChatCompletion, Created: created, Model: model,
		Choices: []openaiwire.ChatChoice{{Message: msg, Logprobs: nullLogprobs,
			FinishReason: finishReason(doc.Get("stopReason").Str)}},
		Usage: u.wire(),
	})
	if err != nil {
		return nil, usage{}, malformed("encoding the chat completion: " + err.Error())
	}
	return out, u, nil
}

// maxBlocks bounds the content block indexes a stream tracks; a larger
// index is a protocol violation and its deltas are dropped.
const maxBlocks = 1 << 12

// converseStream turns ConverseStream's events into OpenAI
// chat.completion.chunk payloads: messageStart the role chunk, a toolUse
// contentBlockStart a tool call's id and name, contentBlockDelta text or
// a tool call's argument fragment, messageStop the finish chunk, metadata
// the usage (a usage chunk when the client asked for include_usage). The
// answer is whole only when messageStop came: a body that ends before it
// is a cut (outcome.Network), an exception frame the failure it names.
// Next, Usage and Pending are for one goroutine; Close may be called from
// any.
type converseStream struct {
	ctx          context.Context
	body         io.Closer
	f            frames
	includeUsage bool

	// chunk is the payload every Next fills in and encodes with enc into
	// buf, reused: strings a delta takes from an event point into the
	// frame's payload and are cleared once the chunk is encoded.
	chunk  openaiwire.ChatCompletionChunk
	choice [1]openaiwire.ChunkChoice
	call   [1]openaiwire.ToolCallDelta
	text   string
	enc    openaiwire.Encoder
	buf    []byte

	// tools maps a content block index to its OpenAI tool call index plus
	// one (0: not a toolUse block); nTools counts the calls.
	tools  []int32
	nTools int32

	usage     usage
	stopped   bool // messageStop seen
	usageSent bool
	done      bool
	err       error // sticky failure

	closeOnce sync.Once
	closeErr  error
}

var _ provider.Stream = (*converseStream)(nil)

// emptyContent is the first delta's content.
var emptyContent = ""

func newConverseStream(ctx context.Context, body io.ReadCloser, id, model string, created int64, includeUsage bool) *converseStream {
	s := &converseStream{ctx: ctx, body: body, f: newFrames(ctx, body), includeUsage: includeUsage, buf: make([]byte, 0, 512)}
	s.chunk = openaiwire.ChatCompletionChunk{ID: id, Object: openaiwire.ObjectChatCompletionChunk, Created: created, Model: model}
	return s
}

// Next returns the next chunk. io.EOF follows the body's end after
// messageStop (and the usage chunk when include_usage was asked for); any
// other error is an *outcome.Error and repeats on later calls.
func (s *converseStream) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.done {
		return nil, io.EOF
	}
	for {
		typ, payload, err := s.f.next()
		if err == io.EOF {
			if !s.stopped {
				return nil, s.fail(provider.TransportError(s.ctx, "reading bedrock ConverseStream before messageStop", io.ErrUnexpectedEOF))
			}
			s.done = true
			if s.includeUsage && !s.usageSent {
				return s.usageChunk()
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, s.fail(err)
		}
		if !jsoncheck.Valid(payload) {
			return nil, s.fail(&outcome.Error{Kind: outcome.ServerError, Message: "reading bedrock ConverseStream: event " + typ + " is not valid JSON"})
		}
		data := unsafeString(payload) // untouched until the next frame; chunks are encoded before
		switch typ {
		case "messageStart":
			return s.emit(openaiwire.Delta{Role: "assistant", Content: &emptyContent}, "")
		case "contentBlockStart":
			tu := gjson.Get(data, "start.toolUse")
			idx := gjson.Get(data, "contentBlockIndex").Int()
			if !tu.IsObject() || idx < 0 || idx >= maxBlocks {
				continue
			}
			for int64(len(s.tools)) <= idx {
				s.tools = append(s.tools, 0)
			}
			k := s.nTools
			s.nTools++
			s.tools[idx] = k + 1
			s.call[0] = openaiwire.ToolCallDelta{Index: int(k), ID: tu.Get("toolUseId").Str, Type: "function",
				Function: openaiwire.FunctionDelta{Name: tu.Get("name").Str}}
			return s.emit(openaiwire.Delta{ToolCalls: s.call[:]}, "")
		case "contentBlockDelta":
			delta := gjson.Get(data, "delta")
			if t := delta.Get("text"); t.Type == gjson.String {
				if t.Str == "" {
					continue
				}
				s.text = t.Str
				return s.emit(openaiwire.Delta{Content: &s.text}, "")
			}
			part := delta.Get("toolUse.input")
			idx := gjson.Get(data, "contentBlockIndex").Int()
			if part.Type != gjson.String || part.Str == "" || idx < 0 || idx >= int64(len(s.tools)) || s.tools[idx] == 0 {
				continue // reasoning, citations, or a fragment of no known call
			}
			s.call[0] = openaiwire.ToolCallDelta{Index: int(s.tools[idx] - 1), Function: openaiwire.FunctionDelta{Arguments: part.Str}}
			return s.emit(openaiwire.Delta{ToolCalls: s.call[:]}, "")
		case "messageStop":
			s.stopped = true
			return s.emit(openaiwire.Delta{}, finishReason(gjson.Get(data, "stopReason").Str))
		case "metadata":
			s.usage.read(gjson.Get(data, "usage"))
			if s.includeUsage && s.stopped {
				s.usageSent = true
				return s.usageChunk()
			}
		}
		// contentBlockStop and event types added later.
	}
}

func (s *converseStream) emit(d openaiwire.Delta, finish string) ([]byte, error) {
	s.choice[0] = openaiwire.ChunkChoice{Delta: d, Logprobs: nullLogprobs, FinishReason: openaiwire.Finish(finish)}
	s.chunk.Choices = s.choice[:]
	p, err := s.encode()
	s.choice[0], s.call[0], s.text = openaiwire.ChunkChoice{}, openaiwire.ToolCallDelta{}, ""
	return p, err
}

// usageChunk is the last chunk of a stream whose client asked for usage:
// no choices, the usage.
func (s *converseStream) usageChunk() ([]byte, error) {
	s.chunk.Choices = s.choice[:0]
	s.chunk.Usage = s.usage.wire()
	p, err := s.encode()
	s.chunk.Usage = nil
	return p, err
}

func (s *converseStream) encode() ([]byte, error) {
	var err error
	if s.buf, err = s.enc.Append(s.buf[:0], &s.chunk); err != nil {
		return nil, s.fail(&outcome.Error{Kind: outcome.ServerError, Message: "encoding bedrock stream chunk: " + err.Error(), Err: err})
	}
	return s.buf, nil
}

func (s *converseStream) fail(err error) error {
	s.err = err
	return err
}

// Usage is what the metadata event reported (zero before it).
func (s *converseStream) Usage() outcome.Usage { return s.usage.outcome() }

// Close releases the connection; later calls return the first result.
func (s *converseStream) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.body.Close() })
	return s.closeErr
}

// Pending reports whether the next frame is already buffered, so the relay
// may hold its flush.
func (s *converseStream) Pending() bool { return !s.done && s.err == nil && s.f.pending() }
