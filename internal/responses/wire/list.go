package wire

import (
	"encoding/json"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// ItemList is the answer to GET /v1/responses/{id}/input_items: one page
// of the items a response was given, each with its id. FirstID and LastID
// are null when the page is empty.
type ItemList struct {
	Object  string       `json:"object"` // "list"
	Data    []ListedItem `json:"data"`
	FirstID *string      `json:"first_id"`
	LastID  *string      `json:"last_id"`
	HasMore bool         `json:"has_more"`
}

// ListedItem writes an Item as OpenAI lists it (the Item schema): a
// message with its role and content parts, an assistant message as an
// output message, a function call, a function call's output; every one
// with its id and status "completed".
type ListedItem Item

// MarshalJSON writes the item in its type's shape (Raw, when set).
func (l ListedItem) MarshalJSON() ([]byte, error) {
	switch {
	case l.Raw != nil:
		return l.Raw, nil
	case l.Type == TypeFunctionCall:
		return openaiwire.Append(nil, &functionCallJSON{ID: l.ID, Type: l.Type, Status: StatusCompleted, CallID: l.CallID, Name: l.Name,
			Namespace: l.Namespace, Arguments: l.Arguments})
	case l.Type == TypeCustomToolCall:
		return openaiwire.Append(nil, &customCallJSON{ID: l.ID, Type: l.Type, Status: StatusCompleted, CallID: l.CallID, Name: l.Name, Input: l.Arguments})
	case l.Type == TypeFunctionCallOutput || l.Type == TypeCustomToolCallOutput:
		return openaiwire.Append(nil, &functionOutputJSON{ID: l.ID, Type: l.Type, CallID: l.CallID, Output: inputContent(Item(l)), Status: StatusCompleted})
	case l.Role == "assistant":
		it := Item(l)
		if it.Parts == nil {
			it.Parts = []Part{{Type: PartOutputText, Text: it.Text}}
		}
		return OutputItem{Item: it, Status: StatusCompleted}.MarshalJSON()
	}
	m := inputMessageJSON{ID: l.ID, Type: TypeMessage, Role: l.Role, Status: StatusCompleted, Content: inputParts(l.Parts)}
	if l.Parts == nil {
		m.Content = []inputPartJSON{{Type: PartInputText, Text: &l.Text}}
	}
	return openaiwire.Append(nil, &m)
}

// inputContent is a message's or a function output's content as the
// Responses API's input has it: a string, or input parts.
func inputContent(it Item) json.RawMessage {
	if it.Parts == nil {
		b, _ := openaiwire.Append(nil, &it.Text) // a string always encodes
		return b
	}
	parts := inputParts(it.Parts)
	b, _ := openaiwire.Append(nil, &parts) // strings only: it always encodes
	return b
}

// inputParts is parts as the Responses API's input has them.
func inputParts(in []Part) []inputPartJSON {
	parts := make([]inputPartJSON, len(in))
	for i := range in {
		p := &in[i]
		switch p.Type {
		case PartInputImage:
			parts[i] = inputPartJSON{Type: p.Type, ImageURL: p.ImageURL, Detail: p.Detail}
		case PartInputFile:
			parts[i] = inputPartJSON{Type: p.Type, FileData: p.FileData, Filename: p.Filename}
		default:
			parts[i] = inputPartJSON{Type: PartInputText, Text: &p.Text}
		}
	}
	return parts
}

type inputMessageJSON struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Status  string          `json:"status,omitempty"`
	Content []inputPartJSON `json:"content"`
}

// inputPartJSON is an input content part: input_text {text}, input_image
// {image_url, detail} or input_file {file_data, filename}.
type inputPartJSON struct {
	Type     string  `json:"type"`
	Text     *string `json:"text,omitempty"`
	ImageURL string  `json:"image_url,omitempty"`
	Detail   string  `json:"detail,omitempty"`
	FileData string  `json:"file_data,omitempty"`
	Filename string  `json:"filename,omitempty"`
}

type functionOutputJSON struct {
	ID     string          `json:"id,omitempty"`
	Type   string          `json:"type"`
	CallID string          `json:"call_id"`
	Output json.RawMessage `json:"output"`
	Status string          `json:"status,omitempty"`
}

// InputItem is it as an input item of a provider's own Responses API:
// Raw when set, else its typed shape without its id (an id the router
// minted means nothing to the provider, and OpenAI checks the ids it is
// sent): a message with its content (an easy message when its content is
// a string), an assistant message as an easy message with its text
// (refusals included), a function call, a function call's output.
func InputItem(it Item) json.RawMessage {
	if it.Raw != nil {
		return it.Raw
	}
	var v any
	switch it.Type {
	case TypeFunctionCall:
		v = &inputCallJSON{Type: it.Type, CallID: it.CallID, Name: it.Name, Namespace: it.Namespace, Arguments: it.Arguments}
	case TypeCustomToolCall:
		v = &customCallJSON{Type: it.Type, CallID: it.CallID, Name: it.Name, Input: it.Arguments}
	case TypeFunctionCallOutput, TypeCustomToolCallOutput:
		v = &functionOutputJSON{Type: it.Type, CallID: it.CallID, Output: inputContent(it)}
	default:
		if it.Role == "assistant" {
			text := it.Text
			for _, p := range it.Parts {
				text += p.Text
			}
			v = &easyMessageJSON{Type: TypeMessage, Role: it.Role, Content: text}
		} else if it.Parts == nil {
			v = &easyMessageJSON{Type: TypeMessage, Role: it.Role, Content: it.Text}
		} else {
			v = &inputMessageJSON{Type: TypeMessage, Role: it.Role, Content: inputParts(it.Parts)}
		}
	}
	b, _ := openaiwire.Append(nil, v) // strings and valid raw JSON only: it always encodes
	return b
}

type inputCallJSON struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
}

type easyMessageJSON struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
}
