package native

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// Events relays a provider's Responses event stream to the client (it is
// the proxy's relay.Framer): each event as the provider sent it, under an
// event line naming its type, the lifecycle events' previous_response_id
// set back to what the client sent when the router expanded it. A
// finished response is stored before its terminal event
// (response.completed or response.incomplete) is written, so a client
// that continues it at once finds it. A provider failure after the commit
// ends the stream as a translated one does: an error event (flat and
// nested fields) and response.failed, numbered on from the provider's
// events.
type Events struct {
	wire.Emitter // Seq numbers on from the provider's events
	c            *Call
	last         json.RawMessage // the latest response snapshot the provider sent
}

// Events returns the Framer for a streamed answer.
func (c *Call) Events() *Events { return &Events{c: c} }

// Chunk appends one provider event.
func (e *Events) Chunk(dst, payload []byte) ([]byte, error) {
	res := gjson.GetManyBytes(payload, "type", "sequence_number", "response")
	typ := res[0].Str
	if typ != "" && !sse.EventName(typ, true) {
		// The stream refuses such a type before it gets here; the event
		// line is written only for a name that cannot break it (issue 31,
		// finding 4).
		return dst, errEventName
	}
	if n := res[1]; n.Type == gjson.Number {
		e.Seq = int(n.Int()) + 1
	}
	if res[2].IsObject() {
		payload = e.c.patch(payload, "response")
		snap := gjson.GetBytes(payload, "response")
		e.last = json.RawMessage(snap.Raw)
		if typ == "response.completed" || typ == "response.incomplete" {
			var r nativeResponse
			if json.Unmarshal(e.last, &r) == nil && r.ID != "" {
				e.c.keep(&r, append(bytes.Clone(e.last), '\n'))
			}
		}
	}
	if typ != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, typ...)
		dst = append(dst, '\n')
	}
	return sse.AppendData(dst, payload), nil
}

// errEventName ends a stream whose event's type is not a Responses event
// name ([a-z_.]+).
var errEventName = &outcome.Error{Kind: outcome.ServerError, Message: "the provider's stream sent an event whose type is not a Responses event name"}

// End appends nothing: the provider's terminal event was the end.
func (e *Events) End(dst []byte) []byte { return dst }

// Fail appends the end of a stream a provider failure cut after the
// commit: an error event, then response.failed with the latest snapshot
// the provider sent (the turn's own when it sent none), marked failed.
func (e *Events) Fail(dst []byte, kind outcome.Kind) []byte {
	msg := "the provider's stream failed after it started (" + kind.String() + "); the answer is incomplete"
	ev := wire.ErrorEvent{Type: "error", SequenceNumber: e.Next(), Code: "upstream_error", Message: msg,
		Error: openaiwire.Error{Type: "server_error", Code: "upstream_error", Message: msg}}
	dst = e.Emit(dst, &ev)
	snap := e.last
	if snap == nil {
		b, _ := openaiwire.Append(nil, e.c.t.Response(wire.StatusFailed, "", nil, nil))
		snap = b
	}
	failed, err := sjson.SetBytes(snap, "status", wire.StatusFailed)
	if err == nil {
		failed, err = sjson.SetBytes(failed, "error", &wire.ResponseError{Code: "server_error", Message: msg})
	}
	if err != nil {
		failed = snap
	}
	return e.Emit(dst, &rawResponseEvent{Type: "response.failed", SequenceNumber: e.Next(), Response: failed})
}

// rawResponseEvent is a lifecycle event whose response is the provider's
// JSON.
type rawResponseEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       json.RawMessage `json:"response"`
}

func (e *rawResponseEvent) EventType() string { return e.Type }
