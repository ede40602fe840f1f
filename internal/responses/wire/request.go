package wire

import "encoding/json"

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
//
// A function of a namespace tool ({type:"namespace", name, tools:[…]},
// a group of functions called by namespace and name) has its Namespace;
// a custom tool ({type:"custom", name, description, format}: free-form
// input text, optionally held to a grammar) is Custom, with Grammar its
// grammar's definition ("" none). Neither is sent as such: they are how
// chat completions, which know only functions, get them.
type FunctionTool struct {
	Type        string          `json:"type"` // "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`

	Namespace string `json:"-"`
	Custom    bool   `json:"-"`
	Grammar   string `json:"-"`
}
