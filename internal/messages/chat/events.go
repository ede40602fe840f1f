package chat

import (
	"strconv"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
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
	t *Translation
	blockState
	usage usage
	// head is how many bytes the chunk that set it had before its first
	// "choices" value (none of them a "usage"), headText those bytes: a
	// stream's chunks repeat their head (id, object, created, model), so
	// a chunk that begins with the same bytes is read from there, the
	// walk of those bytes known. 0: none.
	head     int
	headText [256]byte
	// seenAt is where in seen each chat tool call index first is (nil
	// until a call): called looks an index up instead of scanning every
	// index seen, which cost a stream of n calls n² steps (issue 31,
	// finding 9). It is not put back with blockState: an entry at or
	// past len(seen), or where seen holds another index now, is stale.
	seenAt map[int64]int
}

// blockState is what a chunk's choices change, put back when a later
// "choices" in the same chunk replaces them (gjson's reading: the last
// counts).
type blockState struct {
	started bool
	open    int     // index of the open block; -1 none
	tool    bool    // the open block is a tool_use
	blocks  int     // blocks opened so far
	callIdx int64   // the open tool_use's chat tool call index
	callID  string  // the open tool_use's chat tool call id, "" none
	seen    []int64 // the chat tool call indexes that opened a block
	calls   bool    // a tool_use block was opened
	stop    string  // stop_reason from the finish reason; "" none yet
}

var _ relay.Framer = (*Events)(nil)

// Events returns the Framer for a streamed answer.
func (t *Translation) Events() *Events { return &Events{t: t, blockState: blockState{open: -1}} }

// errBadChunk ends a stream whose provider sent a chunk that is not a
// chat chunk.
var errBadChunk = &outcome.Error{Kind: outcome.ServerError, Message: "the provider's stream sent a chunk that is not a chat completion chunk"}

// Chunk appends the events for one chat chunk; on error it appends
// nothing.
func (e *Events) Chunk(dst, payload []byte) ([]byte, error) {
	// payload is valid JSON (provider.Stream's contract: the adapter
	// checked it, so text is copied as the chunk wrote it); it is not
	// modified during Chunk, and nothing read from it is kept but
	// copies. It is read as gjson reads it (the first "id", the last
	// "choices", every "usage") in one walk over its text, each choice's
	// delta written as it is walked.
	s := unsafeString(payload)
	i := 0
	for i < len(s) && s[i] <= ' ' {
		i++
	}
	if i == len(s) || s[i] != '{' {
		return dst, errBadChunk
	}
	var (
		id, choices string // choices: the choices to write after the walk
		idSeen      bool
		usageSeen   bool
		mark        = -1       // where the events of the choices written so far begin
		before      blockState // e's before them
	)
	w := jsonscan.Walk(s, i)
	// at: w stands at a "choices" value, the bytes before it the head of
	// a chunk before (so the stream started: the id is not needed).
	at := e.head > 0 && e.head < len(s) && s[:e.head] == string(e.headText[:e.head])
	if at {
		w.Seek(e.head)
	}
	known := at
	for at || w.Member() {
		key := w.Key()
		if at {
			key, at = "choices", false
		}
		switch key {
		case "id":
			w.Skip()
			if !idSeen {
				id, idSeen = w.Val(), true
			}
		case "choices":
			if mark >= 0 {
				// A later "choices" replaces the one written.
				e.blockState, dst, mark = before, dst[:mark], -1
			} else if !known && !usageSeen && w.At() <= len(e.headText) {
				// Nothing before it that the walk must see again.
				e.head, known = copy(e.headText[:], s[:w.At()]), true
			}
			if !idSeen && !e.started {
				// Its events follow message_start, which waits for the id.
				w.Skip()
				choices = w.Val()
				break
			}
			choices, before, mark = "", e.blockState, len(dst)
			if !e.started {
				dst = e.start(dst, jsonscan.Unquote(id))
			}
			var end int
			dst, end = e.choices(dst, w.Text(), w.At())
			w.Resume(end)
		case "usage":
			// A usage chunk (choices empty) comes last when asked for.
			usageSeen = true
			w.Skip()
			e.usage.read(w.Val())
		default:
			w.Skip()
		}
	}
	if !e.started {
		dst = e.start(dst, jsonscan.Unquote(id))
	}
	if choices != "" {
		dst, _ = e.choices(dst, choices, 0)
	}
	return dst, nil
}

// choices appends the events for the choices that begin at s[i]: an
// array's elements, or an object's values. It returns the index just
// past them (-1 when the text ends first).
func (e *Events) choices(dst []byte, s string, i int) ([]byte, int) {
	w := jsonscan.Walk(s, i)
	for w.Member() {
		var end int
		dst, end = e.choice(dst, w.Text(), w.At())
		w.Resume(end)
	}
	return dst, w.At()
}

// choice appends the events for the choice that begins at s[i], when it
// is choice 0 (one choice is asked for): its first "index", 0 when it has
// none; its deltas, in order; its finish reason remembered. It returns
// the index just past the choice (-1 when the text ends first). A choice
// that is not an object carries nothing.
func (e *Events) choice(dst []byte, s string, i int) ([]byte, int) {
	var idx, finish string
	idxSeen := false
	later := -1 // where the first delta before the index begins
	w := jsonscan.Walk(s, i)
	for mark := w.At(); w.Member(); mark = w.At() {
		switch w.Key() {
		case "index":
			w.Skip()
			if !idxSeen {
				idx, idxSeen = w.Val(), true
			}
		case "delta":
			switch {
			case later >= 0:
			case !idxSeen:
				// Written once the index is known, in order with those after.
				later = mark
			case intValue(idx) == 0:
				var end int
				dst, end = e.delta(dst, w.Text(), w.At())
				w.Resume(end)
				continue
			}
			w.Skip()
		case "finish_reason":
			w.Skip()
			if f := jsonscan.Unquote(w.Val()); f != "" {
				finish = f
			}
		default:
			w.Skip()
		}
	}
	if intValue(idx) != 0 {
		return dst, w.At()
	}
	if later >= 0 {
		for d := jsonscan.Members(s, later); d.Member(); {
			if d.Key() != "delta" {
				d.Skip()
				continue
			}
			var end int
			dst, end = e.delta(dst, d.Text(), d.At())
			d.Resume(end)
		}
	}
	if finish != "" {
		e.stop = stopReason(finish, false) // a constant: payload is reused
	}
	return dst, w.At()
}

// delta appends the events for the delta that begins at s[i]: its text
// and refusal, its tool calls (reasoning is dropped). It returns the
// index just past the delta.
func (e *Events) delta(dst []byte, s string, i int) ([]byte, int) {
	w := jsonscan.Walk(s, i)
	for w.Member() {
		switch w.Key() {
		case "content", "refusal":
			w.Skip()
			if len(w.Val()) > 2 && w.Val()[0] == '"' {
				dst = e.text(dst, w.Val())
			}
		case "tool_calls":
			var end int
			if c := w.First(); c != '[' && c != '{' {
				// A scalar, null included, is one piece of a call that
				// carries nothing (gjson's ForEach hands it over once),
				// so "tool_calls":null opens a tool_use block without a
				// name.
				dst, end = e.call(dst, w.Text(), w.At())
				w.Resume(end)
				continue
			}
			calls := jsonscan.Walk(w.Text(), w.At())
			for calls.Member() {
				dst, end = e.call(dst, calls.Text(), calls.At())
				calls.Resume(end)
			}
			w.Resume(calls.At())
		default:
			w.Skip()
		}
	}
	return dst, w.At()
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

// PingEvery is how long a translated stream stays silent after its commit
// before a ping is written (docs/ARCHITECTURE.md, "The Messages API").
const PingEvery = 10 * time.Second

// Every makes Events a relay.Pinger: the relay writes Ping into each gap
// of PingEvery with nothing written.
func (e *Events) Every() time.Duration { return PingEvery }

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

// call appends the piece of a tool call that begins at s[i]: a new call
// (another index, or another id) closes the open block and opens a
// tool_use block; its arguments go out as input_json_delta. Its "index",
// "id" and "function" are the last of each, the function's "name" and
// "arguments" the first. It returns the index just past the piece.
func (e *Events) call(dst []byte, s string, i int) ([]byte, int) {
	var idx, id, name, args string
	w := jsonscan.Walk(s, i)
	for w.Member() {
		switch w.Key() {
		case "index":
			w.Skip()
			idx = w.Val()
		case "id":
			w.Skip()
			id = w.Val()
		case "function":
			name, args = "", ""
			nameSeen, argsSeen := false, false
			fn := jsonscan.Walk(w.Text(), w.At())
			for fn.Next() {
				switch {
				case fn.Key() == "name" && !nameSeen:
					name, nameSeen = fn.Val(), true
				case fn.Key() == "arguments" && !argsSeen:
					args, argsSeen = fn.Val(), true
				}
			}
			w.Resume(fn.At())
		default:
			w.Skip()
		}
	}
	dst = e.piece(dst, idx, id, name, args)
	return dst, w.At()
}

// piece appends a piece of a tool call, given the JSON texts of its
// index, id, name and arguments ("" for each it does not have).
func (e *Events) piece(dst []byte, idx, id, name, args string) []byte {
	i, callID := intValue(idx), jsonscan.Unquote(id)
	newCall := e.open < 0 || !e.tool ||
		idx != "" && i != e.callIdx ||
		callID != "" && callID != e.callID
	if newCall {
		if e.called(i) && (callID == "" || callID == e.callID) {
			return dst // a later piece of a call whose block is closed
		}
		dst = e.closeBlock(dst)
		dst = e.blockStart(dst, true)
		dst = append(dst, `,"content_block":{"type":"tool_use","id":"`...)
		dst = appendToolID(dst, callID)
		dst = append(dst, `","name":`...)
		dst = str(dst, jsonscan.Unquote(name))
		dst = append(dst, ",\"input\":{}}}\n\n"...)
		e.callIdx, e.callID, e.calls = i, strings.Clone(callID), true
		e.markCalled(i)
	}
	switch {
	case len(args) > 2 && args[0] == '"':
	case len(args) > 0 && args[0] == '{':
		// A server that sends the arguments whole, as an object.
	default:
		return dst
	}
	dst = e.deltaHead(dst)
	dst = append(dst, `,"delta":{"type":"input_json_delta","partial_json":`...)
	if args[0] == '"' {
		dst = append(dst, args...) // a JSON string literal, as for text
	} else {
		dst = str(dst, args)
	}
	return append(dst, "}}\n\n"...)
}

// called reports whether chat tool call index i has opened a block.
func (e *Events) called(i int64) bool {
	k, ok := e.seenAt[i]
	return ok && k < len(e.seen) && e.seen[k] == i
}

// markCalled records that chat tool call index i opened a block. seenAt
// keeps i's first place in seen: a later place may be cut by a
// blockState put back while the first stays.
func (e *Events) markCalled(i int64) {
	if !e.called(i) {
		if e.seenAt == nil {
			e.seenAt = make(map[int64]int)
		}
		e.seenAt[i] = len(e.seen)
	}
	e.seen = append(e.seen, i)
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
