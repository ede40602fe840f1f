package wire

import (
	"encoding/json"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

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
	Tools              []json.RawMessage  `json:"tools"` // as the client sent them
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

// OutputItem is one item of a response's output, written in the shape of
// its type: a message {id, type, status, role, content}, a function call
// {id, type, status, call_id, name, namespace?, arguments} or a custom
// tool call {id, type, status, call_id, name, input}.
type OutputItem struct {
	Item
	// Status is completed, incomplete or in_progress.
	Status string
}

// MarshalJSON writes the item in its type's shape (Raw, when set).
func (o OutputItem) MarshalJSON() ([]byte, error) {
	if o.Raw != nil {
		return o.Raw, nil
	}
	switch o.Type {
	case TypeFunctionCall:
		return openaiwire.Append(nil, &functionCallJSON{ID: o.ID, Type: o.Type, Status: o.Status, CallID: o.CallID, Name: o.Name,
			Namespace: o.Namespace, Arguments: o.Arguments})
	case TypeCustomToolCall:
		return openaiwire.Append(nil, &customCallJSON{ID: o.ID, Type: o.Type, Status: o.Status, CallID: o.CallID, Name: o.Name, Input: o.Arguments})
	}
	m := messageJSON{ID: o.ID, Type: TypeMessage, Status: o.Status, Role: "assistant", Content: make([]OutputContent, len(o.Parts))}
	for i, p := range o.Parts {
		m.Content[i] = OutputContent(p)
	}
	return openaiwire.Append(nil, &m)
}

// functionCallJSON is a function call; a namespaced one says its
// namespace beside its name, as OpenAI returns it.
type functionCallJSON struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
}

// customCallJSON is a custom tool's call: its input is text.
type customCallJSON struct {
	ID     string `json:"id,omitempty"`
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
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
	return openaiwire.Append(nil, &outputTextJSON{Type: PartOutputText, Text: c.Text, Annotations: Empty, Logprobs: Empty})
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

// Empty encodes as []: the value of the keys OpenAI always sends as
// empty arrays (annotations, logprobs). Nothing writes to it.
var Empty = []struct{}{}

// Deleted is the answer to DELETE /v1/responses/{id}.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // ObjectResponse
	Deleted bool   `json:"deleted"`
}
