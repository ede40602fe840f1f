package api

import (
	"errors"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/relay"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// Content types of the two stream forms.
const (
	typeSSE   = "text/event-stream"
	typeArray = "application/json"
)

// form writes a stream's GenerateContentResponse elements as the client
// asked: server-sent events (alt=sse), each element one data event, or
// one JSON array (streamGenerateContent without alt=sse), its elements
// separated as Google separates them. A failure after the commit point
// is one last {"error":{…}} element (and the array's end).
type form struct {
	array   bool
	started bool // the array's "[" is written
}

func (f *form) elem(dst, payload []byte) []byte {
	if !f.array {
		return sse.AppendData(dst, payload)
	}
	if f.started {
		dst = append(dst, ",\r\n"...)
	} else {
		dst = append(dst, '[')
		f.started = true
	}
	return append(dst, payload...)
}

func (f *form) end(dst []byte) []byte {
	if !f.array {
		return dst
	}
	if !f.started {
		dst = append(dst, '[')
		f.started = true
	}
	return append(dst, "]\n"...)
}

func (f *form) fail(dst []byte, kind outcome.Kind) []byte {
	dst = f.elem(dst, failError(nil, kind))
	return f.end(dst)
}

func (f *form) ContentType() string {
	if f.array {
		return typeArray
	}
	return typeSSE
}

// native frames a native stream: each event's payload as the provider
// sent it.
type native struct{ form }

var _ relay.ContentTyper = (*native)(nil)

func (n *native) Chunk(dst, payload []byte) ([]byte, error) { return n.elem(dst, payload), nil }
func (n *native) End(dst []byte) []byte                     { return n.end(dst) }
func (n *native) Fail(dst []byte, kind outcome.Kind) []byte { return n.fail(dst, kind) }

// Bounds on what a translated stream keeps per answer: a provider's
// chunks cannot make it grow past them.
const (
	maxCandidates = 8
	maxCalls      = 128
	maxArgs       = 8 << 20 // bytes of one call's arguments
)

var errStream = errors.New("the provider's stream is not a chat completion stream within the router's bounds")

// events translates a chat completion stream into GenerateContentResponse
// elements: text as it comes, each choice's function calls whole (chat
// streams their arguments in pieces; Google's calls come whole) with its
// finish reason and the usage in the last element.
type events struct {
	form
	t        *translation
	id       string
	cands    []candidate
	usage    []byte // usageMetadata's member, as written
	finished bool   // some choice has its finish reason
	flushed  bool   // the last element is written
}

var _ relay.ContentTyper = (*events)(nil)

// candidate is one choice's state.
type candidate struct {
	calls  []streamCall
	finish string
	seen   bool
}

type streamCall struct {
	id, name string
	args     []byte
}

func (e *events) Chunk(dst, payload []byte) ([]byte, error) {
	doc := gjson.ParseBytes(payload)
	if e.id == "" {
		e.id = doc.Get("id").Str
	}
	if u := doc.Get("usage"); u.IsObject() {
		e.usage = usageMetadata(e.usage[:0], u)
	}
	var text []byte // the text element's candidates
	var err error
	doc.Get("choices").ForEach(func(_, c gjson.Result) bool {
		idx := int(c.Get("index").Int())
		if idx < 0 || idx >= maxCandidates {
			err = errStream
			return false
		}
		for len(e.cands) <= idx {
			e.cands = append(e.cands, candidate{})
		}
		cd := &e.cands[idx]
		cd.seen = true
		d := c.Get("delta")
		if s := d.Get("content").Str; s != "" {
			if len(text) > 0 {
				text = append(text, ',')
			}
			text = append(text, `{"content":{"parts":[{"text":`...)
			text = str(text, s)
			text = append(text, `}],"role":"model"},"index":`...)
			text = strconv.AppendInt(text, int64(idx), 10)
			text = append(text, '}')
		}
		d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
			i := int(tc.Get("index").Int())
			if i < 0 || i >= maxCalls {
				err = errStream
				return false
			}
			for len(cd.calls) <= i {
				cd.calls = append(cd.calls, streamCall{})
			}
			sc := &cd.calls[i]
			if id := tc.Get("id").Str; id != "" {
				sc.id = id
			}
			sc.name += tc.Get("function.name").Str
			sc.args = append(sc.args, tc.Get("function.arguments").Str...)
			if len(sc.args) > maxArgs || len(sc.name) > maxArgs {
				err = errStream
			}
			return err == nil
		})
		if fr := c.Get("finish_reason").Str; fr != "" {
			cd.finish = finish(fr)
			e.finished = true
		}
		return err == nil
	})
	if err != nil {
		return dst, err
	}
	if len(text) > 0 {
		el := append(make([]byte, 0, len(text)+96), `{"candidates":[`...)
		el = append(el, text...)
		el = append(el, ']')
		el = e.t.head(el, e.id)
		dst = e.elem(dst, append(el, '}'))
	}
	if e.finished && len(e.usage) > 0 {
		dst = e.last(dst)
	}
	return dst, nil
}

// last appends the last element: each choice's function calls and finish
// reason, and the usage.
func (e *events) last(dst []byte) []byte {
	if e.flushed {
		return dst
	}
	e.flushed = true
	el := append(make([]byte, 0, 256), `{"candidates":[`...)
	n := 0
	for idx, cd := range e.cands {
		if !cd.seen {
			continue
		}
		if n > 0 {
			el = append(el, ',')
		}
		n++
		el = append(el, `{"content":{"parts":[`...)
		for i, sc := range cd.calls {
			if i > 0 {
				el = append(el, ',')
			}
			el = functionCall(el, sc.id, sc.name, string(sc.args))
		}
		if len(cd.calls) == 0 {
			el = append(el, `{"text":""}`...)
		}
		el = append(el, `],"role":"model"},"finishReason":"`...)
		fr := cd.finish
		if fr == "" {
			fr = "STOP"
		}
		el = append(el, fr...)
		el = append(el, `","index":`...)
		el = strconv.AppendInt(el, int64(idx), 10)
		el = append(el, '}')
	}
	el = append(el, ']')
	el = append(el, e.usage...)
	el = e.t.head(el, e.id)
	return e.elem(dst, append(el, '}'))
}

func (e *events) End(dst []byte) []byte {
	dst = e.last(dst)
	return e.end(dst)
}

func (e *events) Fail(dst []byte, kind outcome.Kind) []byte { return e.fail(dst, kind) }
