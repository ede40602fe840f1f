package responses

import (
	"encoding/json"
	"fmt"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
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

// Decode reads a POST /v1/responses body, refusing with a 400 naming the
// field what is invalid anywhere. What
// only a provider's own Responses API can honour (built-in tools,
// background responses, conversations, hosted prompts, input items with
// no chat equivalent, OpenAI file ids, truncation "auto", logprobs…) is
// not refused: Decoded.Native says why, and names the field.
//
// It reads the body in one walk (jsonscan's, checked as it goes): the
// input's items and the tools where they stand, each string unescaped
// once, as encoding/json would have read them into wire.Request and the
// types below. Kept of encoding/json: a key names a field under any case
// (but a model named under another spelling than "model" is no model, as
// OpenAI answers it), the last of a repeated key wins (an object merged
// into the one before it), null leaves a field as it was (a pointer, a
// slice, a map nil), and a value of the wrong type is refused with the
// first one's field in the body's order, before anything else. What
// Decoded holds aliases one copy of body (a stored response's items keep
// it), never body itself, whose buffer goes back to its pool. The walk
// makes the bounded check (jsonscan's, intake.Check's): a body the check
// refuses is refused, but not said why, since the walk may meet a
// problem of the request's first; the caller asks the check on any
// refusal, and answers its refusal first.
func Decode(body []byte) (*Decoded, *Error) {
	s := string(body) // what Decoded holds aliases this copy
	dc := decoder{s: s, d: &Decoded{}}
	d, r := dc.d, &dc.d.Request
	if i := jsonscan.Space(s, 0); i < len(s) && s[i] != '{' {
		if !jsonscan.Valid(body) {
			return nil, notJSON
		}
		if s[i] != 'n' {
			return nil, BadRequest("", "the request body must be an object, got %s", kind(s[i:]))
		}
		return nil, BadRequest("model", "you must provide a model parameter") // null: an empty request
	}
	var w jsonscan.Doc
	w.Start(s)
	for dc.top == nil && w.Member() {
		dc.member(&w.Walker)
	}
	switch {
	case dc.top != nil:
		return nil, dc.top
	case w.At() < 0:
		return nil, notJSON
	}
	// The first member named exactly "model" names the model (the body
	// goes on natively with it replaced), and it is the one read.
	if r.Model == "" || !jsonscan.IsString(dc.model) || jsonscan.Unquote(dc.model) != r.Model {
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
	if dc.tools.err != nil {
		return nil, dc.tools.err
	}
	d.Functions = dc.tools.fns
	if e = d.decodeToolChoice(string(r.ToolChoice)); e != nil {
		return nil, e
	}
	if dc.input.err != nil {
		return nil, dc.input.err
	}
	d.needs(dc.input.native)
	if len(d.Items) == 0 && (r.PreviousResponseID == nil || *r.PreviousResponseID == "") {
		return nil, BadRequest("input", "missing required parameter: 'input'")
	}
	d.stream = r.Stream != nil && *r.Stream
	d.store = r.Store == nil || *r.Store
	return d, nil
}

// notJSON refuses a body the walk could not read (one the check
// refuses, which the caller answers instead).
var notJSON = BadRequest("", "the request body is not valid JSON")

// decoder is Decode's walk: the request read so far, and what each step
// after the walk answers, in the order encoding/json's decode of each
// level answered it.
type decoder struct {
	s string
	d *Decoded
	// top is the first value of the wrong type for wire.Request's fields
	// (encoding/json's first error): the answer, before anything else.
	top *Error
	// model is the text of the first member named exactly "model".
	model string
	// tools and input are the steps read where they stand: their
	// refusal, or what they read.
	tools struct {
		err *Error
		fns []wire.FunctionTool
	}
	input struct {
		err, native *Error
	}
	// scratch is for the parts of an item's content and output, reused.
	scratch [2][]inputPart
}

// requestFields are wire.Request's JSON names, in the order of its
// fields (the cases of member).
var requestFields = []string{"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
	"max_output_tokens", "temperature", "top_p", "text", "reasoning", "metadata", "user", "safety_identifier",
	"prompt_cache_key", "service_tier", "store", "previous_response_id", "stream", "include", "truncation",
	"background", "top_logprobs", "conversation", "prompt", "max_tool_calls", "context_management"}

// member reads the body's member where w is.
func (dc *decoder) member(w *jsonscan.Walker) {
	r := &dc.d.Request
	k := w.Key()
	f := field(k, requestFields)
	switch f {
	case 1: // input
		dc.readInput(w)
		return
	case 3: // tools
		dc.readTools(w)
		return
	}
	w.Skip()
	v := w.Val()
	if v == "" {
		return // not JSON: the walk ends
	}
	name := requestFields[max(f, 0)]
	var e *Error
	switch f {
	case 0:
		if k == "model" && dc.model == "" {
			dc.model = v
		}
		e = str(name, v, &r.Model)
	case 2:
		e = strPtr(name, v, &r.Instructions)
	case 4:
		r.ToolChoice = dc.raw(v)
	case 5:
		e = boolPtr(name, v, &r.ParallelToolCalls)
	case 6:
		e = intPtr(name, v, &r.MaxOutputTokens)
	case 7:
		e = floatPtr(name, v, &r.Temperature)
	case 8:
		e = floatPtr(name, v, &r.TopP)
	case 9:
		e = dc.textConfig(v, &r.Text)
	case 10:
		e = reasoning(v, &r.Reasoning)
	case 11:
		e = metadata(v, &r.Metadata)
	case 12:
		e = strPtr(name, v, &r.User)
	case 13:
		e = strPtr(name, v, &r.SafetyIdentifier)
	case 14:
		e = strPtr(name, v, &r.PromptCacheKey)
	case 15:
		e = strPtr(name, v, &r.ServiceTier)
	case 16:
		e = boolPtr(name, v, &r.Store)
	case 17:
		e = strPtr(name, v, &r.PreviousResponseID)
	case 18:
		e = boolPtr(name, v, &r.Stream)
	case 19:
		e = strSlice(name, v, &r.Include)
	case 20:
		e = strPtr(name, v, &r.Truncation)
	case 21:
		e = boolPtr(name, v, &r.Background)
	case 22:
		e = intPtr(name, v, &r.TopLogprobs)
	case 23:
		r.Conversation = dc.raw(v)
	case 24:
		r.Prompt = dc.raw(v)
	case 25:
		r.MaxToolCalls = dc.raw(v)
	case 26:
		r.ContextManagement = dc.raw(v)
	}
	if e != nil {
		dc.top = e
	}
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
