package chat

import (
	"encoding/json"
	"strings"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/turn"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// chatRequest is the chat completions request a Responses request becomes.
// Model is first: the proxy's adapters swap the model name in place, by
// its offsets (provider.Request.ModelStart).
type chatRequest struct {
	Model               string              `json:"model"`
	Messages            []chatMessage       `json:"messages"`
	Tools               []chatTool          `json:"tools,omitempty"`
	ToolChoice          *chatToolChoice     `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool               `json:"parallel_tool_calls,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
	TopP                *float64            `json:"top_p,omitempty"`
	MaxCompletionTokens *int64              `json:"max_completion_tokens,omitempty"`
	ResponseFormat      *chatResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort     string              `json:"reasoning_effort,omitempty"`
	Verbosity           string              `json:"verbosity,omitempty"`
	User                string              `json:"user,omitempty"`
	SafetyIdentifier    string              `json:"safety_identifier,omitempty"`
	PromptCacheKey      string              `json:"prompt_cache_key,omitempty"`
	ServiceTier         string              `json:"service_tier,omitempty"`
	Stream              bool                `json:"stream,omitempty"`
	StreamOptions       *chatStreamOptions  `json:"stream_options,omitempty"`
}

type chatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one chat message. ToolCalls are an assistant turn's;
// ToolCallID is what a role "tool" message answers.
type chatMessage struct {
	Role       string                `json:"role"`
	Content    chatContent           `json:"content"`
	ToolCalls  []openaiwire.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string                `json:"tool_call_id,omitempty"`
}

// chatContent is a message's content: null, a string, or parts.
type chatContent struct {
	null  bool
	text  string
	parts []chatPart
}

// MarshalJSON writes null, the parts, or the string.
func (c chatContent) MarshalJSON() ([]byte, error) {
	switch {
	case c.null:
		return []byte("null"), nil
	case c.parts != nil:
		return openaiwire.Append(nil, &c.parts)
	}
	return openaiwire.Append(nil, &c.text)
}

// chatPart is a content part: {type:"text",text}, {type:"image_url",
// image_url:{url,detail}} or {type:"file",file:{file_data,filename}}.
type chatPart struct {
	Type     string        `json:"type"`
	Text     *string       `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
	File     *chatFile     `json:"file,omitempty"`
}

type chatImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type chatFile struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename,omitempty"`
}

// chatTool is a function tool, nested as chat has it.
type chatTool struct {
	Type     string       `json:"type"` // "function"
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// chatToolChoice is "none", "auto", "required", or a function by name.
type chatToolChoice struct {
	mode, name string
}

// MarshalJSON writes the mode string or {type:"function",function:{name}}.
func (c *chatToolChoice) MarshalJSON() ([]byte, error) {
	if c.name == "" {
		return openaiwire.Append(nil, &c.mode)
	}
	v := struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}{Type: "function"}
	v.Function.Name = c.name
	return openaiwire.Append(nil, &v)
}

// chatResponseFormat is response_format; the Responses API's flat
// text.format fields go under json_schema.
type chatResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *chatJSONSchema `json:"json_schema,omitempty"`
}

type chatJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Translation is a turn sent as a chat completions request: the body to
// send, and what turns the provider's chat answer or chat stream back
// into the Responses API's.
type Translation struct {
	t *turn.Turn
	// Body is the chat completions request body, its "model" the client's
	// model name, between ModelStart and ModelEnd (the JSON string, quotes
	// included) for the adapters to swap.
	Body                 []byte
	ModelStart, ModelEnd int
	// names are the turn's tools' names on chat.
	names *toolNames
}

// Translate builds the chat completions request for t over its whole
// conversation. A conversation chat cannot take (a function call without
// its output…) is OpenAI's 400.
func Translate(t *turn.Turn) (*Translation, *responses.Error) {
	d := t.Decoded()
	r := &d.Request
	names := newToolNames(d.Functions)
	msgs, e := chatMessages(r.Instructions, t.Conversation(), names)
	if e != nil {
		return nil, e
	}
	c := chatRequest{
		Model: r.Model, Messages: msgs, ParallelToolCalls: r.ParallelToolCalls,
		Temperature: r.Temperature, TopP: r.TopP, MaxCompletionTokens: r.MaxOutputTokens,
		User: deref(r.User), SafetyIdentifier: deref(r.SafetyIdentifier), PromptCacheKey: deref(r.PromptCacheKey),
		ServiceTier: deref(r.ServiceTier),
	}
	// Built-in tools are not among d.Functions: a translated request
	// leaves them out, as chat has no such thing.
	for i := range d.Functions {
		f := &d.Functions[i]
		if d.Choice.Allowed != nil && !d.Choice.Allowed[f.Name] {
			continue // allowed_tools: chat has no such filter everywhere, so the list is cut here
		}
		c.Tools = append(c.Tools, names.chatTool(f))
	}
	if d.Choice.Mode != "" || d.Choice.Name != "" {
		c.ToolChoice = &chatToolChoice{mode: d.Choice.Mode}
		if d.Choice.Name != "" {
			c.ToolChoice.name = names.name(d.Choice.Namespace, d.Choice.Name, false)
		}
	}
	if f := d.Format; f != nil {
		c.ResponseFormat = &chatResponseFormat{Type: f.Type}
		if f.Type == "json_schema" {
			c.ResponseFormat.JSONSchema = &chatJSONSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
		}
	}
	if r.Text != nil {
		c.Verbosity = r.Text.Verbosity
	}
	if r.Reasoning != nil {
		c.ReasoningEffort = deref(r.Reasoning.Effort)
	}
	if d.Stream() {
		// Chat upstreams report a stream's usage only when asked.
		c.Stream, c.StreamOptions = true, &chatStreamOptions{IncludeUsage: true}
	}
	b, err := openaiwire.Append(make([]byte, 0, 512), &c)
	if err != nil {
		// Raw values came from a body that was valid JSON.
		return nil, responses.BadRequest("", "the request could not be translated: %v", err)
	}
	// The model is the first key (chatRequest): {"model":"…",
	m, _ := openaiwire.Append(nil, &r.Model)
	return &Translation{t: t, Body: b, ModelStart: len(`{"model":`), ModelEnd: len(`{"model":`) + len(m), names: names}, nil
}

// chatMessages is the conversation as chat messages: instructions first
// (as a system message, which every adapter and OpenAI-compatible server
// takes), then the items. Consecutive function calls join the assistant
// turn before them; each function call output is moved right after the
// assistant turn that made the call, since chat (and Anthropic) need the
// results there while the Responses API lets other items come between. A
// call without an output, or an output without a call, is a 400, as
// OpenAI's own. A namespace's function call and a custom tool's call go
// under their chat names (names), a custom tool's output as a function's;
// reasoning items and the calls of built-in tools are left out: chat has
// no such thing.
func chatMessages(instructions *string, items []wire.Item, names *toolNames) ([]chatMessage, *responses.Error) {
	msgs := make([]chatMessage, 0, len(items)+1)
	if instructions != nil && *instructions != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: chatContent{text: *instructions}})
	}
	for i := range items {
		it := &items[i]
		switch it.Type {
		case wire.TypeMessage:
			if it.Role == "assistant" {
				msgs = append(msgs, chatMessage{Role: "assistant", Content: chatContent{text: assistantText(it)}})
			} else {
				msgs = append(msgs, chatMessage{Role: it.Role, Content: partsContent(it)})
			}
		case wire.TypeFunctionCall, wire.TypeCustomToolCall:
			tc := openaiwire.ToolCall{ID: it.CallID, Type: "function", Function: openaiwire.FunctionCall{
				Name: names.name(it.Namespace, it.Name, it.Type == wire.TypeCustomToolCall), Arguments: callArguments(it)}}
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
				last := &msgs[n-1]
				if last.Content.text == "" {
					last.Content.null = true
				}
				last.ToolCalls = append(last.ToolCalls, tc)
			} else {
				msgs = append(msgs, chatMessage{Role: "assistant", Content: chatContent{null: true}, ToolCalls: []openaiwire.ToolCall{tc}})
			}
		case wire.TypeFunctionCallOutput, wire.TypeCustomToolCallOutput:
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: partsContent(it)})
		}
	}
	return pairToolResults(msgs)
}

// pairToolResults moves each tool result right after the assistant turn
// that made its call, in the order of the calls.
func pairToolResults(msgs []chatMessage) ([]chatMessage, *responses.Error) {
	results := map[string][]int{} // call id → indices of its tool results, ascending
	for i := range msgs {
		if msgs[i].Role == "tool" {
			results[msgs[i].ToolCallID] = append(results[msgs[i].ToolCallID], i)
		}
	}
	if len(results) == 0 && !hasCalls(msgs) {
		return msgs, nil
	}
	used := make([]bool, len(msgs))
	out := make([]chatMessage, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		if m.Role == "tool" {
			if !used[i] {
				return nil, responses.BadRequest("input", "No tool call found for function call output with call_id %s.", responses.Cut(m.ToolCallID))
			}
			continue
		}
		out = append(out, *m)
		for _, tc := range m.ToolCalls {
			q := results[tc.ID]
			for len(q) > 0 && (q[0] < i || used[q[0]]) {
				q = q[1:]
			}
			if len(q) == 0 {
				return nil, responses.BadRequest("input", "No tool output found for function call %s.", responses.Cut(tc.ID))
			}
			used[q[0]] = true
			out = append(out, msgs[q[0]])
			results[tc.ID] = q[1:]
		}
	}
	return out, nil
}

func hasCalls(msgs []chatMessage) bool {
	for i := range msgs {
		if len(msgs[i].ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// assistantText is an assistant message's text: its output text and
// refusals, in order.
func assistantText(it *wire.Item) string {
	if it.Parts == nil {
		return it.Text
	}
	var b strings.Builder
	for _, p := range it.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// partsContent is a user, system or developer message's content, or a
// function output's: a string as it was, else chat parts.
func partsContent(it *wire.Item) chatContent {
	if it.Parts == nil {
		return chatContent{text: it.Text}
	}
	if textOnly(it.Parts) && len(it.Parts) == 1 {
		return chatContent{text: it.Parts[0].Text}
	}
	parts := make([]chatPart, 0, len(it.Parts))
	for i := range it.Parts {
		p := &it.Parts[i]
		switch p.Type {
		case wire.PartInputImage:
			detail := p.Detail
			if detail != "low" && detail != "high" {
				detail = "" // auto is chat's default; "original" is the Responses API's own
			}
			parts = append(parts, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: p.ImageURL, Detail: detail}})
		case wire.PartInputFile:
			parts = append(parts, chatPart{Type: "file", File: &chatFile{FileData: p.FileData, Filename: p.Filename}})
		default:
			parts = append(parts, chatPart{Type: "text", Text: &p.Text})
		}
	}
	return chatContent{parts: parts}
}

func textOnly(parts []wire.Part) bool {
	for _, p := range parts {
		if p.Type != wire.PartInputText && p.Type != wire.PartOutputText {
			return false
		}
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
