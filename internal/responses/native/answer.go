package native

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// nativeResponse is a provider's Response as far as the router reads it.
type nativeResponse struct {
	ID     string            `json:"id"`
	Status string            `json:"status"`
	Output []json.RawMessage `json:"output"`
}

// errNoID is Answer's error for a Response without an id.
var errNoID = errors.New("the provider's response has no id")

// Answer reads the Response provider (by name) answered and returns it as
// the client's answer: the provider's bytes, previous_response_id set back
// to what the client sent when the router expanded it. Unless the client
// sent store: false, a finished response (completed or incomplete) is
// stored under the provider's id, and one still running (background:
// queued or in_progress) is recorded as the provider's, for reads to go
// there. The error says why the answer could not be read.
func (c *Call) Answer(body []byte, provider string) ([]byte, error) {
	var r nativeResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("reading the provider's response: %w", err)
	}
	if r.ID == "" {
		return nil, errNoID
	}
	body = c.patch(body, "")
	if running(r.Status) {
		c.t.KeepRunning(r.ID, provider, body)
	} else {
		c.keep(&r, body)
	}
	return body, nil
}

// running reports whether a response's status says its provider is still
// working on it.
func running(status string) bool { return status == "queued" || status == wire.StatusInProgress }

// Finished is the record that replaces rec, a response its provider ran in
// the background (rec.Owner), once the provider's answer body says it
// completed: the provider's Response and its output items, rec's turn's
// input. nil while it runs, and when it failed or was cancelled (there
// is nothing to continue).
func Finished(rec *store.Record, body []byte) *store.Record {
	var r nativeResponse
	if rec.Owner == "" || json.Unmarshal(body, &r) != nil || r.ID != rec.ID ||
		r.Status != wire.StatusCompleted && r.Status != wire.StatusIncomplete {
		return nil
	}
	t := &store.Turn{}
	if rec.Turn != nil {
		*t = *rec.Turn
	}
	t.Output = outputItems(&r)
	return &store.Record{ID: r.ID, Response: body, Turn: t}
}

// keep stores a finished response with its output items.
func (c *Call) keep(r *nativeResponse, response []byte) {
	if r.Status != wire.StatusCompleted && r.Status != wire.StatusIncomplete {
		return // failed, or still running (background): nothing to continue
	}
	c.t.KeepAs(r.ID, outputItems(r), response)
}

// outputItems are r's output items as the router keeps them.
func outputItems(r *nativeResponse) []wire.Item {
	out := make([]wire.Item, 0, len(r.Output))
	for _, raw := range r.Output {
		out = append(out, outputItem(raw))
	}
	return out
}

// outputJSON is an output item as far as the router types it.
type outputJSON struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Role      string `json:"role"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// outputItem is one of a provider's output items as the router keeps it:
// an assistant message of text and refusals, or a function call, typed
// (so a later turn translated onto chat has them); anything else
// (reasoning, a built-in tool's call…) as the provider sent it.
func outputItem(raw json.RawMessage) wire.Item {
	var o outputJSON
	if err := json.Unmarshal(raw, &o); err != nil {
		// A shape the router does not type (a built-in tool's arguments
		// as an object…): kept as sent.
		r := gjson.GetManyBytes(raw, "type", "id")
		return wire.Item{Type: r[0].String(), ID: r[1].String(), Raw: raw}
	}
	switch o.Type {
	case wire.TypeFunctionCall:
		return wire.Item{Type: o.Type, ID: o.ID, CallID: o.CallID, Name: o.Name, Arguments: o.Arguments}
	case wire.TypeMessage:
		it := wire.Item{Type: o.Type, ID: o.ID, Role: "assistant", Parts: make([]wire.Part, 0, len(o.Content))}
		for _, p := range o.Content {
			switch p.Type {
			case wire.PartOutputText:
				it.Parts = append(it.Parts, wire.Part{Type: p.Type, Text: p.Text})
			case wire.PartRefusal:
				it.Parts = append(it.Parts, wire.Part{Type: p.Type, Text: p.Refusal})
			default:
				return wire.Item{Type: o.Type, ID: o.ID, Raw: raw}
			}
		}
		return it
	}
	return wire.Item{Type: o.Type, ID: o.ID, Raw: raw}
}
