package native

import (
	"encoding/json"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/turn"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// Call is a turn sent to a provider's own Responses API: the body to send
// and what reads the provider's answer or events back.
type Call struct {
	t *turn.Turn
	// Body is the request body, its "model" the client's model name,
	// between ModelStart and ModelEnd (the JSON string, quotes included)
	// for the adapters to swap.
	Body                 []byte
	ModelStart, ModelEnd int
	// echo, when not nil, is the previous_response_id the router expanded
	// into input (and took out of the body): the provider's answer says
	// null, the client is told what it sent.
	echo *string
}

// Prepare builds the body for t from the client's body. When the router
// holds t's previous_response_id, or item_references of its input, input
// becomes the conversation they stand for (the chain's items, oldest
// first, then this turn's, the client's as sent) and previous_response_id
// leaves the body; otherwise the body is the client's.
func Prepare(t *turn.Turn, body []byte) (*Call, *responses.Error) {
	c := &Call{t: t, Body: body}
	d := t.Decoded()
	in := t.Input()
	resolved := false
	for i := range in {
		resolved = resolved || d.Items[i].Type == wire.TypeItemReference && in[i].Raw == nil
	}
	if t.Prev() != nil || resolved {
		var items []json.RawMessage
		if p := t.Prev(); p != nil {
			for _, it := range p.Conversation() {
				if it.Type == wire.TypeReasoning && !gjson.GetBytes(it.Raw, "encrypted_content").Exists() {
					continue // only the provider that made it can resolve it: it may not be this one
				}
				items = append(items, wire.InputItem(it))
			}
			c.echo = d.PreviousResponseID
		}
		for i := range in {
			switch {
			case d.Items[i].Type == wire.TypeItemReference && in[i].Raw == nil:
				items = append(items, wire.InputItem(in[i])) // resolved: the item it names
			case d.Sent != nil:
				items = append(items, d.Sent[i])
			default:
				items = append(items, wire.InputItem(in[i])) // input was a string
			}
		}
		arr, err := openaiwire.Append(nil, &items)
		if err == nil {
			c.Body, err = sjson.SetRawBytes(body, "input", arr)
		}
		if err == nil && c.echo != nil {
			c.Body, err = sjson.DeleteBytes(c.Body, "previous_response_id")
		}
		if err != nil {
			// Every piece came from valid JSON.
			return nil, responses.BadRequest("", "the request could not be rewritten: %v", err)
		}
	}
	m := gjson.GetBytes(c.Body, "model")
	c.ModelStart, c.ModelEnd = m.Index, m.Index+len(m.Raw)
	return c, nil
}

// Turn is the turn c sends.
func (c *Call) Turn() *turn.Turn { return c.t }

// patch sets the response's previous_response_id (at path: "" the
// document, "response" an event's) back to what the client sent, when the
// router expanded it.
func (c *Call) patch(doc []byte, path string) []byte {
	if c.echo == nil {
		return doc
	}
	key := "previous_response_id"
	if path != "" {
		key = path + "." + key
	}
	if out, err := sjson.SetBytes(doc, key, *c.echo); err == nil {
		return out
	}
	return doc
}
