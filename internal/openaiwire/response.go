package openaiwire

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
)

// Values of the "object" field of each answer type.
const (
	ObjectChatCompletion      = "chat.completion"
	ObjectChatCompletionChunk = "chat.completion.chunk"
	ObjectTextCompletion      = "text_completion" // legacy completions, whole and streamed
	ObjectList                = "list"            // embeddings and models lists
	ObjectEmbedding           = "embedding"
	ObjectModel               = "model"
)

// Finish reasons a choice can end with.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
)

// finishReasons backs Finish's pointers; nothing writes to it.
var finishReasons = [...]string{FinishStop, FinishLength, FinishToolCalls, FinishContentFilter}

// Finish returns the *string for a chunk's finish_reason: nil (null) for
// "", a pointer to a shared constant for the four reasons above, so that a
// chunk per event costs no allocation for it. The pointee must not be
// written to.
func Finish(reason string) *string {
	if reason == "" {
		return nil
	}
	for i := range finishReasons {
		if finishReasons[i] == reason {
			return &finishReasons[i]
		}
	}
	other := reason // only this path allocates, not the parameter
	return &other
}

// ChatCompletion is the answer to a non-stream chat completions request.
// Usage nil leaves the key out.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // ObjectChatCompletion
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
}

// ChatChoice is one choice of a ChatCompletion. Logprobs is kept raw: nil
// leaves the key out, json.RawMessage("null") writes the null OpenAI sends
// when log probabilities were not asked for.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the assistant turn of a ChatChoice. Content nil is
// null (an answer of tool calls only); ToolCalls nil leaves the key out.
// A tool call's Arguments is the JSON text of its arguments.
type ResponseMessage struct {
	Role      string     `json:"role"` // "assistant"
	Content   *string    `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ChatCompletionChunk is one event of a streamed chat completion. Choices
// is empty (never nil, which would be null) in the last chunk that carries
// Usage when the client asked for stream_options.include_usage; Usage nil
// leaves the key out of every other chunk.
type ChatCompletionChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // ObjectChatCompletionChunk
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage,omitempty"`
}

// ChunkChoice is one choice's part of a chunk. FinishReason is nil (null)
// until the choice ends (see Finish); Logprobs is as in ChatChoice.
type ChunkChoice struct {
	Index        int             `json:"index"`
	Delta        Delta           `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	FinishReason *string         `json:"finish_reason"`
}

// Delta is what a chunk adds to a choice's message; every empty field is
// left out, so the zero value is {}. Role is sent on a choice's first
// delta only. Content nil is absent; a pointer to "" sends "" (the first
// delta's empty content).
type Delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a piece of a streamed tool call. Index numbers the
// calls of a choice from 0. The first piece of a call carries ID, Type
// ("function") and Function.Name; later ones only the next fragment of
// Function.Arguments.
type ToolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function FunctionDelta `json:"function"`
}

// FunctionDelta is the function part of a ToolCallDelta. Arguments is
// always sent, "" on a first piece that carries none yet.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Usage is the token count of an answer. A nil details pointer leaves its
// key out.
type Usage struct {
	PromptTokens            int64                    `json:"prompt_tokens"`
	CompletionTokens        int64                    `json:"completion_tokens"`
	TotalTokens             int64                    `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails splits the prompt count: CachedTokens were read
// from the provider's prompt cache.
type PromptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// CompletionTokensDetails splits the completion count: ReasoningTokens
// were spent thinking and not shown.
type CompletionTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// Completion is a legacy completions answer, and with Usage nil and
// FinishReason nil one event of a streamed one (OpenAI streams the same
// object).
type Completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"` // ObjectTextCompletion
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
}

// CompletionChoice is one choice of a Completion. FinishReason nil is
// null (a stream event before the end); Logprobs is as in ChatChoice.
type CompletionChoice struct {
	Text         string          `json:"text"`
	Index        int             `json:"index"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	FinishReason *string         `json:"finish_reason"`
}

// EmbeddingList is the answer to an embeddings request: one Embedding per
// input, in input order.
type EmbeddingList struct {
	Object string         `json:"object"` // ObjectList
	Data   []Embedding    `json:"data"`
	Model  string         `json:"model"`
	Usage  EmbeddingUsage `json:"usage"`
}

// Embedding is the vector of the input at Index.
type Embedding struct {
	Object    string `json:"object"` // ObjectEmbedding
	Index     int    `json:"index"`
	Embedding Vector `json:"embedding"`
}

// EmbeddingUsage counts an embeddings request: there is no completion, so
// TotalTokens equals PromptTokens.
type EmbeddingUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// Vector is an embedding. It marshals as an array of numbers, or, when
// Base64 is set (the client's encoding_format "base64"), as one string:
// the values as little-endian float32s, base64-encoded. Values nil is [].
type Vector struct {
	Values []float64
	Base64 bool
}

// MarshalJSON writes v as an array or as a base64 string.
func (v Vector) MarshalJSON() ([]byte, error) {
	if v.Base64 {
		raw := make([]byte, 0, 4*len(v.Values))
		for _, f := range v.Values {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(f)))
		}
		b := make([]byte, 0, base64.StdEncoding.EncodedLen(len(raw))+2)
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, raw)
		return append(b, '"'), nil
	}
	if v.Values == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(v.Values)
}

// errVectorBase64 is the error for a base64 vector whose length is not a
// whole number of float32s.
var errVectorBase64 = errors.New("openaiwire: base64 embedding is not a whole number of float32s")

// UnmarshalJSON reads an array of numbers or a base64 string (Base64 is
// then set).
func (v *Vector) UnmarshalJSON(b []byte) error {
	*v = Vector{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '"' {
		return json.Unmarshal(b, &v.Values)
	}
	var raw []byte // encoding/json decodes a string into []byte as base64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw)%4 != 0 {
		return errVectorBase64
	}
	v.Base64 = true
	v.Values = make([]float64, len(raw)/4)
	for i := range v.Values {
		v.Values[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
	}
	return nil
}

// ModelList is the answer to GET /v1/models.
type ModelList struct {
	Object string  `json:"object"` // ObjectList
	Data   []Model `json:"data"`
}

// Model is one entry of a ModelList and the answer to GET /v1/models/{id}.
// Created is in Unix seconds.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // ObjectModel
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ErrorBody is the body of an error answer, and the data of an error event
// in a stream: {"error":{"message","type","param","code"}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error says what went wrong. Param names the request field at fault and
// Code is a machine-readable reason; either is written as null when "",
// as OpenAI does. Type is a class such as "invalid_request_error".
type Error struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param"`
	Code    string `json:"code"`
}

// MarshalJSON writes e with "" Param and Code as null.
func (e Error) MarshalJSON() ([]byte, error) {
	return Append(nil, &struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}{e.Message, e.Type, nullable(&e.Param), nullable(&e.Code)})
}

// nullable is s, or nil when *s is "".
func nullable(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

// AppendError appends the ErrorBody for e to dst.
func AppendError(dst []byte, e Error) []byte {
	// Strings always encode: Append cannot fail here.
	b, _ := Append(dst, &ErrorBody{Error: e})
	return b
}
