package chat

import (
	"encoding/json"
	"strings"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
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
//	  function call: output_item.added (arguments ""; a namespace's
//	                 function with its namespace),
//	                 function_call_arguments.delta…, function_call_arguments.done,
//	                 output_item.done (the whole arguments)
//	  custom tool call: output_item.added (input ""),
//	                 custom_tool_call_input.delta (the whole input, once
//	                 the arguments it is read from are complete),
//	                 custom_tool_call_input.done, output_item.done
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
	wire.Emitter
	tr      *Translation
	started bool
	model   string
	out     []wire.OutputItem // the output so far; out[open] may be open
	open    int               // index in out of the open item; -1 none
	part    int               // the open message's open content part; -1 none
	buf     strings.Builder
	calls   map[int]int // chat tool call index → index in out
	finish  string
	usage   *openaiwire.Usage
}

// Events returns the Framer for a streamed answer.
func (tr *Translation) Events() *Events { return &Events{tr: tr, open: -1, part: -1} }

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
			dst = e.text(dst, wire.PartOutputText, *s)
		}
		if s := ch.Delta.Refusal; s != nil && *s != "" {
			dst = e.text(dst, wire.PartRefusal, *s)
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
	itemStatus := wire.StatusCompleted
	if status == wire.StatusIncomplete {
		itemStatus = wire.StatusIncomplete
	}
	dst = e.closeItem(dst, itemStatus)
	r := e.tr.t.Response(status, e.model, e.out, usage(e.usage))
	r.IncompleteDetails = details
	items := make([]wire.Item, len(e.out))
	for i := range e.out {
		items[i] = e.out[i].Item
	}
	e.tr.t.Keep(items, r) // before the terminal event: a client may continue it at once
	typ := "response.completed"
	if status == wire.StatusIncomplete {
		typ = "response.incomplete"
	}
	return e.Emit(dst, &wire.ResponseEvent{Type: typ, SequenceNumber: e.Next(), Response: r})
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
		switch {
		case it.Type == wire.TypeFunctionCall:
			it.Arguments = e.buf.String()
		case it.Type == wire.TypeCustomToolCall:
			it.Arguments = inputOf(e.buf.String())
		case e.part >= 0:
			it.Parts[e.part].Text = e.buf.String()
		}
		it.Status = wire.StatusIncomplete
	}
	msg := "the provider's stream failed after it started (" + kind.String() + "); the answer is incomplete"
	ev := wire.ErrorEvent{Type: "error", SequenceNumber: e.Next(), Code: "upstream_error", Message: msg,
		Error: openaiwire.Error{Type: "server_error", Code: "upstream_error", Message: msg}}
	dst = e.Emit(dst, &ev)
	r := e.tr.t.Response(wire.StatusFailed, e.model, e.out, usage(e.usage))
	r.Error = &wire.ResponseError{Code: "server_error", Message: msg}
	return e.Emit(dst, &wire.ResponseEvent{Type: "response.failed", SequenceNumber: e.Next(), Response: r})
}

// start appends response.created and response.in_progress.
func (e *Events) start(dst []byte, model string) []byte {
	e.started = true
	e.model = model
	if e.model == "" {
		e.model = e.tr.t.Decoded().Model
	}
	r := e.tr.t.Response(wire.StatusInProgress, e.model, nil, nil)
	dst = e.Emit(dst, &wire.ResponseEvent{Type: "response.created", SequenceNumber: e.Next(), Response: r})
	return e.Emit(dst, &wire.ResponseEvent{Type: "response.in_progress", SequenceNumber: e.Next(), Response: r})
}

// text appends a text (or refusal) delta, opening a message and a part
// of that type first when the open ones are not.
func (e *Events) text(dst []byte, typ, s string) []byte {
	if e.open < 0 || e.out[e.open].Type != wire.TypeMessage {
		dst = e.closeItem(dst, wire.StatusCompleted)
		e.out = append(e.out, wire.OutputItem{Item: wire.Item{Type: wire.TypeMessage, ID: wire.NewID("msg_"), Role: "assistant", Parts: []wire.Part{}}, Status: wire.StatusInProgress})
		e.open = len(e.out) - 1
		dst = e.Emit(dst, &wire.OutputItemEvent{Type: "response.output_item.added", SequenceNumber: e.Next(), OutputIndex: e.open, Item: e.out[e.open]})
	}
	it := &e.out[e.open]
	if e.part < 0 || it.Parts[e.part].Type != typ {
		dst = e.closePart(dst)
		it.Parts = append(it.Parts, wire.Part{Type: typ})
		e.part = len(it.Parts) - 1
		dst = e.Emit(dst, &wire.ContentPartEvent{Type: "response.content_part.added", SequenceNumber: e.Next(), ItemID: it.ID,
			OutputIndex: e.open, ContentIndex: e.part, Part: wire.OutputContent{Type: typ}})
	}
	e.buf.WriteString(s)
	if typ == wire.PartRefusal {
		return e.Emit(dst, &wire.RefusalDeltaEvent{Type: "response.refusal.delta", SequenceNumber: e.Next(), ItemID: it.ID,
			OutputIndex: e.open, ContentIndex: e.part, Delta: s})
	}
	return e.Emit(dst, &wire.TextDeltaEvent{Type: "response.output_text.delta", SequenceNumber: e.Next(), ItemID: it.ID,
		OutputIndex: e.open, ContentIndex: e.part, Delta: s, Logprobs: wire.Empty})
}

// call appends a piece of a tool call: its first piece opens a function
// call item, later ones add to its arguments.
func (e *Events) call(dst []byte, tc *openaiwire.ToolCallDelta) []byte {
	k, seen := e.calls[tc.Index]
	switch {
	case !seen:
		dst = e.closeItem(dst, wire.StatusCompleted)
		e.out = append(e.out, wire.OutputItem{Item: e.tr.names.call(tc.ID, tc.Function.Name, ""), Status: wire.StatusInProgress})
		e.open = len(e.out) - 1
		if e.calls == nil {
			e.calls = map[int]int{}
		}
		e.calls[tc.Index] = e.open
		dst = e.Emit(dst, &wire.OutputItemEvent{Type: "response.output_item.added", SequenceNumber: e.Next(), OutputIndex: e.open, Item: e.out[e.open]})
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
	if it.Type == wire.TypeCustomToolCall {
		return dst // its input is the arguments' one string: written whole when it closes
	}
	return e.Emit(dst, &wire.ArgumentsDeltaEvent{Type: "response.function_call_arguments.delta", SequenceNumber: e.Next(),
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
	if p.Type == wire.PartRefusal {
		dst = e.Emit(dst, &wire.RefusalDoneEvent{Type: "response.refusal.done", SequenceNumber: e.Next(), ItemID: it.ID,
			OutputIndex: e.open, ContentIndex: e.part, Refusal: p.Text})
	} else {
		dst = e.Emit(dst, &wire.TextDoneEvent{Type: "response.output_text.done", SequenceNumber: e.Next(), ItemID: it.ID,
			OutputIndex: e.open, ContentIndex: e.part, Text: p.Text, Logprobs: wire.Empty})
	}
	dst = e.Emit(dst, &wire.ContentPartEvent{Type: "response.content_part.done", SequenceNumber: e.Next(), ItemID: it.ID,
		OutputIndex: e.open, ContentIndex: e.part, Part: wire.OutputContent(*p)})
	e.part = -1
	return dst
}

// closeItem appends the open item's done events, leaving it with status.
func (e *Events) closeItem(dst []byte, status string) []byte {
	if e.open < 0 {
		return dst
	}
	it := &e.out[e.open]
	switch it.Type {
	case wire.TypeFunctionCall:
		it.Arguments = e.buf.String()
		e.buf.Reset()
		dst = e.Emit(dst, &wire.ArgumentsDoneEvent{Type: "response.function_call_arguments.done", SequenceNumber: e.Next(),
			ItemID: it.ID, OutputIndex: e.open, Name: it.Name, Arguments: it.Arguments})
	case wire.TypeCustomToolCall:
		it.Arguments = inputOf(e.buf.String())
		e.buf.Reset()
		if it.Arguments != "" {
			dst = e.Emit(dst, &wire.CustomInputDeltaEvent{Type: "response.custom_tool_call_input.delta", SequenceNumber: e.Next(),
				ItemID: it.ID, OutputIndex: e.open, Delta: it.Arguments})
		}
		dst = e.Emit(dst, &wire.CustomInputDoneEvent{Type: "response.custom_tool_call_input.done", SequenceNumber: e.Next(),
			ItemID: it.ID, OutputIndex: e.open, Input: it.Arguments})
	default:
		dst = e.closePart(dst)
	}
	it.Status = status
	dst = e.Emit(dst, &wire.OutputItemEvent{Type: "response.output_item.done", SequenceNumber: e.Next(), OutputIndex: e.open, Item: *it})
	e.open = -1
	return dst
}
