package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
// no Messages equivalent and is not translated (logprobs, seed, penalties,
// response_format…).
//
// The error is the one a decoder strict about content and stop stops at:
// a content (openaiwire.Content.Err) or stop of the wrong type beats any
// other type error, and of the two the one earlier in the body, contents
// in message order.
//
// A stream's decode runs on a goroutine of its own (openaiwire.Decode):
// the request's goroutine keeps the stack it grew to for the stream's
// life. A whole answer's goroutine is done with it soon, and decodes in
// place.
func decodeRequest(body []byte, cr *openaiwire.ChatRequest, stream bool) ([]string, error) {
	var err error
	if stream {
		err = openaiwire.Decode(body, cr)
	} else {
		err = json.Unmarshal(body, cr)
	}
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

// messagesRequest is the body of POST /v1/messages, as far as an OpenAI
// chat request translates into it. Nil pointers and empty slices leave
// their key out.
type messagesRequest struct {
	Model         string      `json:"model"`
	MaxTokens     int64       `json:"max_tokens"`
	System        *string     `json:"system,omitempty"`
	Messages      []message   `json:"messages"`
	Temperature   *float64    `json:"temperature,omitempty"`
	TopP          *float64    `json:"top_p,omitempty"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Metadata      *metadata   `json:"metadata,omitempty"`
	Tools         []tool      `json:"tools,omitempty"`
	ToolChoice    *toolChoice `json:"tool_choice,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
}

// message is a user or assistant turn. Content is a string or a []any of
// the block types below.
type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type textBlock struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

// imageBlock is an image; Source is a base64Source or a urlSource.
type imageBlock struct {
	Type   string `json:"type"` // "image"
	Source any    `json:"source"`
}

type base64Source struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type urlSource struct {
	Type string `json:"type"` // "url"
	URL  string `json:"url"`
}

// toolUseBlock is a call an assistant turn made; Input is a JSON object.
type toolUseBlock struct {
	Type  string          `json:"type"` // "tool_use"
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// toolResultBlock answers a tool_use. Content is a string, a []any of
// blocks, or nil (no content; the key is left out).
type toolResultBlock struct {
	Type      string `json:"type"` // "tool_result"
	ToolUseID string `json:"tool_use_id"`
	Content   any    `json:"content,omitempty"`
}

type metadata struct {
	UserID string `json:"user_id"`
}

// tool declares a function; InputSchema is its JSON Schema object.
type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// toolChoice is auto, any, none, or tool with Name.
type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// emptySchema is the input_schema of a function declared without
// parameters: Anthropic requires one.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// translate appends the Messages request for req to dst. Its error is an
// *outcome.Error of kind ClientError.
func translate(dst []byte, req *provider.Request, defaultMaxTokens int64) ([]byte, error) {
	var cr openaiwire.ChatRequest
	stop, err := decodeRequest(req.Body, &cr, req.Stream)
	if err != nil {
		return nil, decodeError(err)
	}
	if len(cr.Messages) == 0 {
		return nil, clientError("messages", "messages is required and must not be empty")
	}
	if cr.N != nil && *cr.N != 1 {
		return nil, clientError("n", "n must be 1 (anthropic returns one choice), got %d", *cr.N)
	}

	body := messagesRequest{Model: req.Model, MaxTokens: defaultMaxTokens, StopSequences: stop, Stream: req.Stream}
	switch {
	case cr.MaxCompletionTokens != nil:
		body.MaxTokens = *cr.MaxCompletionTokens
	case cr.MaxTokens != nil:
		body.MaxTokens = *cr.MaxTokens
	}
	// The target's cap lowers the client's limit and the default alike
	// (docs/ARCHITECTURE.md, "Output limits").
	body.MaxTokens = provider.CapOutput(body.MaxTokens, req.MaxOutputTokens)
	if body.System, err = system(cr.Messages); err != nil {
		return nil, err
	}
	if body.Messages, err = messages(cr.Messages); err != nil {
		return nil, err
	}
	if cr.Temperature != nil {
		// Anthropic's range is 0..1; its own OpenAI layer caps at 1.
		t := min(*cr.Temperature, 1)
		body.Temperature = &t
	}
	body.TopP = cr.TopP
	if cr.User != "" {
		body.Metadata = &metadata{UserID: cr.User}
	}
	if len(cr.Tools) > 0 {
		if body.Tools, body.ToolChoice, err = tools(&cr); err != nil {
			return nil, err
		}
	}
	buf := bytes.NewBuffer(dst)
	if err := json.NewEncoder(buf).Encode(&body); err != nil {
		// The raw values were validated when decoded: this does not happen.
		return nil, clientError("", "encoding anthropic request: %v", err)
	}
	out := buf.Bytes()
	return out[:len(out)-1], nil // Encode ends with '\n'
}

// system is the top-level system field: system and developer messages
// joined with "\n" as Anthropic's own OpenAI layer does; nil when there
// are none.
func system(msgs []openaiwire.Message) (*string, error) {
	var sys strings.Builder
	n := 0
	for i := range msgs {
		m := &msgs[i]
		if (m.Role != "system" && m.Role != "developer") || !m.Content.Set {
			continue
		}
		if !m.Content.IsParts {
			if n > 0 {
				sys.WriteByte('\n')
			}
			sys.WriteString(m.Content.Text)
			n++
			continue
		}
		for j, p := range m.Content.Parts {
			if p.Type != "text" {
				return nil, clientError("messages", "messages[%d].content[%d]: a %s message takes text parts only, got %q", i, j, m.Role, p.Type)
			}
			if n > 0 {
				sys.WriteByte('\n')
			}
			sys.WriteString(p.Text)
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	s := sys.String()
	return &s, nil
}

// messages is the conversation without its system messages. Consecutive
// tool results become one user turn of tool_result blocks.
func messages(msgs []openaiwire.Message) ([]message, error) {
	out := make([]message, 0, len(msgs))
	var results []any // the tool_result blocks of the open tool turn
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case "system", "developer":
			continue // moved to system; does not break a run of tool results
		case "tool":
			b, err := toolResult(i, m)
			if err != nil {
				return nil, err
			}
			if results == nil {
				out = append(out, message{Role: "user"})
			}
			results = append(results, b)
			out[len(out)-1].Content = results
			continue
		case "user", "assistant":
		case "":
			return nil, clientError("messages", "messages[%d]: role is required", i)
		default:
			return nil, clientError("messages", "messages[%d]: unsupported role %q", i, m.Role)
		}
		results = nil
		var c any
		var err error
		if m.Role == "user" {
			c, err = userContent(i, m)
		} else {
			c, err = assistantContent(i, m)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, message{Role: m.Role, Content: c})
	}
	if len(out) == 0 {
		return nil, clientError("messages", "messages holds only system messages; anthropic needs at least one user message")
	}
	return out, nil
}

func userContent(i int, m *openaiwire.Message) (any, error) {
	if !m.Content.IsParts {
		return m.Content.Text, nil
	}
	return blocks(i, m.Content.Parts, true)
}

// blocks is content parts as Messages blocks.
func blocks(i int, parts []openaiwire.Part, images bool) ([]any, error) {
	out := make([]any, 0, len(parts))
	for j := range parts {
		b, err := block(i, j, &parts[j], images)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func block(i, j int, p *openaiwire.Part, images bool) (any, error) {
	switch {
	case p.Type == "text":
		return textBlock{Type: "text", Text: p.Text}, nil
	case p.Type == "image_url" && images:
		if p.ImageURL == nil || p.ImageURL.URL == "" {
			return nil, clientError("messages", "messages[%d].content[%d]: image_url.url is required", i, j)
		}
		return image(i, j, p.ImageURL.URL)
	}
	return nil, clientError("messages", "messages[%d].content[%d]: unsupported content part type %q", i, j, p.Type)
}

// image is an image block: a data: URL becomes a base64 source, an
// http(s) URL a url source.
func image(i, j int, u string) (imageBlock, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || media == "" {
			return imageBlock{}, clientError("messages", "messages[%d].content[%d]: image data URL must be data:<media type>;base64,<data>", i, j)
		}
		return imageBlock{Type: "image", Source: base64Source{Type: "base64", MediaType: media, Data: data}}, nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return imageBlock{Type: "image", Source: urlSource{Type: "url", URL: u}}, nil
	}
	return imageBlock{}, clientError("messages", "messages[%d].content[%d]: image_url must be an https or data: URL", i, j)
}

// assistantContent is an assistant turn: plain text as a string, or blocks
// when there are parts or tool calls (text first, then tool_use).
func assistantContent(i int, m *openaiwire.Message) (any, error) {
	if len(m.ToolCalls) == 0 {
		if !m.Content.IsParts {
			return m.Content.Text, nil
		}
		return blocks(i, m.Content.Parts, false)
	}
	var out []any
	if m.Content.IsParts {
		var err error
		if out, err = blocks(i, m.Content.Parts, false); err != nil {
			return nil, err
		}
	} else if m.Content.Text != "" {
		// Anthropic rejects empty text blocks.
		out = append(out, textBlock{Type: "text", Text: m.Content.Text})
	}
	for k := range m.ToolCalls {
		tc := &m.ToolCalls[k]
		if tc.Type != "" && tc.Type != "function" {
			return nil, clientError("messages", "messages[%d].tool_calls[%d]: unsupported type %q", i, k, tc.Type)
		}
		input := bytes.TrimSpace([]byte(tc.Function.Arguments))
		switch {
		case len(input) == 0:
			input = []byte("{}")
		case input[0] != '{' || !json.Valid(input):
			return nil, clientError("messages", "messages[%d].tool_calls[%d].function.arguments: must be a JSON object", i, k)
		}
		out = append(out, toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
	}
	return out, nil
}

func toolResult(i int, m *openaiwire.Message) (toolResultBlock, error) {
	b := toolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID}
	switch {
	case m.Content.IsParts:
		c, err := blocks(i, m.Content.Parts, true)
		if err != nil {
			return toolResultBlock{}, err
		}
		b.Content = c
	case m.Content.Set:
		b.Content = m.Content.Text
	}
	return b, nil
}

// tools is tools and tool_choice (with disable_parallel_tool_use for
// parallel_tool_calls:false); the choice is nil when Anthropic's default
// (auto, parallel) is what the client asked for.
func tools(cr *openaiwire.ChatRequest) ([]tool, *toolChoice, error) {
	out := make([]tool, 0, len(cr.Tools))
	for k := range cr.Tools {
		t := &cr.Tools[k]
		if t.Type != "function" {
			return nil, nil, clientError("tools", "tools[%d]: unsupported type %q", k, t.Type)
		}
		var fn openaiwire.Function
		if t.Function != nil {
			fn = *t.Function
		}
		if fn.Name == "" {
			return nil, nil, clientError("tools", "tools[%d].function.name is required", k)
		}
		schema := json.RawMessage(bytes.TrimSpace(fn.Parameters))
		switch {
		case len(schema) == 0 || string(schema) == "null":
			schema = emptySchema
		case schema[0] != '{':
			return nil, nil, clientError("tools", "tools[%d].function.parameters: must be a JSON object", k)
		}
		out = append(out, tool{Name: fn.Name, Description: fn.Description, InputSchema: schema})
	}

	choice := toolChoice{Type: "auto"}
	tc := bytes.TrimSpace(cr.ToolChoice)
	switch {
	case len(tc) == 0 || string(tc) == "null":
	case tc[0] == '"':
		var s string
		if err := json.Unmarshal(tc, &s); err != nil {
			return nil, nil, decodeError(err)
		}
		switch s {
		case "auto":
		case "required":
			choice.Type = "any"
		case "none":
			choice.Type = "none"
		default:
			return nil, nil, clientError("tool_choice", "tool_choice: unsupported value %q", s)
		}
	case tc[0] == '{':
		var obj struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(tc, &obj); err != nil {
			return nil, nil, clientError("tool_choice", "tool_choice: %v", strings.TrimPrefix(err.Error(), "json: "))
		}
		if obj.Type != "function" || obj.Function.Name == "" {
			return nil, nil, clientError("tool_choice", `tool_choice: want {"type":"function","function":{"name":…}}`)
		}
		choice = toolChoice{Type: "tool", Name: obj.Function.Name}
	default:
		return nil, nil, clientError("tool_choice", "tool_choice must be a string or an object")
	}
	explicit := len(tc) > 0 && string(tc) != "null"
	choice.DisableParallelToolUse = cr.ParallelToolCalls != nil && !*cr.ParallelToolCalls && choice.Type != "none"
	if !explicit && !choice.DisableParallelToolUse {
		return out, nil, nil // Anthropic's default is auto
	}
	return out, &choice, nil
}
