package responses

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// Decoded is a request read and checked: what the router can honour,
// typed. Decode refused everything else.
type Decoded struct {
	wire.Request
	// Items is the request's input as items; item_reference entries are
	// still unresolved (NewTurn resolves them from the store).
	Items []wire.Item
	// Functions are the function tools, in order.
	Functions []wire.FunctionTool
	// Choice is tool_choice.
	Choice ToolChoice
	// Format is text.format; nil means plain text.
	Format *wire.Format
	// stream and store are the flags with their defaults applied.
	stream, store bool
}

// ToolChoice is tool_choice: Mode is "" (absent: auto), none, auto or
// required; Name a forced function; Allowed, when not nil, the only
// tools the model may use this turn (allowed_tools).
type ToolChoice struct {
	Mode    string
	Name    string
	Allowed map[string]bool
}

// Stream reports whether the client asked for an event stream.
func (d *Decoded) Stream() bool { return d.stream }

// Stored reports whether the response is to be stored (store, default
// true).
func (d *Decoded) Stored() bool { return d.store }

// Decode reads a POST /v1/responses body the proxy has checked is valid
// JSON, and refuses, with a 400 naming the field, what the router cannot
// honour on a chat completions upstream: built-in tools, background
// responses, conversations, hosted prompts, input items with no chat
// equivalent, OpenAI file ids, truncation "auto", logprobs.
func Decode(body []byte) (*Decoded, *Error) {
	d := &Decoded{}
	if err := json.Unmarshal(body, &d.Request); err != nil {
		return nil, decodeError("", err)
	}
	r := &d.Request
	if r.Model == "" {
		return nil, BadRequest("model", "you must provide a model parameter")
	}
	if e := refuseUnsupported(r); e != nil {
		return nil, e
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens < 1 {
		return nil, BadRequest("max_output_tokens", "max_output_tokens must be a positive integer, got %d", *r.MaxOutputTokens)
	}
	if e := checkMetadata(r.Metadata); e != nil {
		return nil, e
	}
	var e *Error
	if d.Format, e = textFormat(r.Text); e != nil {
		return nil, e
	}
	if d.Functions, e = functionTools(r.Tools); e != nil {
		return nil, e
	}
	if d.Choice, e = decodeToolChoice(r.ToolChoice); e != nil {
		return nil, e
	}
	if d.Items, e = decodeInput(r.Input); e != nil {
		return nil, e
	}
	if len(d.Items) == 0 && (r.PreviousResponseID == nil || *r.PreviousResponseID == "") {
		return nil, BadRequest("input", "missing required parameter: 'input'")
	}
	d.stream = r.Stream != nil && *r.Stream
	d.store = r.Store == nil || *r.Store
	return d, nil
}

// refuseUnsupported refuses the request fields the router cannot honour.
func refuseUnsupported(r *wire.Request) *Error {
	switch {
	case r.Background != nil && *r.Background:
		return BadRequest("background", "background responses are not supported: the router answers while the request is open (send background: false)")
	case !isNull(r.Conversation):
		return BadRequest("conversation", "conversations are not supported by the router: continue a conversation with previous_response_id")
	case !isNull(r.Prompt):
		return BadRequest("prompt", "prompt templates are hosted by OpenAI and not supported by the router: send input and instructions")
	case !isNull(r.MaxToolCalls):
		return BadRequest("max_tool_calls", "max_tool_calls is not supported: it limits built-in tool calls, which the router does not have")
	case !isNull(r.ContextManagement):
		return BadRequest("context_management", "context_management is not supported by the router")
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return BadRequest("top_logprobs", "top_logprobs is not supported by the router")
	case r.Truncation != nil && *r.Truncation != "disabled":
		return BadRequest("truncation", "truncation %q is not supported: the router does not drop items from a conversation (send \"disabled\")", Cut(*r.Truncation))
	}
	for i, inc := range r.Include {
		// No reasoning items are returned, so there is no encrypted
		// reasoning to include: asking for it is harmless (the Vercel AI
		// SDK does with store: false).
		if inc != "reasoning.encrypted_content" {
			return BadRequest(fmt.Sprintf("include[%d]", i), "include %q is not supported by the router", Cut(inc))
		}
	}
	return nil
}

// checkMetadata applies OpenAI's limits: at most 16 pairs, keys up to 64
// characters, values up to 512.
func checkMetadata(m map[string]string) *Error {
	if len(m) > 16 {
		return BadRequest("metadata", "metadata holds at most 16 pairs, got %d", len(m))
	}
	for k, v := range m {
		if len([]rune(k)) > 64 {
			return BadRequest("metadata", "metadata keys are at most 64 characters: %q", Cut(k))
		}
		if len([]rune(v)) > 512 {
			return BadRequest("metadata", "metadata values are at most 512 characters (key %q)", Cut(k))
		}
	}
	return nil
}

// textFormat checks text.format; nil is plain text.
func textFormat(t *wire.TextConfig) (*wire.Format, *Error) {
	if t == nil || t.Format == nil {
		return nil, nil
	}
	f := t.Format
	switch f.Type {
	case "text", "":
		return nil, nil
	case "json_object":
		return f, nil
	case "json_schema":
		if f.Name == "" {
			return nil, BadRequest("text.format.name", "missing required parameter: 'text.format.name'")
		}
		if isNull(f.Schema) {
			return nil, BadRequest("text.format.schema", "missing required parameter: 'text.format.schema'")
		}
		return f, nil
	}
	return nil, BadRequest("text.format.type", "text.format.type must be text, json_object or json_schema, got %q", Cut(f.Type))
}

// functionTools reads tools: function tools only. A built-in tool
// (web_search, file_search, code_interpreter, image_generation,
// computer_use, mcp, custom, shell…) has no chat completions equivalent.
func functionTools(raw []json.RawMessage) ([]wire.FunctionTool, *Error) {
	var out []wire.FunctionTool
	for i, r := range raw {
		param := fmt.Sprintf("tools[%d]", i)
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(r, &head); err != nil {
			return nil, decodeError(param, err)
		}
		if head.Type != "function" {
			return nil, BadRequest(param+".type", "the tool type %q is not supported: the router translates the Responses API onto chat completions, "+
				"which have function tools only (built-in tools such as web_search or code_interpreter are OpenAI's own)", Cut(head.Type))
		}
		var t wire.FunctionTool
		if err := json.Unmarshal(r, &t); err != nil {
			return nil, decodeError(param, err)
		}
		if t.Name == "" {
			return nil, BadRequest(param+".name", "missing required parameter: '%s.name'", param)
		}
		if isNull(t.Parameters) {
			t.Parameters = nil
		}
		out = append(out, t)
	}
	return out, nil
}

// decodeToolChoice reads tool_choice: "none", "auto", "required",
// {type:"function",name} or {type:"allowed_tools",mode,tools}.
func decodeToolChoice(raw json.RawMessage) (ToolChoice, *Error) {
	var tc ToolChoice
	if isNull(raw) {
		return tc, nil
	}
	if raw[0] == '"' {
		_ = json.Unmarshal(raw, &tc.Mode) // a valid JSON string
		switch tc.Mode {
		case "none", "auto", "required":
			return tc, nil
		}
		return tc, BadRequest("tool_choice", "tool_choice must be none, auto, required or an object, got %q", Cut(tc.Mode))
	}
	var obj struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Mode  string `json:"mode"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return tc, decodeError("tool_choice", err)
	}
	switch obj.Type {
	case "function":
		if obj.Name == "" {
			return tc, BadRequest("tool_choice.name", "missing required parameter: 'tool_choice.name'")
		}
		tc.Name = obj.Name
		return tc, nil
	case "allowed_tools":
		if obj.Mode != "auto" && obj.Mode != "required" {
			return tc, BadRequest("tool_choice.mode", "tool_choice.mode must be auto or required, got %q", Cut(obj.Mode))
		}
		tc.Mode, tc.Allowed = obj.Mode, map[string]bool{}
		for i, t := range obj.Tools {
			if t.Type != "function" {
				return tc, BadRequest(fmt.Sprintf("tool_choice.tools[%d].type", i), "only function tools can be allowed, got %q", Cut(t.Type))
			}
			tc.Allowed[t.Name] = true
		}
		return tc, nil
	}
	return tc, BadRequest("tool_choice.type", "tool_choice type %q is not supported: the router has function tools only", Cut(obj.Type))
}

// inputItem is an input item as sent; which fields apply depends on Type.
type inputItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// inputPart is a content part as sent.
type inputPart struct {
	Type     string  `json:"type"`
	Text     string  `json:"text"`
	Refusal  string  `json:"refusal"`
	ImageURL *string `json:"image_url"`
	FileID   *string `json:"file_id"`
	Detail   string  `json:"detail"`
	FileData string  `json:"file_data"`
	FileURL  *string `json:"file_url"`
	Filename string  `json:"filename"`
}

// decodeInput reads input: a string (one user message) or an array of
// items. Reasoning items are dropped: chat completions cannot take them
// back, and their ids (rs_…) are the only thing a client could refer to.
func decodeInput(raw json.RawMessage) ([]wire.Item, *Error) {
	if isNull(raw) {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s) // a valid JSON string
		return []wire.Item{{Type: wire.TypeMessage, Role: "user", Text: s}}, nil
	case '[':
	default:
		return nil, BadRequest("input", "input must be a string or an array of items")
	}
	var raws []json.RawMessage
	_ = json.Unmarshal(raw, &raws) // a valid JSON array
	out := make([]wire.Item, 0, len(raws))
	for i, r := range raws {
		param := fmt.Sprintf("input[%d]", i)
		if r = bytes.TrimSpace(r); len(r) == 0 || r[0] != '{' {
			return nil, BadRequest(param, "%s must be an object", param)
		}
		var in inputItem
		if err := json.Unmarshal(r, &in); err != nil {
			return nil, decodeError(param, err)
		}
		if in.Type == "" {
			switch {
			case in.Role != "":
				in.Type = wire.TypeMessage // an "easy" message: type is optional
			case in.ID != "" && isNull(in.Content):
				in.Type = wire.TypeItemReference
			default:
				return nil, BadRequest(param+".type", "missing required parameter: '%s.type'", param)
			}
		}
		it := wire.Item{Type: in.Type, ID: in.ID}
		switch in.Type {
		case wire.TypeMessage:
			if e := message(param, &in, &it); e != nil {
				return nil, e
			}
		case wire.TypeFunctionCall:
			switch {
			case in.CallID == "":
				return nil, BadRequest(param+".call_id", "missing required parameter: '%s.call_id'", param)
			case in.Name == "":
				return nil, BadRequest(param+".name", "missing required parameter: '%s.name'", param)
			case in.Arguments == nil:
				return nil, BadRequest(param+".arguments", "missing required parameter: '%s.arguments'", param)
			}
			it.CallID, it.Name, it.Arguments = in.CallID, in.Name, *in.Arguments
		case wire.TypeFunctionCallOutput:
			if in.CallID == "" {
				return nil, BadRequest(param+".call_id", "missing required parameter: '%s.call_id'", param)
			}
			it.CallID = in.CallID
			if e := content(param+".output", in.Output, "tool", &it); e != nil {
				return nil, e
			}
		case wire.TypeItemReference:
			if in.ID == "" {
				return nil, BadRequest(param+".id", "missing required parameter: '%s.id'", param)
			}
		case wire.TypeReasoning:
			continue
		default:
			return nil, BadRequest(param+".type", "the input item type %q is not supported: the router translates the Responses API onto chat completions, "+
				"which take messages, function calls and function call outputs only", Cut(in.Type))
		}
		out = append(out, it)
	}
	return out, nil
}

// message reads a message item's role and content into it.
func message(param string, in *inputItem, it *wire.Item) *Error {
	switch in.Role {
	case "user", "assistant", "system", "developer":
	case "":
		return BadRequest(param+".role", "missing required parameter: '%s.role'", param)
	default:
		return BadRequest(param+".role", "%s.role must be user, assistant, system or developer, got %q", param, Cut(in.Role))
	}
	it.Role = in.Role
	if isNull(in.Content) {
		return BadRequest(param+".content", "missing required parameter: '%s.content'", param)
	}
	return content(param+".content", in.Content, in.Role, it)
}

// content reads a message's content or a function output (role "tool"):
// a string, or an array of parts. Images and files are for user messages
// and function outputs; refusals and output text for assistant messages.
func content(param string, raw json.RawMessage, role string, it *wire.Item) *Error {
	if isNull(raw) {
		return BadRequest(param, "missing required parameter: '%s'", param)
	}
	switch raw[0] {
	case '"':
		_ = json.Unmarshal(raw, &it.Text) // a valid JSON string
		return nil
	case '[':
	default:
		return BadRequest(param, "%s must be a string or an array of content parts", param)
	}
	var parts []inputPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return decodeError(param, err)
	}
	it.Parts = make([]wire.Part, 0, len(parts))
	media := role == "user" || role == "tool"
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		switch {
		case p.Type == wire.PartInputText || p.Type == wire.PartOutputText:
			it.Parts = append(it.Parts, wire.Part{Type: p.Type, Text: p.Text})
		case p.Type == wire.PartRefusal && role == "assistant":
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartRefusal, Text: p.Refusal})
		case p.Type == wire.PartInputImage && media:
			if p.FileID != nil && *p.FileID != "" {
				return BadRequest(pp+".file_id", "OpenAI file ids are not supported by the router: send image_url (an https or data: URL)")
			}
			if p.ImageURL == nil || *p.ImageURL == "" {
				return BadRequest(pp+".image_url", "missing required parameter: '%s.image_url'", pp)
			}
			detail := p.Detail
			if detail == "" {
				detail = "auto" // required by the spec, often left out
			}
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartInputImage, ImageURL: *p.ImageURL, Detail: detail})
		case p.Type == wire.PartInputFile && media:
			switch {
			case p.FileID != nil && *p.FileID != "":
				return BadRequest(pp+".file_id", "OpenAI file ids are not supported by the router: send file_data (a base64 data: URL)")
			case p.FileURL != nil && *p.FileURL != "":
				return BadRequest(pp+".file_url", "file URLs are not supported by the router: send file_data (a base64 data: URL)")
			case p.FileData == "":
				return BadRequest(pp+".file_data", "missing required parameter: '%s.file_data'", pp)
			}
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartInputFile, FileData: p.FileData, Filename: p.Filename})
		default:
			where := "a " + role + " message"
			if role == "tool" {
				where = "a function call output"
			}
			return BadRequest(pp+".type", "the content part type %q is not supported in %s", Cut(p.Type), where)
		}
	}
	return nil
}

// isNull reports whether a raw value is absent or null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
