package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// converse serves an OpenAI chat request for a model that is not
// Anthropic's: translated into a Converse request (translateConverse),
// sent to Converse or ConverseStream, and the answer translated back.
func (a *Adapter) converse(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	var body []byte
	var err error
	if req.Stream {
		// Translated on a goroutine of its own (apart): encoding/json's
		// decode and encode frames recur per nesting level.
		apart(func() { body, err = translateConverse(req.Body, req.MaxOutputTokens) })
	} else {
		body, err = translateConverse(req.Body, req.MaxOutputTokens)
	}
	if err != nil {
		return nil, err
	}
	now := a.now()
	if req.Stream {
		resp, err := a.post(ctx, modelPath(req.Model, "converse-stream"), body, true, "calling bedrock ConverseStream")
		if err != nil {
			return nil, err
		}
		return &provider.Response{
			Stream:    newConverseStream(ctx, resp.Body, chatID(resp.Header), req.Model, now.Unix(), req.IncludeUsage),
			RateLimit: outcome.UnknownRateLimit,
		}, nil
	}
	const what = "calling bedrock Converse"
	resp, err := a.post(ctx, modelPath(req.Model, "converse"), body, false, what)
	if err != nil {
		return nil, err
	}
	raw, err := provider.ReadBody(ctx, what, resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	out, u, err := convertConverse(make([]byte, 0, len(raw)+256), raw, chatID(resp.Header), req.Model, now.Unix())
	if err != nil {
		return nil, err
	}
	return &provider.Response{Body: out, Usage: u.outcome(), RateLimit: outcome.UnknownRateLimit}, nil
}

// chatID is the answer's chat completion id: Converse has none, so the
// request id AWS gave the call, which also finds it in AWS's logs.
func chatID(h http.Header) string {
	if id := h.Get("X-Amzn-Requestid"); id != "" {
		return "chatcmpl-" + id
	}
	return "chatcmpl-bedrock"
}

// The body of Converse and ConverseStream, as far as an OpenAI chat
// request translates into it. Nil pointers and empty slices leave their
// key out.
type converseRequest struct {
	Messages        []cMessage       `json:"messages"`
	System          []cText          `json:"system,omitempty"`
	InferenceConfig *inferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *toolConfig      `json:"toolConfig,omitempty"`
}

// cMessage is a turn; Content holds the blocks below.
type cMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type cText struct {
	Text string `json:"text"`
}

type cImage struct {
	Image struct {
		Format string `json:"format"` // png, jpeg, gif, webp
		Source struct {
			Bytes string `json:"bytes"` // base64, as JSON carries a blob
		} `json:"source"`
	} `json:"image"`
}

type cToolUse struct {
	ToolUse struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
}

type cToolResult struct {
	ToolResult struct {
		ToolUseID string `json:"toolUseId"`
		Content   []any  `json:"content"`
	} `json:"toolResult"`
}

type inferenceConfig struct {
	MaxTokens     *int64   `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type toolConfig struct {
	Tools      []cTool `json:"tools"`
	ToolChoice any     `json:"toolChoice,omitempty"`
}

type cTool struct {
	ToolSpec struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
	} `json:"toolSpec"`
}

// emptySchema is the schema of a function declared without parameters:
// Converse requires one.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// clientError is the error for a request the adapter cannot translate.
func clientError(param, format string, args ...any) *outcome.Error {
	return &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest, Type: "invalid_request_error",
		Param: param, Message: "translating request for bedrock converse: " + fmt.Sprintf(format, args...)}
}

// translateConverse is the Converse body for an OpenAI chat request:
// system and developer messages as system blocks; user, assistant and tool
// turns as messages, consecutive turns of one role merged (Converse wants
// them alternating; tool results are the user's); text, images (data: URLs
// only: Converse takes image bytes, not URLs), tool calls and results;
// max_completion_tokens (or max_tokens; lowered to maxTokens, the target's
// cap, when that is set and exceeded), temperature, top_p and stop as
// inferenceConfig; tools and tool_choice as toolConfig. What Converse has
// no field for (response_format, seed, penalties, n > 1 refused) is not
// sent. Its error is an *outcome.Error of kind ClientError.
func translateConverse(body []byte, maxTokens int64) ([]byte, error) {
	var cr openaiwire.ChatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, clientError(te.Field, "%s: wrong type (got %s)", te.Field, te.Value)
		}
		return nil, clientError("", "invalid request body: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(cr.Messages) == 0 {
		return nil, clientError("messages", "messages is required and must not be empty")
	}
	if cr.N != nil && *cr.N != 1 {
		return nil, clientError("n", "n must be 1 (bedrock returns one choice), got %d", *cr.N)
	}
	var out converseRequest
	hasToolBlocks := false
	for i := range cr.Messages {
		m := &cr.Messages[i]
		if m.Content.Err != nil {
			return nil, clientError("messages", "messages[%d].content: %v", i, m.Content.Err)
		}
		var role string
		var blocks []any
		var err error
		switch m.Role {
		case "system", "developer":
			texts, err := textParts(i, &m.Content)
			if err != nil {
				return nil, err
			}
			for _, t := range texts {
				out.System = append(out.System, cText{Text: t})
			}
			continue
		case "user":
			role = "user"
			blocks, err = userBlocks(i, &m.Content)
		case "assistant":
			role = "assistant"
			blocks, err = assistantBlocks(i, m)
			hasToolBlocks = hasToolBlocks || len(m.ToolCalls) > 0
		case "tool":
			role = "user"
			var r cToolResult
			r.ToolResult.ToolUseID = m.ToolCallID
			r.ToolResult.Content, err = resultContent(i, &m.Content)
			blocks = []any{r}
			hasToolBlocks = true
		case "":
			return nil, clientError("messages", "messages[%d]: role is required", i)
		default:
			return nil, clientError("messages", "messages[%d]: unsupported role %q", i, m.Role)
		}
		if err != nil {
			return nil, err
		}
		if len(blocks) == 0 {
			continue // Converse rejects empty turns and blank text
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			continue
		}
		out.Messages = append(out.Messages, cMessage{Role: role, Content: blocks})
	}
	if len(out.Messages) == 0 {
		return nil, clientError("messages", "messages holds no user or assistant content")
	}

	var ic inferenceConfig
	switch {
	case cr.MaxCompletionTokens != nil:
		ic.MaxTokens = cr.MaxCompletionTokens
	case cr.MaxTokens != nil:
		ic.MaxTokens = cr.MaxTokens
	}
	if n := ic.MaxTokens; n != nil && provider.CapOutput(*n, maxTokens) != *n {
		ic.MaxTokens = &maxTokens
	}
	ic.Temperature, ic.TopP = cr.Temperature, cr.TopP
	stop, err := stopSequences(cr.Stop)
	if err != nil {
		return nil, err
	}
	ic.StopSequences = stop
	if ic.MaxTokens != nil || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		out.InferenceConfig = &ic
	}
	if out.ToolConfig, err = tools(&cr, hasToolBlocks); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&out); err != nil {
		// The raw values were validated when decoded: this does not happen.
		return nil, clientError("", "encoding the converse request: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// textParts is a system message's text: the string, or each text part.
func textParts(i int, c *openaiwire.Content) ([]string, error) {
	switch {
	case !c.Set:
		return nil, nil
	case !c.IsParts:
		if c.Text == "" {
			return nil, nil
		}
		return []string{c.Text}, nil
	}
	var out []string
	for j := range c.Parts {
		p := &c.Parts[j]
		if p.Type != "text" {
			return nil, clientError("messages", "messages[%d].content[%d]: a system message takes text parts only, got %q", i, j, p.Type)
		}
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return out, nil
}

// userBlocks is a user turn's text and images.
func userBlocks(i int, c *openaiwire.Content) ([]any, error) {
	if !c.IsParts {
		if c.Text == "" {
			return nil, nil
		}
		return []any{cText{Text: c.Text}}, nil
	}
	var out []any
	for j := range c.Parts {
		p := &c.Parts[j]
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, cText{Text: p.Text})
			}
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return nil, clientError("messages", "messages[%d].content[%d]: image_url.url is required", i, j)
			}
			img, err := image(i, j, p.ImageURL.URL)
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		default:
			return nil, clientError("messages", "messages[%d].content[%d]: unsupported content part type %q", i, j, p.Type)
		}
	}
	return out, nil
}

// image is an image block from a data: URL; Converse takes the image's
// bytes (or an S3 location), never a web URL.
func image(i, j int, u string) (cImage, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return cImage{}, clientError("messages", "messages[%d].content[%d]: bedrock takes images as data: URLs (base64), not links", i, j)
	}
	meta, data, ok := strings.Cut(rest, ",")
	media, isBase64 := strings.CutSuffix(meta, ";base64")
	format, known := strings.CutPrefix(media, "image/")
	if format == "jpg" {
		format = "jpeg"
	}
	switch {
	case !ok || !isBase64 || !known:
		return cImage{}, clientError("messages", "messages[%d].content[%d]: image data URL must be data:image/<format>;base64,<data>", i, j)
	case format != "png" && format != "jpeg" && format != "gif" && format != "webp":
		return cImage{}, clientError("messages", "messages[%d].content[%d]: bedrock takes png, jpeg, gif or webp images, got %s", i, j, media)
	}
	var img cImage
	img.Image.Format = format
	img.Image.Source.Bytes = data
	return img, nil
}

// assistantBlocks is an assistant turn: its text, then its tool calls.
func assistantBlocks(i int, m *openaiwire.Message) ([]any, error) {
	var out []any
	if !m.Content.IsParts {
		if m.Content.Text != "" {
			out = append(out, cText{Text: m.Content.Text})
		}
	} else {
		for j := range m.Content.Parts {
			p := &m.Content.Parts[j]
			switch p.Type {
			case "text":
				if p.Text != "" {
					out = append(out, cText{Text: p.Text})
				}
			case "refusal":
			default:
				return nil, clientError("messages", "messages[%d].content[%d]: unsupported content part type %q", i, j, p.Type)
			}
		}
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
		var b cToolUse
		b.ToolUse.ToolUseID, b.ToolUse.Name, b.ToolUse.Input = tc.ID, tc.Function.Name, input
		out = append(out, b)
	}
	return out, nil
}

// resultContent is a tool message's content as a toolResult's: its text.
func resultContent(i int, c *openaiwire.Content) ([]any, error) {
	texts, err := textParts(i, c)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, max(len(texts), 1))
	for _, t := range texts {
		out = append(out, cText{Text: t})
	}
	if len(out) == 0 {
		out = append(out, cText{Text: "(no output)"}) // Converse rejects blank text
	}
	return out, nil
}

// stopSequences reads OpenAI's stop: a string, an array of strings, or
// null or absent (nil).
func stopSequences(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var one string
		if err := json.Unmarshal(raw, &one); err == nil {
			return []string{one}, nil
		}
	case '[':
		var list []string
		if err := json.Unmarshal(raw, &list); err == nil {
			return list, nil
		}
	}
	return nil, clientError("stop", "stop must be a string or an array of strings")
}

// tools is the toolConfig: each function as a toolSpec, and tool_choice
// as auto, any (required) or tool (a named function). Converse has no
// "none": then tools are left out, unless the conversation holds tool
// calls or results, which Converse refuses without a toolConfig; the
// model then chooses (auto).
func tools(cr *openaiwire.ChatRequest, hasToolBlocks bool) (*toolConfig, error) {
	if len(cr.Tools) == 0 {
		return nil, nil
	}
	tc := &toolConfig{Tools: make([]cTool, 0, len(cr.Tools))}
	for k := range cr.Tools {
		t := &cr.Tools[k]
		if t.Type != "function" {
			return nil, clientError("tools", "tools[%d]: unsupported type %q", k, t.Type)
		}
		if t.Function == nil || t.Function.Name == "" {
			return nil, clientError("tools", "tools[%d].function.name is required", k)
		}
		schema := json.RawMessage(bytes.TrimSpace(t.Function.Parameters))
		switch {
		case len(schema) == 0 || string(schema) == "null":
			schema = emptySchema
		case schema[0] != '{':
			return nil, clientError("tools", "tools[%d].function.parameters: must be a JSON object", k)
		}
		var ct cTool
		ct.ToolSpec.Name, ct.ToolSpec.Description, ct.ToolSpec.InputSchema.JSON = t.Function.Name, t.Function.Description, schema
		tc.Tools = append(tc.Tools, ct)
	}
	choice := bytes.TrimSpace(cr.ToolChoice)
	switch {
	case len(choice) == 0 || string(choice) == "null" || string(choice) == `"auto"`:
	case string(choice) == `"required"`:
		tc.ToolChoice = map[string]struct{}{"any": {}}
	case string(choice) == `"none"`:
		if !hasToolBlocks {
			return nil, nil
		}
	case choice[0] == '{':
		var obj struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(choice, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
			return nil, clientError("tool_choice", `tool_choice: want {"type":"function","function":{"name":…}}`)
		}
		tc.ToolChoice = map[string]map[string]string{"tool": {"name": obj.Function.Name}}
	default:
		return nil, clientError("tool_choice", "tool_choice: unsupported value %s", choice)
	}
	return tc, nil
}
