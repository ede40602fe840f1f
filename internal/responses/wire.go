package responses

import (
	"encoding/json"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// Request is the body of POST /v1/responses as far as the router reads
// it. Pointers and raw values are nil when the field was absent; a raw
// value may hold "null". Fields the router does not know are ignored.
type Request struct {
	Model string `json:"model"`
	// Input is a string (one user message) or an array of items, kept raw
	// and read by Decode.
	Input        json.RawMessage `json:"input"`
	Instructions *string         `json:"instructions"`
	// Tools are kept raw: a built-in tool is refused by its type before
	// its fields are read.
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	MaxOutputTokens   *int64            `json:"max_output_tokens"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
	Text              *TextConfig       `json:"text"`
	Reasoning         *Reasoning        `json:"reasoning"`
	Metadata          map[string]string `json:"metadata"`
	User              *string           `json:"user"`
	SafetyIdentifier  *string           `json:"safety_identifier"`
	PromptCacheKey    *string           `json:"prompt_cache_key"`
	ServiceTier       *string           `json:"service_tier"`
	// Store defaults to true, as OpenAI's does.
	Store              *bool    `json:"store"`
	PreviousResponseID *string  `json:"previous_response_id"`
	Stream             *bool    `json:"stream"`
	Include            []string `json:"include"`
	Truncation         *string  `json:"truncation"`
	Background         *bool    `json:"background"`
	TopLogprobs        *int64   `json:"top_logprobs"`

	// Fields the router cannot honour: declared so that a value other
	// than null is refused by name.
	Conversation      json.RawMessage `json:"conversation"`
	Prompt            json.RawMessage `json:"prompt"`
	MaxToolCalls      json.RawMessage `json:"max_tool_calls"`
	ContextManagement json.RawMessage `json:"context_management"`
}

// TextConfig is the request's and the response's text block.
type TextConfig struct {
	// Format nil is plain text.
	Format *Format `json:"format,omitempty"`
	// Verbosity is low, medium or high; "" when absent.
	Verbosity string `json:"verbosity,omitempty"`
}

// Format is text.format: {type:"text"}, {type:"json_object"} or
// {type:"json_schema", name, schema, strict, description}. The schema
// fields are flat here and nested under json_schema in chat.
type Format struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Reasoning is the reasoning block. Effort is passed on as chat's
// reasoning_effort; Summary has no chat equivalent and is only echoed.
type Reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// FunctionTool is a function tool, flat as the Responses API has it
// (chat nests it under "function"). Parameters is its JSON Schema, kept
// raw; Strict nil is absent or null.
type FunctionTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// Statuses of a response and of its items.
const (
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusInProgress = "in_progress"
	StatusFailed     = "failed"
)

// ObjectResponse is a Response's "object".
const ObjectResponse = "response"

// Response is the Response object: the answer to a non-stream request,
// the snapshot in a stream's lifecycle events, and what GET returns. A
// key OpenAI always sends is never omitted: Output is [] when empty,
// Metadata {}; nil pointers are null.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"` // ObjectResponse
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          Reasoning          `json:"reasoning"`
	ServiceTier        *string            `json:"service_tier,omitempty"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               TextConfig         `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []FunctionTool     `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *Usage             `json:"usage"`
	User               *string            `json:"user"`
	SafetyIdentifier   *string            `json:"safety_identifier,omitempty"`
	PromptCacheKey     *string            `json:"prompt_cache_key,omitempty"`
	Metadata           map[string]string  `json:"metadata"`
}

// ResponseError is a failed response's error: not the HTTP error body.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete: max_output_tokens
// or content_filter.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// Usage is a response's token count. InputTokens includes cached tokens
// and OutputTokens reasoning tokens, as OpenAI counts them.
type Usage struct {
	InputTokens         int64               `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int64               `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int64               `json:"total_tokens"`
}

// InputTokensDetails splits the input count.
type InputTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// OutputTokensDetails splits the output count.
type OutputTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// usage is the Responses usage for a chat usage.
func usage(u *openaiwire.Usage) *Usage {
	if u == nil {
		return nil
	}
	out := &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		out.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// OutputItem is one item of a response's output, written in the shape of
// its type: a message {id, type, status, role, content} or a function
// call {id, type, status, call_id, name, arguments}.
type OutputItem struct {
	Item
	// Status is completed, incomplete or in_progress.
	Status string
}

// MarshalJSON writes the item in its type's shape.
func (o OutputItem) MarshalJSON() ([]byte, error) {
	if o.Type == TypeFunctionCall {
		return openaiwire.Append(nil, &functionCallJSON{ID: o.ID, Type: o.Type, Status: o.Status, CallID: o.CallID, Name: o.Name, Arguments: o.Arguments})
	}
	m := messageJSON{ID: o.ID, Type: TypeMessage, Status: o.Status, Role: "assistant", Content: make([]OutputContent, len(o.Parts))}
	for i, p := range o.Parts {
		m.Content[i] = OutputContent(p)
	}
	return openaiwire.Append(nil, &m)
}

type functionCallJSON struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type messageJSON struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Status  string          `json:"status"`
	Role    string          `json:"role"`
	Content []OutputContent `json:"content"`
}

// OutputContent is a content part of an output message: {type:
// "output_text", text, annotations: [], logprobs: []} or {type:
// "refusal", refusal}. Clients require the empty arrays (LangChain and
// the Vercel AI SDK fail without annotations).
type OutputContent Part

// MarshalJSON writes the part in its type's shape.
func (c OutputContent) MarshalJSON() ([]byte, error) {
	if c.Type == PartRefusal {
		return openaiwire.Append(nil, &refusalJSON{Type: c.Type, Refusal: c.Text})
	}
	return openaiwire.Append(nil, &outputTextJSON{Type: PartOutputText, Text: c.Text, Annotations: none, Logprobs: none})
}

type refusalJSON struct {
	Type    string `json:"type"`
	Refusal string `json:"refusal"`
}

type outputTextJSON struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
}

// none encodes as []; nothing writes to it.
var none = []struct{}{}

// Deleted is the answer to DELETE /v1/responses/{id}.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // ObjectResponse
	Deleted bool   `json:"deleted"`
}
