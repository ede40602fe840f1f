package relay

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Rescuer continues a stream that failed after the commit point
// (docs/ARCHITECTURE.md, "Streaming": rescue). The relay asks it only when
// the answer the client has so far is free text: one choice, no tool
// call, not inside a thinking block, not finished.
type Rescuer interface {
	// Rescue returns a stream continuing the answer whose text so far,
	// without trailing whitespace, is prefix, the stream relayed until
	// now having failed with err; false when nothing continues it (the
	// stream then ends with its one error event).
	Rescue(err error, prefix string) (Continuation, bool)
}

// Continuation is a stream that continues another one.
type Continuation struct {
	Stream provider.Stream
	// Held are its chunks read before its first content.
	Held [][]byte
	// Note, when not "", is told the client in an SSE comment (which
	// provider continued, and whether from a lower tier: the headers that
	// would have said so are gone).
	Note string
}

// Transcript states.
const (
	freeText uint8 = iota // text, or nothing yet, or between blocks
	inThinking
	notFree // a tool call, a second choice, a refusal, a finish: never rescued
)

// transcript is what the client has been sent of the answer, read from
// the payloads relayed (chat chunks, or a native Messages stream's
// events): its text and whether it is free text now. It is kept only
// while a Rescuer could continue the stream.
type transcript struct {
	text  []byte
	state uint8
	// A native Messages stream's blocks: the latest index sent (-1
	// none) and whether that block is open (then it is text: an open
	// thinking or tool block is not free).
	last int
	open bool
}

// add reads one payload the client was sent.
func (t *transcript) add(p []byte) {
	if t.state == notFree {
		return
	}
	ch := gjson.GetBytes(p, "choices")
	if !ch.IsArray() {
		t.addEvent(p)
		return
	}
	ch.ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() != 0 {
			t.state = notFree
			return false
		}
		if fr := c.Get("finish_reason"); fr.Exists() && fr.Type != gjson.Null {
			t.state = notFree
			return false
		}
		c.Get("delta").ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "role":
			case "content":
				if v.Str != "" {
					t.text = append(t.text, v.Str...)
					t.state = freeText
				}
			case "reasoning_content", "reasoning":
				if v.Type == gjson.String && v.Str != "" {
					t.state = inThinking
				}
			default:
				// tool_calls, function_call, refusal, audio…
				if v.Type != gjson.Null && !(v.Type == gjson.String && v.Str == "") {
					t.state = notFree
				}
			}
			return t.state != notFree
		})
		return t.state != notFree
	})
}

// addEvent reads one native Messages event.
func (t *transcript) addEvent(p []byte) {
	ev := gjson.ParseBytes(p)
	switch ev.Get("type").Str {
	case "content_block_start":
		t.last, t.open = int(ev.Get("index").Int()), true
		switch ev.Get("content_block.type").Str {
		case "text":
			t.state = freeText
			t.text = append(t.text, ev.Get("content_block.text").Str...)
		case "thinking", "redacted_thinking":
			t.state = inThinking
		default:
			t.state = notFree
		}
	case "content_block_delta":
		if d := ev.Get("delta"); d.Get("type").Str == "text_delta" {
			t.text = append(t.text, d.Get("text").Str...)
		}
	case "content_block_stop":
		t.open = false
		if t.state == inThinking {
			t.state = freeText
		}
	case "message_delta":
		if sr := ev.Get("delta.stop_reason"); sr.Exists() && sr.Type != gjson.Null {
			t.state = notFree
		}
	}
}

// free reports whether the answer so far may be continued.
func (t *transcript) free() bool { return t.state == freeText }

// cut splits the text into the prefix a continuation is asked for (no
// trailing whitespace: Anthropic refuses a prefill ending in it) and the
// whitespace it lost, which the continuation's start then stands for.
func (t *transcript) cut() (prefix, lost string) {
	s := string(t.text)
	prefix = strings.TrimRight(s, " \t\r\n")
	return prefix, s[len(prefix):]
}

// splice makes a continuation's payloads read, to the client, as the rest
// of the stream it was sent (docs/ARCHITECTURE.md, "Streaming"): what
// opens a message or a choice again is dropped, the whitespace the prefix
// lost is not repeated, and a Messages stream's block indexes follow the
// client's.
type splice struct {
	// lost is the whitespace the prefix lost that the continuation's
	// text has not yet repeated or departed from: what is left of it is
	// taken off the continuation's start ("" once done).
	lost string
	// A native Messages stream: the client's latest block index and
	// whether it is open (text), and the continuation's index offset
	// once its first block decided it (mapped).
	last   int
	open   bool
	off    int
	mapped bool
}

// newSplice is the splice of a continuation after what t says the client
// has.
func newSplice(t *transcript, lost string) splice {
	return splice{lost: lost, last: t.last, open: t.open}
}

// rewrite returns p as the client is to be sent it, and, when not nil, a
// payload to send before it; nil p: nothing.
func (s *splice) rewrite(p []byte) (pre, out []byte) {
	ch := gjson.GetBytes(p, "choices")
	if !ch.IsArray() {
		return s.event(p)
	}
	if len(ch.Array()) == 0 {
		return nil, p // the usage chunk
	}
	c := ch.Get("0")
	content := c.Get("delta.content")
	fr := c.Get("finish_reason")
	finish := fr.Exists() && fr.Type != gjson.Null
	hasUsage := gjson.GetBytes(p, "usage").IsObject()
	if content.Str == "" {
		// The continuation's opening role chunk, or an empty delta: the
		// client has its role already.
		onlyRole := true
		c.Get("delta").ForEach(func(k, v gjson.Result) bool {
			if k.Str != "role" && k.Str != "content" && v.Type != gjson.Null {
				onlyRole = false
			}
			return onlyRole
		})
		if onlyRole && !finish && !hasUsage {
			return nil, nil
		}
		return nil, p
	}
	if s.lost == "" {
		return nil, p
	}
	text := s.trim(content.Str)
	if text == content.Str {
		return nil, p
	}
	if text == "" && !finish && !hasUsage {
		return nil, nil
	}
	return nil, replaceRaw(p, content, text)
}

// event rewrites one native Messages event.
func (s *splice) event(p []byte) (pre, out []byte) {
	ev := gjson.ParseBytes(p)
	switch ev.Get("type").Str {
	case "message_start":
		return nil, nil
	case "content_block_start":
		idx := ev.Get("index")
		if !s.mapped {
			s.mapped = true
			k := int(idx.Int())
			if s.open && k == 0 && ev.Get("content_block.type").Str == "text" {
				// The continuation's first text block goes on in the
				// client's open one.
				s.off = s.last
				if t := ev.Get("content_block.text").Str; t != "" {
					return nil, s.text(contentBlockDelta(s.last, t))
				}
				return nil, nil
			}
			s.off = s.last + 1
			if s.open {
				s.open = false
				pre = contentBlockStop(s.last)
			}
		}
		return pre, setIndex(p, idx, s.off)
	case "content_block_delta":
		out = setIndex(p, ev.Get("index"), s.off)
		if ev.Get("delta.type").Str == "text_delta" {
			out = s.text(out)
		}
		return nil, out
	case "content_block_stop":
		return nil, setIndex(p, ev.Get("index"), s.off)
	}
	return nil, p
}

// text takes the lost whitespace off the continuation's first text
// delta, p.
func (s *splice) text(p []byte) []byte {
	if s.lost == "" {
		return p
	}
	d := gjson.GetBytes(p, "delta.text")
	t := s.trim(d.Str)
	if t == d.Str {
		return p
	}
	return replaceRaw(p, d, t)
}

// trim takes off the start of text, the continuation's next text, what
// it repeats of the whitespace the client was sent and the prefix left
// out (s.lost), over as many deltas as that takes: after "hello " sent as
// "hello", "world" stays "world" and " world" becomes "world".
func (s *splice) trim(text string) string {
	i := 0
	for i < len(s.lost) && i < len(text) && s.lost[i] == text[i] {
		i++
	}
	if i < len(text) {
		s.lost = "" // the continuation departed from it, or went past it
	} else {
		s.lost = s.lost[i:]
	}
	return text[i:]
}

// replaceRaw returns p with the string value v (read from p) replaced by
// s, encoded.
func replaceRaw(p []byte, v gjson.Result, s string) []byte {
	out := make([]byte, 0, len(p)+len(s))
	out = append(out, p[:v.Index]...)
	out, _ = openaiwire.Append(out, &s)
	return append(out, p[v.Index+len(v.Raw):]...)
}

// setIndex returns p with its "index" value v shifted by off.
func setIndex(p []byte, v gjson.Result, off int) []byte {
	if off == 0 || !v.Exists() || v.Index == 0 {
		return p
	}
	out := make([]byte, 0, len(p)+4)
	out = append(out, p[:v.Index]...)
	out = strconv.AppendInt(out, v.Int()+int64(off), 10)
	return append(out, p[v.Index+len(v.Raw):]...)
}

func contentBlockStop(i int) []byte {
	return append(strconv.AppendInt([]byte(`{"type":"content_block_stop","index":`), int64(i), 10), '}')
}

func contentBlockDelta(i int, text string) []byte {
	b := strconv.AppendInt([]byte(`{"type":"content_block_delta","index":`), int64(i), 10)
	b = append(b, `,"delta":{"type":"text_delta","text":`...)
	b, _ = openaiwire.Append(b, &text)
	return append(b, "}}"...)
}
