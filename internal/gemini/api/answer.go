package api

import (
	"errors"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
)

// errNotChat is a provider answer that is not a chat completion.
var errNotChat = errors.New("not a chat completion")

// answer translates a chat completion into a GenerateContentResponse:
// each choice a candidate (text and function calls as parts), its
// finish reason in Google's words, usage as usageMetadata.
func (t *translation) answer(raw []byte) ([]byte, error) {
	if !jsoncheck.Valid(raw) {
		return nil, errNotChat
	}
	doc := gjson.ParseBytes(raw)
	choices := doc.Get("choices")
	if !choices.IsArray() {
		return nil, errNotChat
	}
	b := make([]byte, 0, len(raw)+128)
	b = append(b, `{"candidates":[`...)
	i := 0
	choices.ForEach(func(_, c gjson.Result) bool {
		if i > 0 {
			b = append(b, ',')
		}
		i++
		m := c.Get("message")
		b = append(b, `{"content":{"parts":[`...)
		n := 0
		text := m.Get("content").Str
		if text == "" {
			text = m.Get("refusal").Str
		}
		if text != "" {
			b = append(b, `{"text":`...)
			b = str(b, text)
			b = append(b, '}')
			n++
		}
		m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = functionCall(b, tc.Get("id").Str, tc.Get("function.name").Str, tc.Get("function.arguments").Str)
			return true
		})
		if n == 0 {
			b = append(b, `{"text":""}`...)
		}
		b = append(b, `],"role":"model"}`...)
		if fr := finish(c.Get("finish_reason").Str); fr != "" {
			b = append(b, `,"finishReason":"`...)
			b = append(b, fr...)
			b = append(b, '"')
		}
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, c.Get("index").Int(), 10)
		b = append(b, '}')
		return true
	})
	b = append(b, ']')
	b = usageMetadata(b, doc.Get("usage"))
	b = t.head(b, doc.Get("id").Str)
	return append(b, "}\n"...), nil
}

// head appends modelVersion (the client's model name) and responseId.
func (t *translation) head(b []byte, id string) []byte {
	b = append(b, `,"modelVersion":`...)
	b = str(b, t.model)
	if id != "" {
		b = append(b, `,"responseId":`...)
		b = str(b, id)
	}
	return b
}

// functionCall appends a functionCall part: args are the call's
// arguments when they are a JSON object, else under "arguments" as the
// text the model wrote (Google's args is always an object).
func functionCall(b []byte, id, name, args string) []byte {
	b = append(b, `{"functionCall":{`...)
	if id != "" {
		b = append(b, `"id":`...)
		b = str(b, id)
		b = append(b, ',')
	}
	b = append(b, `"name":`...)
	b = str(b, name)
	b = append(b, `,"args":`...)
	switch a := gjson.Parse(args); {
	case args == "":
		b = append(b, "{}"...)
	case a.IsObject() && jsoncheck.Valid([]byte(args)):
		b = append(b, args...)
	default:
		b = append(b, `{"arguments":`...)
		b = str(b, args)
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// finish is Google's finishReason for a chat finish_reason; "" for none.
func finish(r string) string {
	switch r {
	case "":
		return ""
	case "length":
		return "MAX_TOKENS"
	case "content_filter":
		return "SAFETY"
	}
	return "STOP"
}

// usageMetadata appends a chat usage object as usageMetadata; nothing
// when there is none.
func usageMetadata(b []byte, u gjson.Result) []byte {
	if !u.IsObject() {
		return b
	}
	prompt, completion := u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int()
	thoughts := u.Get("completion_tokens_details.reasoning_tokens").Int()
	b = append(b, `,"usageMetadata":{"promptTokenCount":`...)
	b = strconv.AppendInt(b, prompt, 10)
	b = append(b, `,"candidatesTokenCount":`...)
	b = strconv.AppendInt(b, completion-thoughts, 10)
	if thoughts > 0 {
		b = append(b, `,"thoughtsTokenCount":`...)
		b = strconv.AppendInt(b, thoughts, 10)
	}
	if c := u.Get("prompt_tokens_details.cached_tokens").Int(); c > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = strconv.AppendInt(b, c, 10)
	}
	b = append(b, `,"totalTokenCount":`...)
	b = strconv.AppendInt(b, prompt+completion, 10)
	return append(b, '}')
}
