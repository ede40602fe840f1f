package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// The Gemini GenerateContentRequest (v1beta REST field names).
type genRequest struct {
	Contents          []genContent      `json:"contents"`
	SystemInstruction *genContent       `json:"systemInstruction,omitempty"`
	Tools             []genTool         `json:"tools,omitempty"`
	ToolConfig        *genToolConfig    `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type genContent struct {
	Role  string    `json:"role,omitempty"`
	Parts []genPart `json:"parts"`
}

type genPart struct {
	Text             string               `json:"text,omitempty"`
	InlineData       *genBlob             `json:"inlineData,omitempty"`
	FileData         *genFileData         `json:"fileData,omitempty"`
	FunctionCall     *genFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *genFunctionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string               `json:"thoughtSignature,omitempty"`
}

type genBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type genFileData struct {
	MimeType string `json:"mimeType"`
	FileURI  string `json:"fileUri"`
}

type genFunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type genFunctionResponse struct {
	Name     string         `json:"name"`
	Response functionResult `json:"response"`
}

// functionResult is a functionResponse's response, which Gemini wants to
// be an object: the tool's output under "content", itself the output when
// that is a JSON object (a json.RawMessage), else a textResult.
type functionResult struct {
	Content any `json:"content"`
}

// textResult is the content of a tool's output that is not a JSON object.
type textResult struct {
	Result string `json:"result"`
}

type genTool struct {
	FunctionDeclarations []genFunctionDecl `json:"functionDeclarations"`
}

type genFunctionDecl struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// ParametersJSONSchema takes the OpenAI JSON Schema unchanged; the
	// older `parameters` field takes only an OpenAPI subset and rejects
	// common keywords such as additionalProperties.
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type genToolConfig struct {
	FunctionCallingConfig genFunctionCallingConfig `json:"functionCallingConfig"`
}

type genFunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	MaxOutputTokens    *int64          `json:"maxOutputTokens,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	CandidateCount     *int64          `json:"candidateCount,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	Seed               *int64          `json:"seed,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
}

// skipThoughtSignature is Google's documented sentinel for a replayed
// functionCall whose thoughtSignature the client could not keep: Gemini 3
// models reject a history whose function calls carry no signature (400
// "Function call is missing a thought_signature"), and OpenAI-shaped
// histories never carry one. See
// https://ai.google.dev/gemini-api/docs/thought-signatures.
const skipThoughtSignature = "skip_thought_signature_validator"

// wantsThoughtSignature reports whether model validates thought
// signatures: "gemini-N…" with N >= 3, and unversioned aliases such as
// "gemini-flash-latest" that point at current models. Older Gemini
// versions and other families (gemma, learnlm) get no sentinel.
func wantsThoughtSignature(model string) bool {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(model, "models/"), "gemini-")
	if !ok {
		return false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 {
		return true
	}
	major, err := strconv.Atoi(rest[:n])
	return err != nil || major >= 3
}

// badRequest is the error for a request Gemini cannot be asked: the
// client's fault, returned without touching the network.
func badRequest(err error, format string, args ...any) *outcome.Error {
	return &outcome.Error{
		Kind:    outcome.ClientError,
		Status:  http.StatusBadRequest,
		Message: "gemini: " + fmt.Sprintf(format, args...),
		Err:     err,
	}
}

// translateChat turns an OpenAI chat.completions body into a Gemini
// GenerateContentRequest body for model. The body decodes into
// openaiwire.ChatRequest; what Gemini cannot express (user,
// parallel_tool_calls, logprobs…) is not translated. A message's content
// of the wrong type is refused when that message is translated. maxOutput,
// when above 0, is the target's cap: a larger max_completion_tokens (or
// max_tokens) is sent as maxOutputTokens = maxOutput. Every error is a
// ClientError.
//
// A stream's decode runs on a goroutine of its own (openaiwire.Decode):
// encoding/json's frames recur per nesting level, and the request's
// goroutine keeps the stack it grew to for the stream's life
// (docs/BENCHMARKS.md, "Memory per stream"). A whole answer's goroutine
// is done with it soon, and decodes in place.
func translateChat(body []byte, model string, maxOutput int64, stream bool) ([]byte, error) {
	var in openaiwire.ChatRequest
	var err error
	if stream {
		err = openaiwire.Decode(body, &in)
	} else {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		return nil, badRequest(err, "decoding chat request: %v", err)
	}
	var out genRequest
	if err := translateMessages(in.Messages, wantsThoughtSignature(model), &out); err != nil {
		return nil, err
	}
	if err := translateTools(&in, &out); err != nil {
		return nil, err
	}
	gc, err := translateGeneration(&in, maxOutput)
	if err != nil {
		return nil, err
	}
	out.GenerationConfig = gc
	b, err := json.Marshal(&out)
	if err != nil {
		// Only a RawMessage that is not valid JSON gets here.
		return nil, badRequest(err, "encoding gemini request: %v", err)
	}
	return b, nil
}

// sign adds the thought-signature sentinel to replayed function calls.
func translateMessages(msgs []openaiwire.Message, sign bool, out *genRequest) error {
	callNames := make(map[string]string) // tool_call_id -> function name
	lastWasTool := false                 // the last content is a user turn of function responses
	for i := range msgs {
		m := &msgs[i]
		isTool := false
		switch m.Role {
		case "system", "developer":
			parts, err := contentParts(&m.Content, i, false)
			if err != nil {
				return err
			}
			if len(parts) == 0 {
				continue
			}
			if out.SystemInstruction == nil {
				out.SystemInstruction = &genContent{}
			}
			out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, parts...)
			continue // a system message does not break a run of tool results
		case "user":
			parts, err := contentParts(&m.Content, i, true)
			if err != nil {
				return err
			}
			if len(parts) > 0 {
				out.Contents = append(out.Contents, genContent{Role: "user", Parts: parts})
			}
		case "assistant":
			parts, err := contentParts(&m.Content, i, false)
			if err != nil {
				return err
			}
			for j := range m.ToolCalls {
				tc := &m.ToolCalls[j]
				if tc.Type != "" && tc.Type != "function" {
					return badRequest(nil, "messages[%d].tool_calls[%d]: type %q is not supported", i, j, tc.Type)
				}
				if tc.Function.Name == "" {
					return badRequest(nil, "messages[%d].tool_calls[%d]: function.name is required", i, j)
				}
				args, err := callArguments(tc.Function.Arguments)
				if err != nil {
					return badRequest(err, "messages[%d].tool_calls[%d].function.arguments must be a JSON object", i, j)
				}
				p := genPart{FunctionCall: &genFunctionCall{Name: tc.Function.Name, Args: args}}
				if sign && j == 0 {
					// Gemini signs only the first call of a parallel set.
					p.ThoughtSignature = skipThoughtSignature
				}
				parts = append(parts, p)
				if tc.ID != "" {
					callNames[tc.ID] = tc.Function.Name
				}
			}
			if len(parts) > 0 {
				out.Contents = append(out.Contents, genContent{Role: "model", Parts: parts})
			}
		case "tool", "function":
			isTool = true
			name := m.Name
			if m.Role == "tool" {
				n, ok := callNames[m.ToolCallID]
				if !ok {
					return badRequest(nil, "messages[%d]: tool_call_id %q answers no earlier assistant tool call", i, m.ToolCallID)
				}
				name = n
			} else if name == "" {
				return badRequest(nil, "messages[%d]: function message needs a name", i)
			}
			resp, err := functionResponse(&m.Content, i)
			if err != nil {
				return err
			}
			p := genPart{FunctionResponse: &genFunctionResponse{Name: name, Response: resp}}
			if lastWasTool {
				last := &out.Contents[len(out.Contents)-1]
				last.Parts = append(last.Parts, p)
			} else {
				out.Contents = append(out.Contents, genContent{Role: "user", Parts: []genPart{p}})
			}
		default:
			return badRequest(nil, "messages[%d]: role %q is not supported", i, m.Role)
		}
		lastWasTool = isTool
	}
	if len(out.Contents) == 0 {
		return badRequest(nil, "messages: at least one user or assistant message with content is required")
	}
	return nil
}

// contentParts translates an OpenAI message content (string, array of
// parts, or null) into Gemini parts. Empty text yields no part: Gemini
// rejects empty text parts. media allows image, audio and file parts.
func contentParts(c *openaiwire.Content, i int, media bool) ([]genPart, error) {
	switch {
	case c.Err != nil:
		return nil, badRequest(c.Err, "messages[%d].content must be a string or an array of parts", i)
	case !c.Set:
		return nil, nil
	case !c.IsParts:
		if c.Text == "" {
			return nil, nil
		}
		return []genPart{{Text: c.Text}}, nil
	}
	cps := c.Parts
	parts := make([]genPart, 0, len(cps))
	for j := range cps {
		cp := &cps[j]
		switch {
		case cp.Type == "text":
			if cp.Text != "" {
				parts = append(parts, genPart{Text: cp.Text})
			}
		case cp.Type == "refusal":
			if cp.Refusal != "" {
				parts = append(parts, genPart{Text: cp.Refusal})
			}
		case cp.Type == "image_url" && media && cp.ImageURL != nil:
			p, err := imagePart(cp.ImageURL.URL)
			if err != nil {
				return nil, badRequest(err, "messages[%d].content[%d].image_url: %v", i, j, err)
			}
			parts = append(parts, p)
		case cp.Type == "input_audio" && media && cp.InputAudio != nil:
			if cp.InputAudio.Data == "" || cp.InputAudio.Format == "" {
				return nil, badRequest(nil, "messages[%d].content[%d].input_audio needs data and format", i, j)
			}
			parts = append(parts, genPart{InlineData: &genBlob{MimeType: "audio/" + cp.InputAudio.Format, Data: cp.InputAudio.Data}})
		case cp.Type == "file" && media && cp.File != nil && cp.File.FileData != "":
			mime, data, err := parseDataURL(cp.File.FileData)
			if err != nil {
				return nil, badRequest(err, "messages[%d].content[%d].file.file_data: %v", i, j, err)
			}
			parts = append(parts, genPart{InlineData: &genBlob{MimeType: mime, Data: data}})
		default:
			return nil, badRequest(nil, "messages[%d].content[%d]: part type %q is not supported here", i, j, cp.Type)
		}
	}
	return parts, nil
}

// imagePart maps an image_url to inline data (data: URL) or a file
// reference (http(s) URL, which Gemini fetches itself).
func imagePart(u string) (genPart, error) {
	if strings.HasPrefix(u, "data:") {
		mime, data, err := parseDataURL(u)
		if err != nil {
			return genPart{}, err
		}
		return genPart{InlineData: &genBlob{MimeType: mime, Data: data}}, nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return genPart{FileData: &genFileData{MimeType: guessImageMime(u), FileURI: u}}, nil
	}
	return genPart{}, fmt.Errorf("url must be a data: URL or an http(s) URL")
}

// parseDataURL splits "data:<mime>;base64,<data>" (RFC 2397). Gemini wants
// base64, so the plain form is refused.
func parseDataURL(u string) (mime, data string, err error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", fmt.Errorf("not a data: URL")
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok || data == "" {
		return "", "", fmt.Errorf("data: URL has no data")
	}
	mime, ok = strings.CutSuffix(meta, ";base64")
	if !ok {
		return "", "", fmt.Errorf("data: URL must be base64-encoded")
	}
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i] // drop parameters such as charset
	}
	if mime == "" {
		mime = "application/octet-stream"
	}
	return mime, data, nil
}

func guessImageMime(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	switch strings.ToLower(path.Ext(u)) {
	case ".png":
		return "image/png"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".heic":
		return "image/heic"
	case ".heif":
		return "image/heif"
	}
	return "image/jpeg"
}

// callArguments decodes an OpenAI tool call's arguments string, which must
// hold a JSON object ("" means no arguments).
func callArguments(s string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	if b[0] != '{' || !json.Valid(b) {
		return nil, fmt.Errorf("not a JSON object")
	}
	return b, nil
}

// functionResponse is the functionResult for a tool message's content.
func functionResponse(c *openaiwire.Content, i int) (functionResult, error) {
	text, err := plainText(c, i)
	if err != nil {
		return functionResult{}, err
	}
	if t := bytes.TrimSpace([]byte(text)); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return functionResult{Content: json.RawMessage(t)}, nil
	}
	return functionResult{Content: textResult{Result: text}}, nil
}

// plainText reads a content that may only hold text: a string, or text
// parts joined together.
func plainText(c *openaiwire.Content, i int) (string, error) {
	switch {
	case c.Err != nil:
		return "", badRequest(c.Err, "messages[%d].content must be a string or an array of text parts", i)
	case !c.IsParts:
		return c.Text, nil // "" when null or absent
	}
	cps := c.Parts
	var sb strings.Builder
	for j := range cps {
		if cps[j].Type != "text" {
			return "", badRequest(nil, "messages[%d].content[%d]: part type %q is not supported in a tool result", i, j, cps[j].Type)
		}
		sb.WriteString(cps[j].Text)
	}
	return sb.String(), nil
}

func translateTools(in *openaiwire.ChatRequest, out *genRequest) error {
	if len(in.Tools) > 0 {
		decls := make([]genFunctionDecl, 0, len(in.Tools))
		for i := range in.Tools {
			t := &in.Tools[i]
			if t.Type != "function" || t.Function == nil {
				return badRequest(nil, "tools[%d]: type %q is not supported", i, t.Type)
			}
			if t.Function.Name == "" {
				return badRequest(nil, "tools[%d].function.name is required", i)
			}
			d := genFunctionDecl{Name: t.Function.Name, Description: t.Function.Description}
			if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && string(p) != "null" {
				d.ParametersJSONSchema = p
			}
			decls = append(decls, d)
		}
		out.Tools = []genTool{{FunctionDeclarations: decls}}
	}
	tc := bytes.TrimSpace(in.ToolChoice)
	if len(tc) == 0 || string(tc) == "null" {
		return nil
	}
	var fc genFunctionCallingConfig
	if tc[0] == '"' {
		var s string
		_ = json.Unmarshal(tc, &s) // json.Unmarshal of the whole body validated it
		switch s {
		case "auto":
			fc.Mode = "AUTO"
		case "none":
			fc.Mode = "NONE"
		case "required":
			fc.Mode = "ANY"
		default:
			return badRequest(nil, "tool_choice %q is not supported", s)
		}
	} else {
		var obj struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(tc, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
			return badRequest(err, "tool_choice must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":…}}")
		}
		fc.Mode = "ANY"
		fc.AllowedFunctionNames = []string{obj.Function.Name}
	}
	out.ToolConfig = &genToolConfig{FunctionCallingConfig: fc}
	return nil
}

func translateGeneration(in *openaiwire.ChatRequest, maxOutput int64) (*generationConfig, error) {
	gc := generationConfig{
		Temperature:      in.Temperature,
		TopP:             in.TopP,
		MaxOutputTokens:  in.MaxCompletionTokens,
		CandidateCount:   in.N,
		Seed:             in.Seed,
		PresencePenalty:  in.PresencePenalty,
		FrequencyPenalty: in.FrequencyPenalty,
	}
	if gc.MaxOutputTokens == nil {
		gc.MaxOutputTokens = in.MaxTokens
	}
	if n := gc.MaxOutputTokens; n != nil && provider.CapOutput(*n, maxOutput) != *n {
		gc.MaxOutputTokens = &maxOutput
	}
	if in.N != nil && *in.N < 1 {
		return nil, badRequest(nil, "n must be at least 1")
	}
	if stop := bytes.TrimSpace(in.Stop); len(stop) > 0 && string(stop) != "null" {
		if stop[0] == '"' {
			var s string
			_ = json.Unmarshal(stop, &s)
			gc.StopSequences = []string{s}
		} else if err := json.Unmarshal(stop, &gc.StopSequences); err != nil {
			return nil, badRequest(err, "stop must be a string or an array of strings")
		}
	}
	if rf := in.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			gc.ResponseMimeType = "application/json"
		case "json_schema":
			gc.ResponseMimeType = "application/json"
			if rf.JSONSchema != nil {
				if s := bytes.TrimSpace(rf.JSONSchema.Schema); len(s) > 0 && string(s) != "null" {
					gc.ResponseJSONSchema = s
				}
			}
		default:
			return nil, badRequest(nil, "response_format type %q is not supported", rf.Type)
		}
	}
	if gc.Temperature == nil && gc.TopP == nil && gc.MaxOutputTokens == nil && gc.CandidateCount == nil &&
		gc.Seed == nil && gc.PresencePenalty == nil && gc.FrequencyPenalty == nil &&
		gc.StopSequences == nil && gc.ResponseMimeType == "" {
		return nil, nil
	}
	return &gc, nil
}
