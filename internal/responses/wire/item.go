package wire

import (
	"encoding/json"
	"strings"
)

// Item types.
const (
	TypeMessage            = "message"
	TypeFunctionCall       = "function_call"
	TypeFunctionCallOutput = "function_call_output"
	TypeItemReference      = "item_reference" // input only: resolved from the store
	TypeReasoning          = "reasoning"      // kept as sent (Raw); chat has no equivalent
	// A custom tool's call (free-form input text, Arguments) and its
	// output: translated onto chat as a function with one string argument.
	TypeCustomToolCall       = "custom_tool_call"
	TypeCustomToolCallOutput = "custom_tool_call_output"
)

// Content part types.
const (
	PartInputText  = "input_text"
	PartOutputText = "output_text"
	PartRefusal    = "refusal"
	PartInputImage = "input_image"
	PartInputFile  = "input_file"
)

// Item is one conversation item as the router keeps it: a message, a
// function call or a function call's output, typed; or an item chat
// completions cannot take (a reasoning item, a built-in tool's call or
// output, a message with an OpenAI file id), kept as the client or the
// provider sent it. A stored response holds its input and output items; a
// chain expands into them, oldest first. Items are never changed once
// made.
type Item struct {
	// Type is the item's type: TypeMessage, TypeFunctionCall and
	// TypeFunctionCallOutput are typed below; any other comes with Raw.
	Type string
	// ID is the item's id: minted for output items (msg_…, fc_…), the
	// client's for an input item that carried one, else "".
	ID string
	// Role is a message's role: user, system, developer or assistant.
	Role string
	// Text is a message's or a function output's content given as a
	// string; Parts is the content given as parts (nil when a string).
	Text  string
	Parts []Part
	// CallID pairs a function call with its output. Name and Arguments
	// (JSON text) are a function call's; for a custom tool call,
	// Arguments is its input, free-form text.
	CallID, Name, Arguments string
	// Namespace is a function call's namespace: the namespace tool whose
	// function it calls (Codex's multi_agent_v1), "" for a plain function.
	Namespace string `json:",omitempty"`
	// Raw, when not nil, is the item as sent, to send on unchanged to a
	// provider's own Responses API, whose JSON it is; the typed fields
	// then hold what chat completions can take of it (for a message with
	// a file id, its other parts; for other types, nothing). nil for
	// items the typed fields hold whole.
	Raw json.RawMessage `json:",omitempty"`
}

// Part is one content part of a message or a function output.
type Part struct {
	// Type is PartInputText, PartOutputText, PartRefusal, PartInputImage
	// or PartInputFile.
	Type string
	// Text is the text of a text part and the refusal of a refusal part.
	Text string
	// ImageURL (an https or data: URL) and Detail are an image's.
	ImageURL, Detail string
	// FileData (a base64 data: URL) and Filename are a file's.
	FileData, Filename string
}

// Detach returns a copy of items that shares no memory with them: their
// strings in one new string, their raw JSON in one new slice, their parts
// in one new array. A decoded request's items point into the request's
// body (internal/responses, one walk); an item kept beyond the request
// (a stored turn, a WebSocket connection's latest response) is detached
// first, so that it keeps its own bytes alive and not the whole body,
// which responses.max_bytes does not count.
func Detach(items []Item) []Item {
	if items == nil {
		return nil
	}
	var nstr, nraw, nparts int
	for i := range items {
		it := &items[i]
		nstr += len(it.Type) + len(it.ID) + len(it.Role) + len(it.Text) + len(it.CallID) + len(it.Name) + len(it.Arguments) + len(it.Namespace)
		nraw += len(it.Raw)
		nparts += len(it.Parts)
		for _, p := range it.Parts {
			nstr += len(p.Type) + len(p.Text) + len(p.ImageURL) + len(p.Detail) + len(p.FileData) + len(p.Filename)
		}
	}
	var sb strings.Builder
	sb.Grow(nstr)
	for i := range items {
		it := &items[i]
		for _, s := range [...]string{it.Type, it.ID, it.Role, it.Text, it.CallID, it.Name, it.Arguments, it.Namespace} {
			sb.WriteString(s)
		}
		for _, p := range it.Parts {
			for _, s := range [...]string{p.Type, p.Text, p.ImageURL, p.Detail, p.FileData, p.Filename} {
				sb.WriteString(s)
			}
		}
	}
	all := sb.String()
	next := func(s string) string {
		out := all[:len(s)]
		all = all[len(s):]
		return out
	}
	raw := make([]byte, 0, nraw)
	parts := make([]Part, 0, nparts)
	out := make([]Item, len(items))
	for i := range items {
		it, o := &items[i], &out[i]
		o.Type, o.ID, o.Role, o.Text = next(it.Type), next(it.ID), next(it.Role), next(it.Text)
		o.CallID, o.Name, o.Arguments, o.Namespace = next(it.CallID), next(it.Name), next(it.Arguments), next(it.Namespace)
		if it.Raw != nil {
			start := len(raw)
			raw = append(raw, it.Raw...)
			o.Raw = raw[start:len(raw):len(raw)]
		}
		if it.Parts != nil {
			start := len(parts)
			for _, p := range it.Parts {
				parts = append(parts, Part{Type: next(p.Type), Text: next(p.Text), ImageURL: next(p.ImageURL),
					Detail: next(p.Detail), FileData: next(p.FileData), Filename: next(p.Filename)})
			}
			o.Parts = parts[start:len(parts):len(parts)]
		}
	}
	return out
}
