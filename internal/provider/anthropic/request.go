package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// chatRequest holds the OpenAI fields the translation reads; everything
// else in the body is ignored (PROVIDERS.md §3.4: logprobs, seed,
// penalties, response_format… have no Messages equivalent).
type chatRequest struct {
	Messages            []chatMessage   `json:"messages"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	MaxTokens           *int64          `json:"max_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stop                stopList        `json:"stop"`
	N                   *int64          `json:"n"`
	User                string          `json:"user"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
}

type chatMessage struct {
	Role       string     `json:"role"`
	Content    content    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls"`
	ToolCallID string     `json:"tool_call_id"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// content is a message's content: a string, an array of parts, or
// null/absent (an assistant turn with only tool calls).
type content struct {
	text    string
	parts   []contentPart
	isParts bool
	set     bool
}

func (c *content) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case 'n':
		*c = content{}
		return nil
	case '"':
		c.set = true
		return json.Unmarshal(b, &c.text)
	case '[':
		c.set, c.isParts = true, true
		return json.Unmarshal(b, &c.parts)
	}
	return errors.New("message content must be a string, an array of parts or null")
}

// stopList is OpenAI's stop: a string, an array of strings, or null.
type stopList []string

func (s *stopList) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case 'n':
		*s = nil
		return nil
	case '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopList{one}
		return nil
	case '[':
		return json.Unmarshal(b, (*[]string)(s))
	}
	return errors.New("stop must be a string or an array of strings")
}

// clientError is the error for a request the adapter cannot translate.
func clientError(param, format string, args ...any) *outcome.Error {
	return &outcome.Error{
		Kind:    outcome.ClientError,
		Status:  http.StatusBadRequest,
		Type:    "invalid_request_error",
		Param:   param,
		Message: "translating request for anthropic: " + fmt.Sprintf(format, args...),
	}
}

// decodeError turns an encoding/json failure into a message that names the
// field and not the Go types.
func decodeError(err error) *outcome.Error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return clientError(te.Field, "%s: wrong type (got %s)", te.Field, te.Value)
	case errors.As(err, &se):
		return clientError("", "invalid JSON at offset %d: %v", se.Offset, err)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return clientError("", "invalid request body: %s", msg)
}

// translate appends the Messages request for req to dst. Its error is an
// *outcome.Error of kind ClientError.
func translate(dst []byte, req *provider.Request, defaultMaxTokens int64) ([]byte, error) {
	var cr chatRequest
	if err := json.Unmarshal(req.Body, &cr); err != nil {
		return nil, decodeError(err)
	}
	if len(cr.Messages) == 0 {
		return nil, clientError("messages", "messages is required and must not be empty")
	}
	if cr.N != nil && *cr.N != 1 {
		return nil, clientError("n", "n must be 1 (anthropic returns one choice), got %d", *cr.N)
	}

	dst = append(dst, `{"model":`...)
	dst = provider.AppendJSONString(dst, req.Model)

	maxTokens := defaultMaxTokens
	switch {
	case cr.MaxCompletionTokens != nil:
		maxTokens = *cr.MaxCompletionTokens
	case cr.MaxTokens != nil:
		maxTokens = *cr.MaxTokens
	}
	dst = append(dst, `,"max_tokens":`...)
	dst = strconv.AppendInt(dst, maxTokens, 10)

	var err error
	if dst, err = appendSystem(dst, cr.Messages); err != nil {
		return nil, err
	}
	if dst, err = appendMessages(dst, cr.Messages); err != nil {
		return nil, err
	}

	if cr.Temperature != nil {
		// Anthropic's range is 0..1; its own OpenAI layer caps at 1.
		dst = append(dst, `,"temperature":`...)
		dst = strconv.AppendFloat(dst, min(*cr.Temperature, 1), 'g', -1, 64)
	}
	if cr.TopP != nil {
		dst = append(dst, `,"top_p":`...)
		dst = strconv.AppendFloat(dst, *cr.TopP, 'g', -1, 64)
	}
	if len(cr.Stop) > 0 {
		dst = append(dst, `,"stop_sequences":[`...)
		for i, s := range cr.Stop {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = provider.AppendJSONString(dst, s)
		}
		dst = append(dst, ']')
	}
	if cr.User != "" {
		dst = append(dst, `,"metadata":{"user_id":`...)
		dst = provider.AppendJSONString(dst, cr.User)
		dst = append(dst, '}')
	}
	if len(cr.Tools) > 0 {
		if dst, err = appendTools(dst, &cr); err != nil {
			return nil, err
		}
	}
	if req.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	return append(dst, '}'), nil
}

// appendSystem moves system and developer messages to the top-level system
// field, joined with "\n" as Anthropic's own OpenAI layer does.
func appendSystem(dst []byte, msgs []chatMessage) ([]byte, error) {
	var sys []byte
	n := 0
	for i := range msgs {
		m := &msgs[i]
		if (m.Role != "system" && m.Role != "developer") || !m.Content.set {
			continue
		}
		if !m.Content.isParts {
			if n > 0 {
				sys = append(sys, '\n')
			}
			sys = append(sys, m.Content.text...)
			n++
			continue
		}
		for j, p := range m.Content.parts {
			if p.Type != "text" {
				return nil, clientError("messages", "messages[%d].content[%d]: a %s message takes text parts only, got %q", i, j, m.Role, p.Type)
			}
			if n > 0 {
				sys = append(sys, '\n')
			}
			sys = append(sys, p.Text...)
			n++
		}
	}
	if n == 0 {
		return dst, nil
	}
	dst = append(dst, `,"system":`...)
	return provider.AppendJSONString(dst, string(sys)), nil
}

// appendMessages writes the conversation without its system messages.
// Consecutive tool results become one user turn of tool_result blocks.
func appendMessages(dst []byte, msgs []chatMessage) ([]byte, error) {
	dst = append(dst, `,"messages":[`...)
	written, inTools := 0, false
	var err error
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case "system", "developer":
			continue // moved to system; does not break a run of tool results
		case "tool":
			if inTools {
				dst = append(dst, ',')
			} else {
				if written > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"role":"user","content":[`...)
				inTools = true
				written++
			}
			if dst, err = appendToolResult(dst, i, m); err != nil {
				return nil, err
			}
			continue
		case "user", "assistant":
		case "":
			return nil, clientError("messages", "messages[%d]: role is required", i)
		default:
			return nil, clientError("messages", "messages[%d]: unsupported role %q", i, m.Role)
		}
		if inTools {
			dst = append(dst, "]}"...)
			inTools = false
		}
		if written > 0 {
			dst = append(dst, ',')
		}
		written++
		dst = append(dst, `{"role":`...)
		dst = provider.AppendJSONString(dst, m.Role)
		dst = append(dst, `,"content":`...)
		if m.Role == "user" {
			dst, err = appendUserContent(dst, i, m)
		} else {
			dst, err = appendAssistantContent(dst, i, m)
		}
		if err != nil {
			return nil, err
		}
		dst = append(dst, '}')
	}
	if inTools {
		dst = append(dst, "]}"...)
	}
	if written == 0 {
		return nil, clientError("messages", "messages holds only system messages; anthropic needs at least one user message")
	}
	return append(dst, ']'), nil
}

func appendUserContent(dst []byte, i int, m *chatMessage) ([]byte, error) {
	if !m.Content.isParts {
		return provider.AppendJSONString(dst, m.Content.text), nil
	}
	return appendParts(dst, i, m.Content.parts, true)
}

// appendParts writes content parts as an array of Messages blocks.
func appendParts(dst []byte, i int, parts []contentPart, images bool) ([]byte, error) {
	dst = append(dst, '[')
	for j := range parts {
		if j > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendPart(dst, i, j, &parts[j], images); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

func appendPart(dst []byte, i, j int, p *contentPart, images bool) ([]byte, error) {
	switch {
	case p.Type == "text":
		dst = append(dst, `{"type":"text","text":`...)
		dst = provider.AppendJSONString(dst, p.Text)
		return append(dst, '}'), nil
	case p.Type == "image_url" && images:
		if p.ImageURL == nil || p.ImageURL.URL == "" {
			return nil, clientError("messages", "messages[%d].content[%d]: image_url.url is required", i, j)
		}
		return appendImage(dst, i, j, p.ImageURL.URL)
	}
	return nil, clientError("messages", "messages[%d].content[%d]: unsupported content part type %q", i, j, p.Type)
}

// appendImage writes an image block: a data: URL becomes a base64 source,
// an http(s) URL a url source.
func appendImage(dst []byte, i, j int, u string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || media == "" {
			return nil, clientError("messages", "messages[%d].content[%d]: image data URL must be data:<media type>;base64,<data>", i, j)
		}
		dst = append(dst, `{"type":"image","source":{"type":"base64","media_type":`...)
		dst = provider.AppendJSONString(dst, media)
		dst = append(dst, `,"data":`...)
		dst = provider.AppendJSONString(dst, data)
		return append(dst, "}}"...), nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		dst = append(dst, `{"type":"image","source":{"type":"url","url":`...)
		dst = provider.AppendJSONString(dst, u)
		return append(dst, "}}"...), nil
	}
	return nil, clientError("messages", "messages[%d].content[%d]: image_url must be an https or data: URL", i, j)
}

// appendAssistantContent writes an assistant turn: plain text as a string,
// or blocks when there are parts or tool calls (text first, then tool_use).
func appendAssistantContent(dst []byte, i int, m *chatMessage) ([]byte, error) {
	if len(m.ToolCalls) == 0 {
		if !m.Content.isParts {
			return provider.AppendJSONString(dst, m.Content.text), nil
		}
		return appendParts(dst, i, m.Content.parts, false)
	}
	dst = append(dst, '[')
	n := 0
	if m.Content.isParts {
		for j := range m.Content.parts {
			if n > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendPart(dst, i, j, &m.Content.parts[j], false); err != nil {
				return nil, err
			}
			n++
		}
	} else if m.Content.text != "" {
		// Anthropic rejects empty text blocks.
		dst = append(dst, `{"type":"text","text":`...)
		dst = provider.AppendJSONString(dst, m.Content.text)
		dst = append(dst, '}')
		n++
	}
	for k := range m.ToolCalls {
		tc := &m.ToolCalls[k]
		if tc.Type != "" && tc.Type != "function" {
			return nil, clientError("messages", "messages[%d].tool_calls[%d]: unsupported type %q", i, k, tc.Type)
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = provider.AppendJSONString(dst, tc.ID)
		dst = append(dst, `,"name":`...)
		dst = provider.AppendJSONString(dst, tc.Function.Name)
		dst = append(dst, `,"input":`...)
		args := bytes.TrimSpace([]byte(tc.Function.Arguments))
		switch {
		case len(args) == 0:
			dst = append(dst, "{}"...)
		case args[0] != '{' || !json.Valid(args):
			return nil, clientError("messages", "messages[%d].tool_calls[%d].function.arguments: must be a JSON object", i, k)
		default:
			dst = append(dst, args...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), nil
}

func appendToolResult(dst []byte, i int, m *chatMessage) ([]byte, error) {
	dst = append(dst, `{"type":"tool_result","tool_use_id":`...)
	dst = provider.AppendJSONString(dst, m.ToolCallID)
	switch {
	case m.Content.isParts:
		dst = append(dst, `,"content":`...)
		var err error
		if dst, err = appendParts(dst, i, m.Content.parts, true); err != nil {
			return nil, err
		}
	case m.Content.set:
		dst = append(dst, `,"content":`...)
		dst = provider.AppendJSONString(dst, m.Content.text)
	}
	return append(dst, '}'), nil
}

// appendTools writes tools and tool_choice (with
// disable_parallel_tool_use for parallel_tool_calls:false).
func appendTools(dst []byte, cr *chatRequest) ([]byte, error) {
	dst = append(dst, `,"tools":[`...)
	for k := range cr.Tools {
		t := &cr.Tools[k]
		if t.Type != "function" {
			return nil, clientError("tools", "tools[%d]: unsupported type %q", k, t.Type)
		}
		if t.Function.Name == "" {
			return nil, clientError("tools", "tools[%d].function.name is required", k)
		}
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = provider.AppendJSONString(dst, t.Function.Name)
		if t.Function.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = provider.AppendJSONString(dst, t.Function.Description)
		}
		dst = append(dst, `,"input_schema":`...)
		schema := bytes.TrimSpace(t.Function.Parameters)
		switch {
		case len(schema) == 0 || string(schema) == "null":
			dst = append(dst, `{"type":"object","properties":{}}`...)
		case schema[0] != '{':
			return nil, clientError("tools", "tools[%d].function.parameters: must be a JSON object", k)
		default:
			dst = append(dst, schema...) // valid JSON: the decoder checked it
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')

	choice, name := "auto", ""
	tc := bytes.TrimSpace(cr.ToolChoice)
	switch {
	case len(tc) == 0 || string(tc) == "null":
	case tc[0] == '"':
		var s string
		if err := json.Unmarshal(tc, &s); err != nil {
			return nil, decodeError(err)
		}
		switch s {
		case "auto":
		case "required":
			choice = "any"
		case "none":
			choice = "none"
		default:
			return nil, clientError("tool_choice", "tool_choice: unsupported value %q", s)
		}
	case tc[0] == '{':
		var obj struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(tc, &obj); err != nil {
			return nil, clientError("tool_choice", "tool_choice: %v", strings.TrimPrefix(err.Error(), "json: "))
		}
		if obj.Type != "function" || obj.Function.Name == "" {
			return nil, clientError("tool_choice", `tool_choice: want {"type":"function","function":{"name":…}}`)
		}
		choice, name = "tool", obj.Function.Name
	default:
		return nil, clientError("tool_choice", "tool_choice must be a string or an object")
	}
	explicit := len(tc) > 0 && string(tc) != "null"
	noParallel := cr.ParallelToolCalls != nil && !*cr.ParallelToolCalls && choice != "none"
	if !explicit && !noParallel {
		return dst, nil // Anthropic's default is auto
	}
	dst = append(dst, `,"tool_choice":{"type":`...)
	dst = provider.AppendJSONString(dst, choice)
	if name != "" {
		dst = append(dst, `,"name":`...)
		dst = provider.AppendJSONString(dst, name)
	}
	if noParallel {
		dst = append(dst, `,"disable_parallel_tool_use":true`...)
	}
	return append(dst, '}'), nil
}
