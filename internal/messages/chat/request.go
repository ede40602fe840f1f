package chat

import (
	"math"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/messages"
)

// Translation is one Messages request translated onto chat completions:
// the body to send, and what turns the provider's chat answer or chat
// stream back into the Messages API's.
type Translation struct {
	// Body is the OpenAI chat completions request, in memory of its own
	// (not the client's body). Its "model" is the client's model name,
	// between ModelStart and ModelEnd (the JSON string, quotes included),
	// for the adapters to swap.
	Body                 []byte
	ModelStart, ModelEnd int
	// Stream is whether the client asked for a stream; Body then asks for
	// one with its usage.
	Stream bool

	model    string // the client's model name: the answer's model
	estimate int64  // the request's input tokens as the router estimates them (streams only)
}

// Translate turns a checked Messages request (messages.Decode passed) into
// a chat completions request. Nothing the request holds is an error: what
// chat completions cannot carry is dropped. The only refusal is a body
// that is not a JSON object.
func Translate(body []byte, req messages.Request) (*Translation, *messages.Error) {
	// body is not modified while doc is in use; nothing read from it is
	// kept past Translate but in the bytes it writes.
	doc := gjson.Parse(unsafeString(body))
	if !doc.IsObject() {
		return nil, &messages.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "the request body must be a JSON object"}
	}
	var f top
	doc.ForEach(func(k, v gjson.Result) bool {
		f.set(k.Str, v)
		return true
	})
	t := &translator{}
	// The translation is about the size of the request.
	b := make([]byte, 0, len(body)+256)
	b = append(b, `{"model":`...)
	start := len(b)
	b = str(b, req.Model)
	end := len(b)
	b = append(b, `,"messages":[`...)
	b = t.system(b, f.system)
	f.messages.ForEach(func(_, m gjson.Result) bool {
		b = t.message(b, m)
		return true
	})
	b = append(b, ']')
	b = t.tools(b, f.tools, f.toolChoice)
	b = number(b, "temperature", f.temperature)
	b = number(b, "top_p", f.topP)
	if req.MaxTokens > 0 {
		// max_tokens, not max_completion_tokens: OpenAI-compatible servers
		// take it widely, and the adapters that translate read both.
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, req.MaxTokens, 10)
	}
	b = t.stop(b, f.stopSequences)
	tr := &Translation{ModelStart: start, ModelEnd: end, Stream: req.Stream, model: req.Model}
	if req.Stream {
		// Chat upstreams report a stream's usage only when asked.
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
		tr.estimate = messages.EstimateInputTokens(body)
	}
	tr.Body = append(b, '}')
	return tr, nil
}

// top holds the top-level fields Translate reads, the first of each.
// Everything else (top_k, thinking, metadata, service_tier,
// context_management, output_config, container, mcp_servers…) has no
// chat completions equivalent every target takes, and is dropped;
// metadata.user_id identifies the client's device and session to
// Anthropic and is of no use to another provider.
type top struct {
	system, messages, tools, toolChoice, temperature, topP, stopSequences gjson.Result
}

func (f *top) set(k string, v gjson.Result) {
	var p *gjson.Result
	switch k {
	case "system":
		p = &f.system
	case "messages":
		p = &f.messages
	case "tools":
		p = &f.tools
	case "tool_choice":
		p = &f.toolChoice
	case "temperature":
		p = &f.temperature
	case "top_p":
		p = &f.topP
	case "stop_sequences":
		p = &f.stopSequences
	default:
		return
	}
	if p.Raw == "" {
		*p = v
	}
}

// translator writes the chat request's parts.
type translator struct {
	n int // messages written
}

// next appends the separator before a message.
func (t *translator) next(b []byte) []byte {
	if t.n > 0 {
		b = append(b, ',')
	}
	t.n++
	return b
}

// textOf is a block's text: its string "text" field. Text blocks, and
// blocks of types this package does not know, keep their text this way;
// thinking, tool_use and the server tools' blocks have none.
func textOf(blk gjson.Result) (string, bool) {
	v := blk.Get("text")
	return v.Str, v.Type == gjson.String
}

// system appends the system message: the string, or the text blocks
// joined with a blank line in their order (cache_control dropped). An
// empty system prompt is no message.
func (t *translator) system(b []byte, sys gjson.Result) []byte {
	switch {
	case sys.Type == gjson.String:
		if sys.Str == "" {
			return b
		}
		b = t.next(b)
		b = append(b, `{"role":"system","content":`...)
		b = str(b, sys.Str)
		return append(b, '}')
	case !sys.IsArray():
		return b
	}
	mark, n := len(b), t.n
	b = t.next(b)
	b = append(b, `{"role":"system","content":"`...)
	texts := 0
	sys.ForEach(func(_, blk gjson.Result) bool {
		if s, ok := textOf(blk); ok && s != "" {
			if texts > 0 {
				b = append(b, `\n\n`...)
			}
			b = strPart(b, s)
			texts++
		}
		return true
	})
	if texts == 0 {
		t.n = n
		return b[:mark]
	}
	return append(b, `"}`...)
}

// message appends one turn as chat messages.
func (t *translator) message(b []byte, m gjson.Result) []byte {
	role := m.Get("role").Str
	content := m.Get("content")
	switch role {
	case "user", "assistant":
	case "system":
		// A system turn inside messages (Claude Code's): a system message
		// where it stands.
		return t.system(b, content)
	default:
		return b // messages.Decode refuses it
	}
	switch {
	case content.Type == gjson.String:
		b = t.next(b)
		b = append(b, `{"role":"`...)
		b = append(b, role...)
		b = append(b, `","content":`...)
		b = str(b, content.Str)
		return append(b, '}')
	case !content.IsArray():
		return b
	case role == "user":
		return t.user(b, content)
	}
	return t.assistant(b, content)
}

// Kinds of a user turn's block (userPart).
const (
	partNone = iota
	partText
	partImage
)

// userPart classifies a user turn's block other than a tool result:
// text (a text block, a text document, an unknown block's text), an
// image chat can take (base64 or URL), or nothing chat can carry.
func userPart(blk gjson.Result) (kind int, text string) {
	switch blk.Get("type").Str {
	case "image":
		src := blk.Get("source")
		switch src.Get("type").Str {
		case "base64":
			if src.Get("media_type").Type == gjson.String && src.Get("data").Type == gjson.String {
				return partImage, ""
			}
		case "url":
			if src.Get("url").Type == gjson.String {
				return partImage, ""
			}
		}
		return partNone, ""
	case "document":
		if src := blk.Get("source"); src.Get("type").Str == "text" {
			if d := src.Get("data"); d.Type == gjson.String {
				return partText, d.Str
			}
		}
		return partNone, ""
	case "tool_result":
		return partNone, ""
	}
	if s, ok := textOf(blk); ok {
		return partText, s
	}
	return partNone, ""
}

// user appends a user turn of blocks: each tool_result first, as a
// "tool" message (chat needs a call's results right after the assistant
// turn that made it), then one user message of the rest, its content a
// string when it is one text, parts otherwise. A turn of nothing chat can
// carry is an empty user message, so the turns still alternate.
func (t *translator) user(b []byte, blocks gjson.Result) []byte {
	results, parts, texts := 0, 0, 0
	blocks.ForEach(func(_, blk gjson.Result) bool {
		if blk.Get("type").Str == "tool_result" {
			b = t.toolResult(b, blk)
			results++
			return true
		}
		switch k, _ := userPart(blk); k {
		case partText:
			parts++
			texts++
		case partImage:
			parts++
		}
		return true
	})
	if parts == 0 {
		if results == 0 {
			b = t.next(b)
			b = append(b, `{"role":"user","content":""}`...)
		}
		return b
	}
	b = t.next(b)
	b = append(b, `{"role":"user","content":`...)
	if parts == 1 && texts == 1 {
		blocks.ForEach(func(_, blk gjson.Result) bool {
			k, s := userPart(blk)
			if k == partText {
				b = str(b, s)
				return false
			}
			return true
		})
		return append(b, '}')
	}
	b = append(b, '[')
	n := 0
	blocks.ForEach(func(_, blk gjson.Result) bool {
		k, s := userPart(blk)
		if k == partNone {
			return true
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		if k == partText {
			b = append(b, `{"type":"text","text":`...)
			b = str(b, s)
			b = append(b, '}')
			return true
		}
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		b = t.imageURL(b, blk.Get("source"))
		b = append(b, "}}"...)
		return true
	})
	return append(b, "]}"...)
}

// imageURL appends an image source as chat's image URL: a base64 source
// as a data: URL, a URL source as it is.
func (t *translator) imageURL(b []byte, src gjson.Result) []byte {
	if src.Get("type").Str == "url" {
		return str(b, src.Get("url").Str)
	}
	b = append(b, `"data:`...)
	b = strPart(b, src.Get("media_type").Str)
	b = append(b, ";base64,"...)
	b = strPart(b, src.Get("data").Str)
	return append(b, '"')
}

// toolResult appends a tool_result as a "tool" message: string content
// as it is, block content's texts joined by newlines (images dropped:
// a tool message is text). is_error has no chat equivalent; the text
// says what went wrong.
func (t *translator) toolResult(b []byte, blk gjson.Result) []byte {
	b = t.next(b)
	b = append(b, `{"role":"tool","tool_call_id":`...)
	b = str(b, blk.Get("tool_use_id").Str)
	b = append(b, `,"content":`...)
	c := blk.Get("content")
	if c.Type == gjson.String {
		b = str(b, c.Str)
		return append(b, '}')
	}
	b = append(b, '"')
	n := 0
	c.ForEach(func(_, inner gjson.Result) bool {
		if s, ok := textOf(inner); ok {
			if n > 0 {
				b = append(b, `\n`...)
			}
			b = strPart(b, s)
			n++
		}
		return true
	})
	return append(b, `"}`...)
}

// assistant appends an assistant turn of blocks: its texts joined (as
// they are: text blocks split by citations are one text), null when it
// is only tool calls; its tool_use blocks as tool_calls, arguments the
// JSON of their input. Thinking is dropped (its signature means nothing
// to another provider).
func (t *translator) assistant(b []byte, blocks gjson.Result) []byte {
	b = t.next(b)
	b = append(b, `{"role":"assistant","content":"`...)
	mark := len(b) - 1 // the content's opening quote
	texts, calls := 0, 0
	blocks.ForEach(func(_, blk gjson.Result) bool {
		if blk.Get("type").Str == "tool_use" {
			calls++
		} else if s, ok := textOf(blk); ok && s != "" {
			b = strPart(b, s)
			texts++
		}
		return true
	})
	b = append(b, '"')
	if texts == 0 && calls > 0 {
		b = append(b[:mark], "null"...)
	}
	if calls == 0 {
		return append(b, '}')
	}
	b = append(b, `,"tool_calls":[`...)
	n := 0
	blocks.ForEach(func(_, blk gjson.Result) bool {
		if blk.Get("type").Str != "tool_use" {
			return true
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"id":`...)
		b = str(b, blk.Get("id").Str)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = str(b, blk.Get("name").Str)
		b = append(b, `,"arguments":`...)
		input := blk.Get("input")
		if !input.IsObject() {
			input.Raw = "{}"
		}
		b = str(b, input.Raw)
		b = append(b, "}}"...)
		return true
	})
	return append(b, "]}"...)
}

// tool holds the fields of a tool Translate reads, the first of each
// (one pass over the tool: Get would scan it once a field).
type tool struct {
	typ, name, description, schema gjson.Result
}

func readTool(v gjson.Result) tool {
	var t tool
	v.ForEach(func(k, v gjson.Result) bool {
		var p *gjson.Result
		switch k.Str {
		case "type":
			p = &t.typ
		case "name":
			p = &t.name
		case "description":
			p = &t.description
		case "input_schema":
			p = &t.schema
		default:
			return true
		}
		if p.Raw == "" {
			*p = v
		}
		return true
	})
	return t
}

// function reports whether t is a custom tool (no type, or "custom")
// with a name: the only kind chat can declare. Server tools
// (web_search_20250305, bash_20250124…) run at Anthropic, or at the
// client for Anthropic's schema, and are dropped.
func (t *tool) function() bool {
	custom := t.typ.Type == gjson.Null || t.typ.Type == gjson.String && t.typ.Str == "custom"
	return custom && t.name.Type == gjson.String && t.name.Str != ""
}

// emptySchema is the parameters of a tool whose input_schema cannot be
// copied.
const emptySchema = `{"type":"object","properties":{}}`

// tools appends the custom tools as functions and tool_choice: auto →
// "auto", any → "required", none → "none", tool → that function ("auto"
// when it is not among them), disable_parallel_tool_use →
// parallel_tool_calls false. Without a function neither is sent (chat
// refuses a tool_choice without tools).
func (t *translator) tools(b []byte, tools, choice gjson.Result) []byte {
	n := 0
	forced := ""
	if choice.Get("type").Str == "tool" {
		forced = choice.Get("name").Str
	}
	found := false
	tools.ForEach(func(_, v gjson.Result) bool {
		tl := readTool(v)
		if !tl.function() {
			return true
		}
		if n == 0 {
			b = append(b, `,"tools":[`...)
		} else {
			b = append(b, ',')
		}
		n++
		found = found || tl.name.Str == forced
		b = append(b, `{"type":"function","function":{"name":`...)
		b = str(b, tl.name.Str)
		if d := tl.description; d.Type == gjson.String && d.Str != "" {
			b = append(b, `,"description":`...)
			b = str(b, d.Str)
		}
		b = append(b, `,"parameters":`...)
		// Copied raw only when it is an object that is valid JSON (it is,
		// in a body the proxy checked).
		if s := tl.schema; s.IsObject() && jsoncheck.Valid(unsafeBytes(s.Raw)) {
			b = append(b, s.Raw...)
		} else {
			b = append(b, emptySchema...)
		}
		b = append(b, "}}"...)
		return true
	})
	if n == 0 {
		return b
	}
	b = append(b, ']')
	switch choice.Get("type").Str {
	case "auto":
		b = append(b, `,"tool_choice":"auto"`...)
	case "any":
		b = append(b, `,"tool_choice":"required"`...)
	case "none":
		b = append(b, `,"tool_choice":"none"`...)
	case "tool":
		if !found {
			b = append(b, `,"tool_choice":"auto"`...)
			break
		}
		b = append(b, `,"tool_choice":{"type":"function","function":{"name":`...)
		b = str(b, forced)
		b = append(b, "}}"...)
	}
	if choice.Get("disable_parallel_tool_use").Type == gjson.True {
		b = append(b, `,"parallel_tool_calls":false`...)
	}
	return b
}

// stop appends stop_sequences as stop, an array of strings.
func (t *translator) stop(b []byte, seqs gjson.Result) []byte {
	n := 0
	seqs.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			return true
		}
		if n == 0 {
			b = append(b, `,"stop":[`...)
		} else {
			b = append(b, ',')
		}
		n++
		b = str(b, s.Str)
		return true
	})
	if n > 0 {
		b = append(b, ']')
	}
	return b
}

// number appends a number field as chat's, when v is a finite number.
func number(b []byte, key string, v gjson.Result) []byte {
	if v.Type != gjson.Number || math.IsInf(v.Num, 0) || math.IsNaN(v.Num) {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendFloat(b, v.Num, 'g', -1, 64)
}
