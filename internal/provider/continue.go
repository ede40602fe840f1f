package provider

import (
	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// Continuing returns the request that asks a target to continue the
// assistant's answer that begins with prefix (docs/ARCHITECTURE.md,
// "Streaming": rescue): r's conversation with prefix as a trailing
// assistant message, streamed, without what asks for thinking
// (thinking, reasoning_effort, reasoning: a prefilled turn must not start
// with one, and the text already sent had none of it). A chat body also
// says, in vLLM's words, that the final message is to be continued, not
// answered (continue_final_message, add_generation_prompt: false); a
// Messages body's trailing assistant message is a prefill as it is. An
// empty prefix adds nothing: the target answers afresh. r must be an
// OpChat or OpMessages request whose Body is a JSON object with a
// messages array; ok is false otherwise. r is not modified.
func (r *Request) Continuing(prefix string) (c *Request, ok bool) {
	if r.Op != OpChat && r.Op != OpMessages {
		return nil, false
	}
	doc := gjson.ParseBytes(r.Body)
	if !doc.IsObject() || !doc.Get("messages").IsArray() {
		return nil, false
	}
	body := make([]byte, 0, len(r.Body)+len(prefix)+128)
	body = append(body, '{')
	start, end := 0, 0
	n := 0
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "thinking", "reasoning_effort", "reasoning", "continue_final_message", "add_generation_prompt":
			return true
		}
		if n > 0 {
			body = append(body, ',')
		}
		n++
		body = append(body, k.Raw...)
		body = append(body, ':')
		switch k.Str {
		case "model":
			start = len(body)
			body = append(body, v.Raw...)
			end = len(body)
		case "messages":
			body = appendWithAssistant(body, v, prefix)
		default:
			body = append(body, v.Raw...)
		}
		return true
	})
	if prefix != "" && r.Op == OpChat {
		body = append(body, `,"continue_final_message":true,"add_generation_prompt":false`...)
	}
	body = append(body, '}')
	c = &Request{Op: r.Op, Stream: true, IncludeUsage: r.IncludeUsage, Model: r.Model, Body: body,
		MaxOutputTokens: r.MaxOutputTokens, Native: r.Native}
	if end > start {
		c.ModelStart, c.ModelEnd = start, end
	}
	return c, true
}

// appendWithAssistant appends the messages array msgs with a trailing
// {"role":"assistant","content":prefix} (nothing added for "").
func appendWithAssistant(dst []byte, msgs gjson.Result, prefix string) []byte {
	if prefix == "" {
		return append(dst, msgs.Raw...)
	}
	dst = append(dst, '[')
	n := 0
	msgs.ForEach(func(_, m gjson.Result) bool {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, m.Raw...)
		return true
	})
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"role":"assistant","content":`...)
	dst, _ = openaiwire.Append(dst, &prefix)
	return append(dst, "}]"...)
}

// Structured reports whether r asks for structured output (a chat
// response_format of json_schema or json_object; a Messages
// output_format or output_config.format): such an answer is not free
// text, and a continuation could not be trusted to keep it valid.
func (r *Request) Structured() bool {
	switch r.Op {
	case OpChat:
		switch gjson.GetBytes(r.Body, "response_format.type").Str {
		case "json_schema", "json_object":
			return true
		}
	case OpMessages:
		res := gjson.GetManyBytes(r.Body, "output_format", "output_config.format")
		return (res[0].Exists() && res[0].Type != gjson.Null) || (res[1].Exists() && res[1].Type != gjson.Null)
	}
	return false
}
