package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// errStopType is the error for a stop that is neither a string, an array
// of strings nor null.
var errStopType = errors.New("stop must be a string or an array of strings")

// stopSequences reads OpenAI's stop: a string, an array of strings, or
// null or absent (nil).
func stopSequences(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	switch raw[0] {
	case 'n':
		return nil, nil
	case '"':
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, err
		}
		return []string{one}, nil
	case '[':
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, inField("stop", err)
		}
		return list, nil
	}
	return nil, errStopType
}

// inField names field (a dotted JSON path) as the place of a type error
// that was decoded on its own, as encoding/json names it when it decodes
// the whole body.
func inField(field string, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	c := *te
	if c.Field == "" {
		c.Field = field
	} else {
		c.Field = field + "." + c.Field
	}
	return &c
}

// decodeRequest decodes body into cr and reads its stop. The translation
// reads messages, max_completion_tokens/max_tokens, temperature, top_p,
// stop, n, user, tools, tool_choice and parallel_tool_calls; the rest has
// no Messages equivalent and is not translated (PROVIDERS.md §3.4:
// logprobs, seed, penalties, response_format…).
//
// The error is the one a decoder strict about content and stop stops at:
// a content (openaiwire.Content.Err) or stop of the wrong type beats any
// other type error, and of the two the one earlier in the body, contents
// in message order.
func decodeRequest(body []byte, cr *openaiwire.ChatRequest) ([]string, error) {
	err := json.Unmarshal(body, cr)
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, err // found before anything is decoded
		}
	}
	var cerr error
	for i := range cr.Messages {
		if e := cr.Messages[i].Content.Err; e != nil {
			cerr = inField("messages.content", e)
			break
		}
	}
	stop, serr := stopSequences(cr.Stop)
	switch {
	case cerr != nil && serr != nil:
		if gjson.GetBytes(body, "stop").Index < gjson.GetBytes(body, "messages").Index {
			return nil, serr
		}
		return nil, cerr
	case cerr != nil:
		return nil, cerr
	case serr != nil:
		return nil, serr
	}
	return stop, err
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
	var cr openaiwire.ChatRequest
	stop, err := decodeRequest(req.Body, &cr)
	if err != nil {
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
	if len(stop) > 0 {
		dst = append(dst, `,"stop_sequences":[`...)
		for i, s := range stop {
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
func appendSystem(dst []byte, msgs []openaiwire.Message) ([]byte, error) {
	var sys []byte
	n := 0
	for i := range msgs {
		m := &msgs[i]
		if (m.Role != "system" && m.Role != "developer") || !m.Content.Set {
			continue
		}
		if !m.Content.IsParts {
			if n > 0 {
				sys = append(sys, '\n')
			}
			sys = append(sys, m.Content.Text...)
			n++
			continue
		}
		for j, p := range m.Content.Parts {
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
func appendMessages(dst []byte, msgs []openaiwire.Message) ([]byte, error) {
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

func appendUserContent(dst []byte, i int, m *openaiwire.Message) ([]byte, error) {
	if !m.Content.IsParts {
		return provider.AppendJSONString(dst, m.Content.Text), nil
	}
	return appendParts(dst, i, m.Content.Parts, true)
}

// appendParts writes content parts as an array of Messages blocks.
func appendParts(dst []byte, i int, parts []openaiwire.Part, images bool) ([]byte, error) {
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

func appendPart(dst []byte, i, j int, p *openaiwire.Part, images bool) ([]byte, error) {
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
func appendAssistantContent(dst []byte, i int, m *openaiwire.Message) ([]byte, error) {
	if len(m.ToolCalls) == 0 {
		if !m.Content.IsParts {
			return provider.AppendJSONString(dst, m.Content.Text), nil
		}
		return appendParts(dst, i, m.Content.Parts, false)
	}
	dst = append(dst, '[')
	n := 0
	if m.Content.IsParts {
		for j := range m.Content.Parts {
			if n > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendPart(dst, i, j, &m.Content.Parts[j], false); err != nil {
				return nil, err
			}
			n++
		}
	} else if m.Content.Text != "" {
		// Anthropic rejects empty text blocks.
		dst = append(dst, `{"type":"text","text":`...)
		dst = provider.AppendJSONString(dst, m.Content.Text)
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

func appendToolResult(dst []byte, i int, m *openaiwire.Message) ([]byte, error) {
	dst = append(dst, `{"type":"tool_result","tool_use_id":`...)
	dst = provider.AppendJSONString(dst, m.ToolCallID)
	switch {
	case m.Content.IsParts:
		dst = append(dst, `,"content":`...)
		var err error
		if dst, err = appendParts(dst, i, m.Content.Parts, true); err != nil {
			return nil, err
		}
	case m.Content.Set:
		dst = append(dst, `,"content":`...)
		dst = provider.AppendJSONString(dst, m.Content.Text)
	}
	return append(dst, '}'), nil
}

// appendTools writes tools and tool_choice (with
// disable_parallel_tool_use for parallel_tool_calls:false).
func appendTools(dst []byte, cr *openaiwire.ChatRequest) ([]byte, error) {
	dst = append(dst, `,"tools":[`...)
	for k := range cr.Tools {
		t := &cr.Tools[k]
		if t.Type != "function" {
			return nil, clientError("tools", "tools[%d]: unsupported type %q", k, t.Type)
		}
		var fn openaiwire.Function
		if t.Function != nil {
			fn = *t.Function
		}
		if fn.Name == "" {
			return nil, clientError("tools", "tools[%d].function.name is required", k)
		}
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = provider.AppendJSONString(dst, fn.Name)
		if fn.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = provider.AppendJSONString(dst, fn.Description)
		}
		dst = append(dst, `,"input_schema":`...)
		schema := bytes.TrimSpace(fn.Parameters)
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
