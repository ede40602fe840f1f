package responses

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// Decoded is a request read and checked: what the router can honour,
// typed. Decode refused everything else.
type Decoded struct {
	wire.Request
	// Items is the request's input as items; item_reference entries are
	// still unresolved (turn.New resolves them from the store).
	Items []wire.Item
	// Functions are the function tools, in order.
	Functions []wire.FunctionTool
	// Choice is tool_choice.
	Choice ToolChoice
	// Format is text.format; nil means plain text.
	Format *wire.Format
	// Sent holds each input item as the client sent it, aligned with
	// Items; nil when input was a string.
	Sent []json.RawMessage
	// Native, when not nil, is why only a provider's own Responses API
	// can serve the request (a built-in tool, background, an input item
	// chat has no equivalent for…): the 400 naming the field for a model
	// with no openai or azure target. Decode goes on past it, checking
	// the rest.
	Native *Error
	// NativeTarget, set by the caller before the turn is made, says the
	// model has a target with a native Responses API (openai, azure): an
	// id the router does not hold (previous_response_id, item_reference)
	// is then left to it, and the turn is for native targets only
	// (turn.Turn.Unresolved).
	NativeTarget bool
	// stream and store are the flags with their defaults applied.
	stream, store bool
}

// needs records the first reason the request needs a native Responses
// API.
func (d *Decoded) needs(e *Error) {
	if d.Native == nil {
		d.Native = e
	}
}

// nativeOnly is the end of every message about a field only a native
// Responses API serves.
const nativeOnly = ": the router translates the Responses API onto chat completions, which have no such thing; " +
	"only an openai or azure target receives it, natively, and this model has none"

// ToolChoice is tool_choice: Mode is "" (absent: auto), none, auto or
// required; Name a forced function or custom tool (Namespace its
// namespace, "" none); Allowed, when not nil, the only tools the model
// may use this turn (allowed_tools), by name.
type ToolChoice struct {
	Mode      string
	Name      string
	Namespace string
	Allowed   map[string]bool
}

// Stream reports whether the client asked for an event stream.
func (d *Decoded) Stream() bool { return d.stream }

// Stored reports whether the response is to be stored (store, default
// true).
func (d *Decoded) Stored() bool { return d.store }

// Decode reads a POST /v1/responses body the proxy has checked is valid
// JSON, refusing with a 400 naming the field what is invalid anywhere. What
// only a provider's own Responses API can honour (built-in tools,
// background responses, conversations, hosted prompts, input items with
// no chat equivalent, OpenAI file ids, truncation "auto", logprobs…) is
// not refused: Decoded.Native says why, and names the field.
func Decode(body []byte) (*Decoded, *Error) {
	d := &Decoded{}
	if err := json.Unmarshal(body, &d.Request); err != nil {
		return nil, decodeError("", err)
	}
	r := &d.Request
	// encoding/json matches keys without regard to case; OpenAI's API does
	// not, and the body goes on natively with the model found under
	// "model" replaced: a model named under any other spelling ("mOdel")
	// is no model, as OpenAI answers it.
	if m := gjson.GetBytes(body, "model"); r.Model == "" || m.Type != gjson.String || m.Str != r.Model {
		return nil, BadRequest("model", "you must provide a model parameter")
	}
	d.Native = nativeFields(r)
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens < 1 {
		return nil, BadRequest("max_output_tokens", "max_output_tokens must be a positive integer, got %d", *r.MaxOutputTokens)
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens > pricing.MaxTokens {
		return nil, BadRequest("max_output_tokens", "max_output_tokens must be at most %d, got %d", pricing.MaxTokens, *r.MaxOutputTokens)
	}
	if e := checkMetadata(r.Metadata); e != nil {
		return nil, e
	}
	var e *Error
	if d.Format, e = textFormat(r.Text); e != nil {
		return nil, e
	}
	if e = d.functionTools(r.Tools); e != nil {
		return nil, e
	}
	if e = d.decodeToolChoice(r.ToolChoice); e != nil {
		return nil, e
	}
	if e = d.decodeInput(r.Input); e != nil {
		return nil, e
	}
	if len(d.Items) == 0 && (r.PreviousResponseID == nil || *r.PreviousResponseID == "") {
		return nil, BadRequest("input", "missing required parameter: 'input'")
	}
	d.stream = r.Stream != nil && *r.Stream
	d.store = r.Store == nil || *r.Store
	return d, nil
}

// nativeFields is the first top-level field only a native Responses API
// honours, as the 400 for a model without one; nil when there is none.
func nativeFields(r *wire.Request) *Error {
	switch {
	case r.Background != nil && *r.Background:
		return BadRequest("background", "background responses are not supported (send background: false)"+nativeOnly)
	case !isNull(r.Conversation):
		return BadRequest("conversation", "conversations are not supported (continue a conversation with previous_response_id)"+nativeOnly)
	case !isNull(r.Prompt):
		return BadRequest("prompt", "prompt templates are hosted by OpenAI (send input and instructions)"+nativeOnly)
	case !isNull(r.MaxToolCalls):
		return BadRequest("max_tool_calls", "max_tool_calls limits built-in tool calls"+nativeOnly)
	case !isNull(r.ContextManagement):
		return BadRequest("context_management", "context_management is not supported"+nativeOnly)
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return BadRequest("top_logprobs", "top_logprobs is not supported"+nativeOnly)
	case r.Truncation != nil && *r.Truncation != "disabled":
		return BadRequest("truncation", "truncation %q is not supported (send \"disabled\")"+nativeOnly, Cut(*r.Truncation))
	}
	for i, inc := range r.Include {
		// A translated answer has no reasoning items, so there is no
		// encrypted reasoning to include: asking for it is harmless (the
		// Vercel AI SDK does with store: false).
		if inc != "reasoning.encrypted_content" {
			return BadRequest(fmt.Sprintf("include[%d]", i), "include %q is not supported"+nativeOnly, Cut(inc))
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

// functionTools reads tools into d.Functions: function tools as they
// are; a namespace tool's functions, each with its Namespace; a custom
// tool as Custom. A built-in tool (web_search, tool_search, file_search,
// code_interpreter, image_generation, computer_use, mcp, shell…) has no
// chat completions equivalent: it goes to a native Responses API and is
// left out of a translated request, never refused (Codex declares
// web_search on every request); only tool_choice forcing one needs a
// native Responses API (decodeToolChoice).
func (d *Decoded) functionTools(raw []json.RawMessage) *Error {
	for i, r := range raw {
		param := fmt.Sprintf("tools[%d]", i)
		var head struct {
			Type  string            `json:"type"`
			Name  string            `json:"name"`
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(r, &head); err != nil {
			return decodeError(param, err)
		}
		switch head.Type {
		case "function", "custom":
			if e := d.functionTool(param, r, ""); e != nil {
				return e
			}
		case "namespace":
			if head.Name == "" {
				return BadRequest(param+".name", "missing required parameter: '%s.name'", param)
			}
			for j, c := range head.Tools {
				if e := d.functionTool(fmt.Sprintf("%s.tools[%d]", param, j), c, head.Name); e != nil {
					return e
				}
			}
		case "":
			return BadRequest(param+".type", "missing required parameter: '%s.type'", param)
		}
	}
	return nil
}

// customTool is a custom tool as sent: its input is free-form text,
// held to format's grammar when it has one.
type customTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Format      *struct {
		Type       string `json:"type"`
		Syntax     string `json:"syntax"`
		Definition string `json:"definition"`
	} `json:"format"`
}

// functionTool reads one function or custom tool (of namespace ns, ""
// none) into d.Functions; a namespace's member of another type is left
// out, as a built-in tool is.
func (d *Decoded) functionTool(param string, r json.RawMessage, ns string) *Error {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(r, &head); err != nil {
		return decodeError(param, err)
	}
	var t wire.FunctionTool
	switch head.Type {
	case "function":
		if err := json.Unmarshal(r, &t); err != nil {
			return decodeError(param, err)
		}
		if isNull(t.Parameters) {
			t.Parameters = nil
		}
	case "custom":
		var c customTool
		if err := json.Unmarshal(r, &c); err != nil {
			return decodeError(param, err)
		}
		t = wire.FunctionTool{Type: "function", Name: c.Name, Description: c.Description, Custom: true}
		if c.Format != nil && c.Format.Type == "grammar" {
			t.Grammar = c.Format.Syntax + " grammar:\n" + c.Format.Definition
		}
	default:
		return nil
	}
	if t.Name == "" {
		return BadRequest(param+".name", "missing required parameter: '%s.name'", param)
	}
	t.Namespace = ns
	d.Functions = append(d.Functions, t)
	return nil
}

// decodeToolChoice reads tool_choice into d.Choice: "none", "auto",
// "required", {type:"function",name} or {type:"allowed_tools",mode,tools};
// a built-in tool's choice needs a native Responses API.
func (d *Decoded) decodeToolChoice(raw json.RawMessage) *Error {
	tc := &d.Choice
	if isNull(raw) {
		return nil
	}
	if raw[0] == '"' {
		_ = json.Unmarshal(raw, &tc.Mode) // a valid JSON string
		switch tc.Mode {
		case "none", "auto", "required":
			return nil
		}
		return BadRequest("tool_choice", "tool_choice must be none, auto, required or an object, got %q", Cut(tc.Mode))
	}
	var obj struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Mode      string `json:"mode"`
		Tools     []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return decodeError("tool_choice", err)
	}
	switch obj.Type {
	case "function", "custom":
		if obj.Name == "" {
			return BadRequest("tool_choice.name", "missing required parameter: 'tool_choice.name'")
		}
		tc.Name, tc.Namespace = obj.Name, obj.Namespace
		return nil
	case "allowed_tools":
		if obj.Mode != "auto" && obj.Mode != "required" {
			return BadRequest("tool_choice.mode", "tool_choice.mode must be auto or required, got %q", Cut(obj.Mode))
		}
		tc.Mode, tc.Allowed = obj.Mode, map[string]bool{}
		builtin := -1
		for i, t := range obj.Tools {
			if t.Type != "function" && t.Type != "custom" {
				builtin = i // left out on chat, as the tool is
				continue
			}
			tc.Allowed[t.Name] = true
		}
		if builtin >= 0 && obj.Mode == "required" && len(tc.Allowed) == 0 {
			// Only built-in tools, one of which must be called.
			d.needs(BadRequest(fmt.Sprintf("tool_choice.tools[%d].type", builtin), "only function and custom tools can be required on chat completions, got %q"+nativeOnly, Cut(obj.Tools[builtin].Type)))
		}
		return nil
	}
	d.needs(BadRequest("tool_choice.type", "tool_choice type %q is not supported (built-in tools are OpenAI's own)"+nativeOnly, Cut(obj.Type)))
	return nil
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
	Input     *string         `json:"input"`
	Namespace string          `json:"namespace"`
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

// decodeInput reads input into d.Items (and d.Sent): a string (one user
// message) or an array of items. An item chat completions cannot take is
// kept as sent (Item.Raw): a reasoning item (left out of a translated
// conversation, sent back as is to a native Responses API), and an item
// or a content part only a native Responses API reads (a built-in tool's
// call or output, an OpenAI file id), which the request then needs.
func (d *Decoded) decodeInput(raw json.RawMessage) *Error {
	if isNull(raw) {
		return nil
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s) // a valid JSON string
		d.Items = []wire.Item{{Type: wire.TypeMessage, Role: "user", Text: s}}
		return nil
	case '[':
	default:
		return BadRequest("input", "input must be a string or an array of items")
	}
	var raws []json.RawMessage
	_ = json.Unmarshal(raw, &raws) // a valid JSON array
	d.Items, d.Sent = make([]wire.Item, 0, len(raws)), raws
	for i, r := range raws {
		param := fmt.Sprintf("input[%d]", i)
		if r = bytes.TrimSpace(r); len(r) == 0 || r[0] != '{' {
			return BadRequest(param, "%s must be an object", param)
		}
		var in inputItem
		if err := json.Unmarshal(r, &in); err != nil {
			return decodeError(param, err)
		}
		if in.Type == "" {
			switch {
			case in.Role != "":
				in.Type = wire.TypeMessage // an "easy" message: type is optional
			case in.ID != "" && isNull(in.Content):
				in.Type = wire.TypeItemReference
			default:
				return BadRequest(param+".type", "missing required parameter: '%s.type'", param)
			}
		}
		it := wire.Item{Type: in.Type, ID: in.ID}
		native := false
		var e *Error
		switch in.Type {
		case wire.TypeMessage:
			native, e = d.message(param, &in, &it)
		case wire.TypeFunctionCall:
			switch {
			case in.CallID == "":
				return BadRequest(param+".call_id", "missing required parameter: '%s.call_id'", param)
			case in.Name == "":
				return BadRequest(param+".name", "missing required parameter: '%s.name'", param)
			case in.Arguments == nil:
				return BadRequest(param+".arguments", "missing required parameter: '%s.arguments'", param)
			}
			it.CallID, it.Name, it.Arguments, it.Namespace = in.CallID, in.Name, *in.Arguments, in.Namespace
		case wire.TypeCustomToolCall:
			switch {
			case in.CallID == "":
				return BadRequest(param+".call_id", "missing required parameter: '%s.call_id'", param)
			case in.Name == "":
				return BadRequest(param+".name", "missing required parameter: '%s.name'", param)
			case in.Input == nil:
				return BadRequest(param+".input", "missing required parameter: '%s.input'", param)
			}
			it.CallID, it.Name, it.Arguments = in.CallID, in.Name, *in.Input
		case wire.TypeFunctionCallOutput, wire.TypeCustomToolCallOutput:
			if in.CallID == "" {
				return BadRequest(param+".call_id", "missing required parameter: '%s.call_id'", param)
			}
			it.CallID = in.CallID
			native, e = d.content(param+".output", in.Output, "tool", &it)
		case wire.TypeItemReference:
			if in.ID == "" {
				return BadRequest(param+".id", "missing required parameter: '%s.id'", param)
			}
		case wire.TypeReasoning:
			it.Raw = r
		default:
			d.needs(BadRequest(param+".type", "the input item type %q is not supported (chat completions take messages, "+
				"function calls and function call outputs only)"+nativeOnly, Cut(in.Type)))
			native = true
		}
		if e != nil {
			return e
		}
		if native {
			it.Raw = r
		}
		d.Items = append(d.Items, it)
	}
	return nil
}

// message reads a message item's role and content into it; native says
// a part of it only a native Responses API reads.
func (d *Decoded) message(param string, in *inputItem, it *wire.Item) (native bool, e *Error) {
	switch in.Role {
	case "user", "assistant", "system", "developer":
	case "":
		return false, BadRequest(param+".role", "missing required parameter: '%s.role'", param)
	default:
		return false, BadRequest(param+".role", "%s.role must be user, assistant, system or developer, got %q", param, Cut(in.Role))
	}
	it.Role = in.Role
	if isNull(in.Content) {
		return false, BadRequest(param+".content", "missing required parameter: '%s.content'", param)
	}
	return d.content(param+".content", in.Content, in.Role, it)
}

// content reads a message's content or a function output (role "tool"):
// a string, or an array of parts. Images and files are for user messages
// and function outputs; refusals and output text for assistant messages.
// A part only a native Responses API reads (an OpenAI file id, a file
// URL) is left out of it.Parts, and native says so.
func (d *Decoded) content(param string, raw json.RawMessage, role string, it *wire.Item) (native bool, e *Error) {
	if isNull(raw) {
		return false, BadRequest(param, "missing required parameter: '%s'", param)
	}
	switch raw[0] {
	case '"':
		_ = json.Unmarshal(raw, &it.Text) // a valid JSON string
		return false, nil
	case '[':
	default:
		return false, BadRequest(param, "%s must be a string or an array of content parts", param)
	}
	var parts []inputPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return false, decodeError(param, err)
	}
	it.Parts = make([]wire.Part, 0, len(parts))
	media := role == "user" || role == "tool"
	nativePart := func(field, what string) {
		d.needs(BadRequest(field, "%s", what+nativeOnly))
		native = true
	}
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		switch {
		case p.Type == wire.PartInputText || p.Type == wire.PartOutputText:
			it.Parts = append(it.Parts, wire.Part{Type: p.Type, Text: p.Text})
		case p.Type == wire.PartRefusal && role == "assistant":
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartRefusal, Text: p.Refusal})
		case p.Type == wire.PartInputImage && media:
			if p.FileID != nil && *p.FileID != "" {
				nativePart(pp+".file_id", "OpenAI file ids are not supported (send image_url, an https or data: URL)")
				continue
			}
			if p.ImageURL == nil || *p.ImageURL == "" {
				return false, BadRequest(pp+".image_url", "missing required parameter: '%s.image_url'", pp)
			}
			detail := p.Detail
			if detail == "" {
				detail = "auto" // required by the spec, often left out
			}
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartInputImage, ImageURL: *p.ImageURL, Detail: detail})
		case p.Type == wire.PartInputFile && media:
			switch {
			case p.FileID != nil && *p.FileID != "":
				nativePart(pp+".file_id", "OpenAI file ids are not supported (send file_data, a base64 data: URL)")
				continue
			case p.FileURL != nil && *p.FileURL != "":
				nativePart(pp+".file_url", "file URLs are not supported (send file_data, a base64 data: URL)")
				continue
			case p.FileData == "":
				return false, BadRequest(pp+".file_data", "missing required parameter: '%s.file_data'", pp)
			}
			it.Parts = append(it.Parts, wire.Part{Type: wire.PartInputFile, FileData: p.FileData, Filename: p.Filename})
		default:
			where := "a " + role + " message"
			if role == "tool" {
				where = "a function call output"
			}
			return false, BadRequest(pp+".type", "the content part type %q is not supported in %s", Cut(p.Type), where)
		}
	}
	return native, nil
}

// isNull reports whether a raw value is absent or null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
