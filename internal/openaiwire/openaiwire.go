package openaiwire

import (
	"encoding/json"
	"errors"
)

// ChatRequest is the body of POST /v1/chat/completions, as far as a
// translating adapter reads it. A nil pointer or raw value means the field
// was absent or null.
type ChatRequest struct {
	// Messages is the conversation; nil when absent or null.
	Messages []Message `json:"messages"`
	// Tools lists the functions the model may call.
	Tools []Tool `json:"tools"`
	// ToolChoice is "auto", "none", "required" or
	// {"type":"function","function":{"name":…}}, kept raw.
	ToolChoice json.RawMessage `json:"tool_choice"`
	// ParallelToolCalls false asks for at most one tool call per turn.
	ParallelToolCalls *bool `json:"parallel_tool_calls"`

	// Temperature and TopP are the sampling parameters, unchecked.
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	// MaxCompletionTokens supersedes the deprecated MaxTokens when both
	// are set; which one wins is the adapter's rule.
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
	MaxTokens           *int64 `json:"max_tokens"`
	// Stop is a string, an array of strings or null, kept raw.
	Stop json.RawMessage `json:"stop"`
	// N is the number of choices asked for, unchecked.
	N *int64 `json:"n"`
	// Seed, PresencePenalty and FrequencyPenalty are passed on by the
	// adapters whose upstream has them.
	Seed             *int64   `json:"seed"`
	PresencePenalty  *float64 `json:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty"`
	// ResponseFormat asks for text, a JSON object or JSON by a schema.
	ResponseFormat *ResponseFormat `json:"response_format"`
	// User identifies the end user; "" when absent.
	User string `json:"user"`
}

// Message is one turn of the conversation.
type Message struct {
	// Role is system, developer, user, assistant, tool or (legacy)
	// function; "" when absent.
	Role    string  `json:"role"`
	Content Content `json:"content"`
	// Name names the function of a legacy role "function" message.
	Name string `json:"name"`
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall `json:"tool_calls"`
	// ToolCallID is the call a role "tool" message answers.
	ToolCallID string `json:"tool_call_id"`
}

// ToolCall is a call an assistant turn made; Type "" means function.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a ToolCall calls. Arguments is the JSON
// text of its arguments as the model wrote it ("" means none).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is an entry of tools. Function is nil when absent or null (as for
// a tool of another type).
type Tool struct {
	Type     string    `json:"type"`
	Function *Function `json:"function"`
}

// Function declares a function the model may call. Parameters is its
// JSON Schema, kept raw (nil when absent).
type Function struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ResponseFormat is response_format. Type is "text", "json_object" or
// "json_schema"; JSONSchema is nil unless sent.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema"`
}

// JSONSchema is response_format.json_schema; Schema is kept raw.
type JSONSchema struct {
	Schema json.RawMessage `json:"schema"`
}

// Part is one element of an array content. Type says which of the other
// fields applies: "text" Text, "refusal" Refusal, "image_url" ImageURL,
// "input_audio" InputAudio, "file" File. Pointers are nil when absent.
type Part struct {
	Type       string      `json:"type"`
	Text       string      `json:"text"`
	Refusal    string      `json:"refusal"`
	ImageURL   *ImageURL   `json:"image_url"`
	InputAudio *InputAudio `json:"input_audio"`
	File       *File       `json:"file"`
}

// ImageURL is an image by URL: https or a data: URL.
type ImageURL struct {
	URL string `json:"url"`
}

// InputAudio is base64 audio data and its format ("wav", "mp3").
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// File is a file sent inline as a data: URL (FileData) or by an OpenAI
// file id (FileID). No adapter can fetch an OpenAI file; FileID is
// declared so that a non-string file_id stays a decoding error.
type File struct {
	FileData string `json:"file_data"`
	FileID   string `json:"file_id"`
}

// errContentType is Content.Err for a content that is neither a string,
// an array nor null.
var errContentType = errors.New("message content must be a string, an array of parts or null")

// Content is a message's content: a string, an array of parts, or null or
// absent (an assistant turn with only tool calls). The zero value is an
// absent content.
//
// Exactly one of these holds after decoding:
//   - Err != nil: the content is another JSON type (Err says so) or an
//     array whose parts do not decode (Err is the *json.UnmarshalTypeError,
//     its Field relative to the part). Text, Parts and the flags are then
//     unspecified.
//   - !Set: null or absent.
//   - IsParts: an array; Parts holds its elements (none for []).
//   - otherwise: a string, in Text (possibly "").
type Content struct {
	Text    string
	Parts   []Part
	IsParts bool
	Set     bool
	Err     error
}

// UnmarshalJSON decodes a string, an array of parts or null. It never
// returns an error: a content it cannot decode is recorded in c.Err, so
// that decoding goes on and each adapter decides when to refuse it.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case 'n':
	case '"':
		c.Set = true
		c.Err = json.Unmarshal(b, &c.Text)
	case '[':
		c.Set, c.IsParts = true, true
		c.Err = json.Unmarshal(b, &c.Parts)
	default:
		c.Err = errContentType
	}
	return nil
}
