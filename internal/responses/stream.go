package responses

import (
	"encoding/json"
	"strings"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Events writes a provider's chat stream as the Responses API's typed
// event sequence (it is the proxy's relay.Framer). The sequence is the
// one OpenAI sends and the SDKs' stream helpers check:
//
//	response.created, response.in_progress            (status in_progress, output [])
//	for each output item, one after another, output_index 0, 1, 2…:
//	  message:       output_item.added, content_part.added,
//	                 output_text.delta… (refusal.delta…), output_text.done,
//	                 content_part.done, output_item.done
//	  function call: output_item.added (arguments ""),
//	                 function_call_arguments.delta…, function_call_arguments.done,
//	                 output_item.done (the whole arguments)
//	response.completed | response.incomplete            (every item, usage)
//
// A provider failure after the commit ends it with an error event (flat
// and nested fields, which every client reads) and response.failed.
// sequence_number counts every event from 0. No event but the error
// event has a top-level "error" key (openai-go ends a stream on one), and
// there is no [DONE]. The finished response is stored before the
// terminal event is written, so a client that continues it at once finds
// it.
type Events struct {
	t       *Turn
	enc     openaiwire.Encoder
	seq     int
	started bool
	model   string
	out     []OutputItem // the output so far; out[open] may be open
	open    int          // index in out of the open item; -1 none
	part    int          // the open message's open content part; -1 none
	buf     strings.Builder
	calls   map[int]int // chat tool call index → index in out
	finish  string
	usage   *openaiwire.Usage
}

// Events returns the Framer for a streamed answer to t.
func (t *Turn) Events() *Events { return &Events{t: t, open: -1, part: -1} }

// chatChunk is a chat.completion.chunk as far as the events need it.
type chatChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string                    `json:"content"`
			Refusal   *string                    `json:"refusal"`
			ToolCalls []openaiwire.ToolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiwire.Usage `json:"usage"`
}

// errBadChunk ends a stream whose provider sent a chunk that is not a
// chat chunk.
var errBadChunk = &outcome.Error{Kind: outcome.ServerError, Message: "the provider's stream sent a chunk that is not a chat completion chunk"}

// Chunk appends the events for one chat chunk.
func (e *Events) Chunk(dst, payload []byte) ([]byte, error) {
	var c chatChunk
	if err := json.Unmarshal(payload, &c); err != nil {
		return dst, errBadChunk
	}
	if !e.started {
		dst = e.start(dst, c.Model)
	}
	if c.Usage != nil {
		e.usage = c.Usage
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // one choice is asked for
		}
		if s := ch.Delta.Content; s != nil && *s != "" {
			dst = e.text(dst, PartOutputText, *s)
		}
		if s := ch.Delta.Refusal; s != nil && *s != "" {
			dst = e.text(dst, PartRefusal, *s)
		}
		for j := range ch.Delta.ToolCalls {
			dst = e.call(dst, &ch.Delta.ToolCalls[j])
		}
		if f := ch.FinishReason; f != nil && *f != "" {
			e.finish = *f
		}
	}
	return dst, nil
}

// End appends the rest of a stream the provider finished: the open item's
// done events, then response.completed (or response.incomplete when the
// answer was cut by max_output_tokens or a content filter), the response
// stored first.
func (e *Events) End(dst []byte) []byte {
	if !e.started {
		dst = e.start(dst, "")
	}
	status, details := finishStatus(e.finish)
	itemStatus := StatusCompleted
	if status == StatusIncomplete {
		itemStatus = StatusIncomplete
	}
	dst = e.closeItem(dst, itemStatus)
	r := e.t.response(status, e.model, e.out, usage(e.usage))
	r.IncompleteDetails = details
	if b, err := openaiwire.Append(nil, r); err == nil {
		items := make([]Item, len(e.out))
		for i := range e.out {
			items[i] = e.out[i].Item
		}
		e.t.keep(items, append(b, '\n'))
	}
	typ := "response.completed"
	if status == StatusIncomplete {
		typ = "response.incomplete"
	}
	return e.emit(dst, &responseEvent{Type: typ, SequenceNumber: e.next(), Response: r})
}

// Fail appends the end of a stream a provider failure cut after the
// commit: an error event, then response.failed with what had arrived.
// Nothing is stored.
func (e *Events) Fail(dst []byte, kind outcome.Kind) []byte {
	if !e.started {
		dst = e.start(dst, "")
	}
	if e.open >= 0 {
		// What arrived of the open item, left incomplete.
		it := &e.out[e.open]
		if it.Type == TypeFunctionCall {
			it.Arguments = e.buf.String()
		} else if e.part >= 0 {
			it.Parts[e.part].Text = e.buf.String()
		}
		it.Status = StatusIncomplete
	}
	msg := "the provider's stream failed after it started (" + kind.String() + "); the answer is incomplete"
	ev := errorEvent{Type: "error", SequenceNumber: e.next(), Code: "upstream_error", Message: msg,
		Error: openaiwire.Error{Type: "server_error", Code: "upstream_error", Message: msg}}
	dst = e.emit(dst, &ev)
	r := e.t.response(StatusFailed, e.model, e.out, usage(e.usage))
	r.Error = &ResponseError{Code: "server_error", Message: msg}
	return e.emit(dst, &responseEvent{Type: "response.failed", SequenceNumber: e.next(), Response: r})
}

// start appends response.created and response.in_progress.
func (e *Events) start(dst []byte, model string) []byte {
	e.started = true
	e.model = model
	if e.model == "" {
		e.model = e.t.d.Model
	}
	r := e.t.response(StatusInProgress, e.model, nil, nil)
	dst = e.emit(dst, &responseEvent{Type: "response.created", SequenceNumber: e.next(), Response: r})
	return e.emit(dst, &responseEvent{Type: "response.in_progress", SequenceNumber: e.next(), Response: r})
}

// text appends a text (or refusal) delta, opening a message and a part
// of that type first when the open ones are not.
func (e *Events) text(dst []byte, typ, s string) []byte {
	if e.open < 0 || e.out[e.open].Type != TypeMessage {
		dst = e.closeItem(dst, StatusCompleted)
		e.out = append(e.out, OutputItem{Item: Item{Type: TypeMessage, ID: newID("msg_"), Role: "assistant", Parts: []Part{}}, Status: StatusInProgress})
		e.open = len(e.out) - 1
		dst = e.emit(dst, &outputItemEvent{Type: "response.output_item.added", SequenceNumber: e.next(), OutputIndex: e.open, Item: e.out[e.open]})
	}
	it := &e.out[e.open]
	if e.part < 0 || it.Parts[e.part].Type != typ {
		dst = e.closePart(dst)
		it.Parts = append(it.Parts, Part{Type: typ})
		e.part = len(it.Parts) - 1
		dst = e.emit(dst, &contentPartEvent{Type: "response.content_part.added", SequenceNumber: e.next(), ItemID: it.ID,
			OutputIndex: e.open, ContentIndex: e.part, Part: OutputContent{Type: typ}})
	}
	e.buf.WriteString(s)
	if typ == PartRefusal {
		return e.emit(dst, &refusalDeltaEvent{Type: "response.refusal.delta", SequenceNumber: e.next(), ItemID: it.ID,
			OutputIndex: e.open, ContentIndex: e.part, Delta: s})
	}
	return e.emit(dst, &textDeltaEvent{Type: "response.output_text.delta", SequenceNumber: e.next(), ItemID: it.ID,
		OutputIndex: e.open, ContentIndex: e.part, Delta: s, Logprobs: none})
}

// call appends a piece of a tool call: its first piece opens a function
// call item, later ones add to its arguments.
func (e *Events) call(dst []byte, tc *openaiwire.ToolCallDelta) []byte {
	k, seen := e.calls[tc.Index]
	switch {
	case !seen:
		dst = e.closeItem(dst, StatusCompleted)
		e.out = append(e.out, OutputItem{Item: functionCall(tc.ID, tc.Function.Name, ""), Status: StatusInProgress})
		e.open = len(e.out) - 1
		if e.calls == nil {
			e.calls = map[int]int{}
		}
		e.calls[tc.Index] = e.open
		dst = e.emit(dst, &outputItemEvent{Type: "response.output_item.added", SequenceNumber: e.next(), OutputIndex: e.open, Item: e.out[e.open]})
	case k != e.open:
		// A piece of a call already closed: providers stream calls one
		// after another, so this is rare; its events were written, the
		// stored and final output still get the whole arguments.
		e.out[k].Arguments += tc.Function.Arguments
		return dst
	}
	it := &e.out[e.open]
	if it.Name == "" {
		it.Name = tc.Function.Name
	}
	if tc.Function.Arguments == "" {
		return dst
	}
	e.buf.WriteString(tc.Function.Arguments)
	return e.emit(dst, &argumentsDeltaEvent{Type: "response.function_call_arguments.delta", SequenceNumber: e.next(),
		ItemID: it.ID, OutputIndex: e.open, Delta: tc.Function.Arguments})
}

// closePart appends the open content part's done events.
func (e *Events) closePart(dst []byte) []byte {
	if e.part < 0 {
		return dst
	}
	it := &e.out[e.open]
	p := &it.Parts[e.part]
	p.Text = e.buf.String()
	e.buf.Reset()
	if p.Type == PartRefusal {
		dst = e.emit(dst, &refusalDoneEvent{Type: "response.refusal.done", SequenceNumber: e.next(), ItemID: it.ID,
			OutputIndex: e.open, ContentIndex: e.part, Refusal: p.Text})
	} else {
		dst = e.emit(dst, &textDoneEvent{Type: "response.output_text.done", SequenceNumber: e.next(), ItemID: it.ID,
			OutputIndex: e.open, ContentIndex: e.part, Text: p.Text, Logprobs: none})
	}
	dst = e.emit(dst, &contentPartEvent{Type: "response.content_part.done", SequenceNumber: e.next(), ItemID: it.ID,
		OutputIndex: e.open, ContentIndex: e.part, Part: OutputContent(*p)})
	e.part = -1
	return dst
}

// closeItem appends the open item's done events, leaving it with status.
func (e *Events) closeItem(dst []byte, status string) []byte {
	if e.open < 0 {
		return dst
	}
	it := &e.out[e.open]
	if it.Type == TypeFunctionCall {
		it.Arguments = e.buf.String()
		e.buf.Reset()
		dst = e.emit(dst, &argumentsDoneEvent{Type: "response.function_call_arguments.done", SequenceNumber: e.next(),
			ItemID: it.ID, OutputIndex: e.open, Name: it.Name, Arguments: it.Arguments})
	} else {
		dst = e.closePart(dst)
	}
	it.Status = status
	dst = e.emit(dst, &outputItemEvent{Type: "response.output_item.done", SequenceNumber: e.next(), OutputIndex: e.open, Item: *it})
	e.open = -1
	return dst
}

// next is the next sequence number.
func (e *Events) next() int {
	e.seq++
	return e.seq - 1
}

// eventType is what every event has: its type.
type eventType interface{ eventType() string }

// emit appends ev as one SSE event: its type as the event name, its JSON
// on one data line. An event that does not encode (it cannot: every raw
// value in it came from valid JSON) is left out.
func (e *Events) emit(dst []byte, ev eventType) []byte {
	mark := len(dst)
	dst = append(dst, "event: "...)
	dst = append(dst, ev.eventType()...)
	dst = append(dst, "\ndata: "...)
	out, err := e.enc.Append(dst, ev)
	if err != nil {
		return dst[:mark]
	}
	return append(out, '\n', '\n')
}

// The events, each with OpenAI's fields, all of them required.
type (
	responseEvent struct {
		Type           string    `json:"type"`
		SequenceNumber int       `json:"sequence_number"`
		Response       *Response `json:"response"`
	}
	outputItemEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		OutputIndex    int        `json:"output_index"`
		Item           OutputItem `json:"item"`
	}
	contentPartEvent struct {
		Type           string        `json:"type"`
		SequenceNumber int           `json:"sequence_number"`
		ItemID         string        `json:"item_id"`
		OutputIndex    int           `json:"output_index"`
		ContentIndex   int           `json:"content_index"`
		Part           OutputContent `json:"part"`
	}
	textDeltaEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		ItemID         string     `json:"item_id"`
		OutputIndex    int        `json:"output_index"`
		ContentIndex   int        `json:"content_index"`
		Delta          string     `json:"delta"`
		Logprobs       []struct{} `json:"logprobs"`
	}
	textDoneEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		ItemID         string     `json:"item_id"`
		OutputIndex    int        `json:"output_index"`
		ContentIndex   int        `json:"content_index"`
		Text           string     `json:"text"`
		Logprobs       []struct{} `json:"logprobs"`
	}
	refusalDeltaEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Delta          string `json:"delta"`
	}
	refusalDoneEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Refusal        string `json:"refusal"`
	}
	argumentsDeltaEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Delta          string `json:"delta"`
	}
	argumentsDoneEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Name           string `json:"name"`
		Arguments      string `json:"arguments"`
	}
	// errorEvent carries the error flat (the spec's shape) and nested
	// (OpenAI's real one, which makes openai-node, openai-python and
	// LangChain raise).
	errorEvent struct {
		Type           string           `json:"type"`
		SequenceNumber int              `json:"sequence_number"`
		Code           string           `json:"code"`
		Message        string           `json:"message"`
		Param          *string          `json:"param"`
		Error          openaiwire.Error `json:"error"`
	}
)

func (e *responseEvent) eventType() string       { return e.Type }
func (e *outputItemEvent) eventType() string     { return e.Type }
func (e *contentPartEvent) eventType() string    { return e.Type }
func (e *textDeltaEvent) eventType() string      { return e.Type }
func (e *textDoneEvent) eventType() string       { return e.Type }
func (e *refusalDeltaEvent) eventType() string   { return e.Type }
func (e *refusalDoneEvent) eventType() string    { return e.Type }
func (e *argumentsDeltaEvent) eventType() string { return e.Type }
func (e *argumentsDoneEvent) eventType() string  { return e.Type }
func (e *errorEvent) eventType() string          { return e.Type }
