package simulated

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// fragmentBytes is the most a streamed piece of JSON (a tool call's
// arguments, a structured answer) holds: OpenAI streams them a few
// characters at a time, not as one chunk.
const fragmentBytes = 16

// answer is what the simulated model says to one request: text, or one
// tool call (call non-nil; text is then its arguments).
type answer struct {
	text string
	call *openaiwire.ToolCall
	// pieces is text as streamed: words of prose, or fragments of JSON.
	pieces []string
	// json is set when text is JSON (a tool call's arguments or a
	// structured answer): a piece then costs a token per 4 bytes, as
	// tokenizers split JSON, where prose costs a token per word.
	json bool
}

// proseAnswer is text streamed word by word.
func proseAnswer(text string) answer {
	return answer{text: text, pieces: strings.SplitAfter(text, " ")}
}

// jsonAnswer is JSON text streamed in fragments.
func jsonAnswer(text string, call *openaiwire.ToolCall) answer {
	var pieces []string
	for s := text; s != ""; {
		n := min(fragmentBytes, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		pieces = append(pieces, s[:n])
		s = s[n:]
	}
	return answer{text: text, call: call, pieces: pieces, json: true}
}

// tokens is what streaming piece costs.
func (a *answer) tokens(piece string) int64 {
	if a.json {
		return int64(len(piece)+3) / 4
	}
	return 1
}

// completionTokens is the answer's usage: the sum over its pieces, so
// that a stream reports what the same answer whole would (prose keeps
// counting words as fields, which is the same for a single-spaced text).
func (a *answer) completionTokens() int64 {
	if !a.json {
		return int64(len(strings.Fields(a.text)))
	}
	var n int64
	for _, p := range a.pieces {
		n += a.tokens(p)
	}
	return n
}

// tool is a function the request declares.
type tool struct {
	name   string
	params gjson.Result // its JSON Schema; absent means no parameters
}

// chatAnswer decides what the model answers a chat request with, like a
// real model that always follows its instructions:
//   - a tool call when tool_choice names a function (that one), is
//     "required" (one of the tools), or is "auto" (the default when tools
//     are given) and the last message is the user's; the tool is the
//     first whose name the user's last message mentions, else the first
//     declared, and its arguments are generated from its parameters;
//   - else text: with response_format json_schema a value generated from
//     the schema, with json_object {"answer": the reply}; otherwise the
//     reply, which after a tool result (a last message of role tool)
//     mentions the result.
//
// A tool_choice that OpenAI would refuse (an unknown value, a function
// tools does not declare, a tool call required without tools) is a 400
// client error naming tool_choice.
func (a *Adapter) chatAnswer(req *provider.Request) (answer, error) {
	body := gjson.ParseBytes(req.Body)
	msgs := body.Get("messages").Array()
	tools := functionTools(body.Get("tools"))
	t, err := pickTool(body.Get("tool_choice"), tools, msgs)
	if err != nil {
		return answer{}, err
	}
	if t != nil {
		args := string(schemaValue(t.params))
		return jsonAnswer(args, &openaiwire.ToolCall{
			ID: "call_" + newID(), Type: "function",
			Function: openaiwire.FunctionCall{Name: t.name, Arguments: args},
		}), nil
	}
	text := a.reply(req)
	switch rf := body.Get("response_format"); rf.Get("type").Str {
	case "json_schema":
		return jsonAnswer(string(schemaValue(rf.Get("json_schema.schema"))), nil), nil
	case "json_object":
		b, err := openaiwire.Append(nil, &struct {
			Answer string `json:"answer"`
		}{text})
		if err != nil {
			return answer{}, encodeError(err)
		}
		return jsonAnswer(string(b), nil), nil
	}
	return proseAnswer(text), nil
}

// functionTools lists the function tools of tools, in order. Tools of
// other types (custom, built-in) are never called.
func functionTools(ts gjson.Result) []tool {
	var out []tool
	for _, t := range ts.Array() {
		f := t.Get("function")
		if typ := t.Get("type").Str; (typ == "function" || typ == "") && f.Get("name").Str != "" {
			out = append(out, tool{name: f.Get("name").Str, params: f.Get("parameters")})
		}
	}
	return out
}

// pickTool is the tool to call under tool_choice choice, or nil for a
// text answer (see chatAnswer).
func pickTool(choice gjson.Result, tools []tool, msgs []gjson.Result) (*tool, error) {
	mode := "auto"
	switch {
	case !choice.Exists() || choice.Type == gjson.Null:
	case choice.Type == gjson.String:
		mode = choice.Str
		if mode != "none" && mode != "auto" && mode != "required" {
			return nil, toolChoiceError("invalid value %q: want none, auto, required or a function", mode)
		}
	case choice.Get("type").Str == "function":
		// Chat names the function under "function"; the Responses API's
		// form, which a translation may keep, names it at the top.
		name := choice.Get("function.name").Str
		if name == "" {
			name = choice.Get("name").Str
		}
		for i := range tools {
			if tools[i].name == name {
				return &tools[i], nil
			}
		}
		return nil, toolChoiceError("function %q is not among the tools", name)
	case choice.Get("type").Str == "allowed_tools":
		mode = choice.Get("allowed_tools.mode").Str
		if mode != "auto" && mode != "required" {
			return nil, toolChoiceError("invalid allowed_tools.mode %q: want auto or required", mode)
		}
		allowed := map[string]bool{}
		for _, t := range choice.Get("allowed_tools.tools").Array() {
			allowed[t.Get("function.name").Str] = true
			allowed[t.Get("name").Str] = true
		}
		var kept []tool
		for _, t := range tools {
			if allowed[t.name] {
				kept = append(kept, t)
			}
		}
		tools = kept
	default:
		return nil, toolChoiceError("invalid value %s: want none, auto, required or a function", choice.Raw)
	}
	switch {
	case mode == "none":
		return nil, nil
	case mode == "required" && len(tools) == 0:
		return nil, toolChoiceError("%q needs tools to call", mode)
	case mode == "auto" && (len(tools) == 0 || len(msgs) == 0 || msgs[len(msgs)-1].Get("role").Str != "user"):
		return nil, nil
	}
	said := strings.ToLower(lastUserText(msgs))
	for i := range tools {
		n := strings.ToLower(tools[i].name)
		if strings.Contains(said, n) || strings.Contains(said, strings.ReplaceAll(n, "_", " ")) {
			return &tools[i], nil
		}
	}
	return &tools[0], nil
}

func toolChoiceError(format string, args ...any) *outcome.Error {
	return &outcome.Error{
		Kind:    outcome.ClientError,
		Status:  http.StatusBadRequest,
		Type:    "invalid_request_error",
		Param:   "tool_choice",
		Message: "simulated provider: tool_choice: " + fmt.Sprintf(format, args...),
	}
}

// lastUserText is the text of the last user message.
func lastUserText(msgs []gjson.Result) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Get("role").Str == "user" {
			return contentText(msgs[i].Get("content"))
		}
	}
	return ""
}

// toolResult reads the tool result that ends msgs (ok false when the
// last message is not one): the function's name, found through its
// call's id in an earlier assistant turn ("" when none matches), and what
// it returned.
func toolResult(msgs []gjson.Result) (name, result string, ok bool) {
	if len(msgs) == 0 {
		return "", "", false
	}
	last := msgs[len(msgs)-1]
	switch last.Get("role").Str {
	case "function": // legacy: the message names its function
		return last.Get("name").Str, contentText(last.Get("content")), true
	case "tool":
	default:
		return "", "", false
	}
	id := last.Get("tool_call_id").Str
	for i := len(msgs) - 2; i >= 0 && name == ""; i-- {
		for _, c := range msgs[i].Get("tool_calls").Array() {
			if c.Get("id").Str == id {
				name = c.Get("function.name").Str
			}
		}
	}
	return name, contentText(last.Get("content")), true
}

// contentText flattens a message content that is a string or text parts.
func contentText(c gjson.Result) string {
	if !c.IsArray() {
		return c.String()
	}
	var b strings.Builder
	for _, p := range c.Array() {
		if p.Get("type").String() == "text" {
			b.WriteString(p.Get("text").String())
		}
	}
	return b.String()
}

// chatBody is the non-stream answer.
func chatBody(model string, ans *answer, u outcome.Usage) ([]byte, error) {
	msg := openaiwire.ResponseMessage{Role: "assistant"}
	finish := openaiwire.FinishStop
	if ans.call != nil {
		msg.ToolCalls = []openaiwire.ToolCall{*ans.call}
		finish = openaiwire.FinishToolCalls
	} else {
		msg.Content = &ans.text
	}
	return openaiwire.Append(nil, &openaiwire.ChatCompletion{
		ID:      "chatcmpl-" + newID(),
		Object:  openaiwire.ObjectChatCompletion,
		Created: time.Now().Unix(),
		Model:   model,
		Choices: []openaiwire.ChatChoice{{Message: msg, FinishReason: finish}},
		Usage:   wireUsage(u),
	})
}
