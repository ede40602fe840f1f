package chat

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/relay"
)

// Events writes a provider's chat stream as the Messages API's event
// sequence (it is the proxy's relay.Framer). The sequence is the one
// Anthropic sends and its SDKs' stream helpers accumulate:
//
//	message_start                   the message: empty content, stop_reason null,
//	                                the router's estimate of input_tokens
//	for each content block, index 0, 1, 2…, one after another:
//	  text:     content_block_start, content_block_delta (text_delta)…,
//	            content_block_stop
//	  tool_use: content_block_start (id, name, input {}),
//	            content_block_delta (input_json_delta)…, content_block_stop
//	message_delta                   stop_reason, and usage from the chat
//	                                stream's usage chunk
//	message_stop
//
// A provider failure after the commit ends the stream with one error
// event and nothing else (the SDKs raise it as an API error). Each event
// is "event: <type>\ndata: <json>\n\n", its JSON's type the event's.
// Reasoning deltas are dropped. A piece of a tool call whose block was
// already closed (providers stream calls one after another, so this is
// rare) is dropped: a block cannot be reopened. Ping writes the keep-alive
// event a handler sends during a long silence. An Events serves one
// stream, from one goroutine.
type Events struct {
	t       *Translation
	started bool
	open    int     // index of the open block; -1 none
	tool    bool    // the open block is a tool_use
	blocks  int     // blocks opened so far
	callIdx int64   // the open tool_use's chat tool call index
	callID  string  // the open tool_use's chat tool call id, "" none
	seen    []int64 // the chat tool call indexes that opened a block
	calls   bool    // a tool_use block was opened
	stop    string  // stop_reason from the finish reason; "" none yet
	usage   usage
}

var _ relay.Framer = (*Events)(nil)

// Events returns the Framer for a streamed answer.
func (t *Translation) Events() *Events { return &Events{t: t, open: -1} }

// errBadChunk ends a stream whose provider sent a chunk that is not a
// chat chunk.
var errBadChunk = &outcome.Error{Kind: outcome.ServerError, Message: "the provider's stream sent a chunk that is not a chat completion chunk"}

// Chunk appends the events for one chat chunk; on error it appends
// nothing.
func (e *Events) Chunk(dst, payload []byte) ([]byte, error) {
	// payload is valid JSON (provider.Stream's contract: the adapter
	// checked it, so text is copied as the chunk wrote it); it is not
	// modified during Chunk, and nothing read from it is kept but
	// copies.
	doc := gjson.Parse(unsafeString(payload))
	if !doc.IsObject() {
		return dst, errBadChunk
	}
	if !e.started {
		dst = e.start(dst, doc.Get("id").Str)
	}
	var choices gjson.Result
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = v
		case "usage":
			// A usage chunk (choices empty) comes last when asked for.
			e.usage.read(v)
		}
		return true
	})
	choices.ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() == 0 { // one choice is asked for
			dst = e.choice(dst, c)
		}
		return true
	})
	return dst, nil
}

// choice appends the events for one choice's delta and remembers its
// finish reason.
func (e *Events) choice(dst []byte, c gjson.Result) []byte {
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "delta":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "content", "refusal":
					if v.Type == gjson.String && len(v.Raw) > 2 {
						dst = e.text(dst, v.Raw)
					}
				case "tool_calls":
					v.ForEach(func(_, tc gjson.Result) bool {
						dst = e.call(dst, tc)
						return true
					})
				}
				return true
			})
		case "finish_reason":
			if v.Type == gjson.String && v.Str != "" {
				e.stop = stopReason(v.Str, false) // a constant: payload is reused
			}
		}
		return true
	})
	return dst
}

// End appends the rest of a stream the provider finished: the open
// block's stop, message_delta and message_stop.
func (e *Events) End(dst []byte) []byte {
	if !e.started {
		dst = e.start(dst, "")
	}
	dst = e.closeBlock(dst)
	stop := e.stop
	if stop == "" || stop == "end_turn" {
		stop = stopReason("", e.calls)
	}
	dst = append(dst, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\""...)
	dst = append(dst, stop...)
	dst = append(dst, `","stop_sequence":null},"usage":`...)
	dst = e.usage.append(dst, false)
	return append(dst, "}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// Fail appends the end of a stream a provider failure cut after the
// commit: one error event, of the type Anthropic gives the failure's
// kind. Open blocks stay open, so no client takes the answer as whole.
func (e *Events) Fail(dst []byte, kind outcome.Kind) []byte {
	dst = append(dst, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\""...)
	dst = append(dst, errorType(kind)...)
	dst = append(dst, `","message":"the provider's stream failed after it started (`...)
	dst = append(dst, kind.String()...) // snake_case words: nothing to escape
	return append(dst, "); the answer is incomplete\"}}\n\n"...)
}

// Ping appends a ping event, which a handler writes during a long silence
// (Claude Code drops a stream silent for five minutes).
func (e *Events) Ping(dst []byte) []byte {
	return append(dst, "event: ping\ndata: {\"type\": \"ping\"}\n\n"...)
}

// errorType is Anthropic's error type for a failure of kind.
func errorType(kind outcome.Kind) string {
	switch kind {
	case outcome.RateLimited:
		return "rate_limit_error"
	case outcome.Overloaded:
		return "overloaded_error"
	}
	return "api_error"
}

// start appends message_start.
func (e *Events) start(dst []byte, chatID string) []byte {
	e.started = true
	dst = append(dst, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\""...)
	dst = appendMessageID(dst, chatID)
	dst = append(dst, `","type":"message","role":"assistant","model":`...)
	dst = str(dst, e.t.model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, e.t.estimate, 10)
	return append(dst, ",\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":0}}}\n\n"...)
}

// blockStart appends content_block_start's head for a new block, up to
// its content_block's fields.
func (e *Events) blockStart(dst []byte, tool bool) []byte {
	e.open, e.tool = e.blocks, tool
	e.blocks++
	dst = append(dst, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	return strconv.AppendInt(dst, int64(e.open), 10)
}

// deltaHead appends content_block_delta's head, up to the delta's fields.
func (e *Events) deltaHead(dst []byte) []byte {
	dst = append(dst, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	return strconv.AppendInt(dst, int64(e.open), 10)
}

// text appends a text delta, opening a text block first when the open
// block is not one. lit is the text's JSON string literal as the chunk
// has it: Chunk checked the chunk is valid JSON, so the literal is one
// and goes out as it came, neither unescaped nor escaped again.
func (e *Events) text(dst []byte, lit string) []byte {
	if e.open < 0 || e.tool {
		dst = e.closeBlock(dst)
		dst = e.blockStart(dst, false)
		dst = append(dst, ",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"...)
	}
	dst = e.deltaHead(dst)
	dst = append(dst, `,"delta":{"type":"text_delta","text":`...)
	dst = append(dst, lit...)
	return append(dst, "}}\n\n"...)
}

// call appends a piece of a tool call: a new call (another index, or
// another id) closes the open block and opens a tool_use block; its
// arguments go out as input_json_delta.
func (e *Events) call(dst []byte, tc gjson.Result) []byte {
	var idx, id, fn gjson.Result
	tc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			idx = v
		case "id":
			id = v
		case "function":
			fn = v
		}
		return true
	})
	i := idx.Int()
	newCall := e.open < 0 || !e.tool ||
		idx.Exists() && i != e.callIdx ||
		id.Str != "" && id.Str != e.callID
	if newCall {
		if e.called(i) && (id.Str == "" || id.Str == e.callID) {
			return dst // a later piece of a call whose block is closed
		}
		dst = e.closeBlock(dst)
		dst = e.blockStart(dst, true)
		dst = append(dst, `,"content_block":{"type":"tool_use","id":"`...)
		dst = appendToolID(dst, id.Str)
		dst = append(dst, `","name":`...)
		dst = str(dst, fn.Get("name").Str)
		dst = append(dst, ",\"input\":{}}}\n\n"...)
		e.callIdx, e.callID, e.calls = i, strings.Clone(id.Str), true
		e.seen = append(e.seen, i)
	}
	args := fn.Get("arguments")
	switch {
	case args.Type == gjson.String && len(args.Raw) > 2:
	case args.IsObject():
		// A server that sends the arguments whole, as an object.
	default:
		return dst
	}
	dst = e.deltaHead(dst)
	dst = append(dst, `,"delta":{"type":"input_json_delta","partial_json":`...)
	if args.Type == gjson.String {
		dst = append(dst, args.Raw...) // a JSON string literal, as for text
	} else {
		dst = str(dst, args.Raw)
	}
	return append(dst, "}}\n\n"...)
}

// called reports whether chat tool call index i has opened a block.
func (e *Events) called(i int64) bool {
	for _, j := range e.seen {
		if j == i {
			return true
		}
	}
	return false
}

// closeBlock appends the open block's content_block_stop.
func (e *Events) closeBlock(dst []byte) []byte {
	if e.open < 0 {
		return dst
	}
	dst = append(dst, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	dst = strconv.AppendInt(dst, int64(e.open), 10)
	e.open = -1
	return append(dst, "}\n\n"...)
}
