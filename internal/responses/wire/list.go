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

// MarshalJSON writes the item in its type's shape.
func (l ListedItem) MarshalJSON() ([]byte, error) {
	switch {
	case l.Type == TypeFunctionCall:
		return openaiwire.Append(nil, &functionCallJSON{ID: l.ID, Type: l.Type, Status: StatusCompleted, CallID: l.CallID, Name: l.Name, Arguments: l.Arguments})
	case l.Type == TypeFunctionCallOutput:
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
