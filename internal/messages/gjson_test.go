package messages

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/pricing"
)

// gjsonDecode and gjsonEstimate are Decode and EstimateInputTokens as
// they were written on gjson, before the walks of internal/jsonscan:
// for every body the proxy's check passes, Decode must return the same
// Request (or the same refusal) and the same estimate (FuzzDecode).

func gjsonDecode(body []byte, count bool) (Request, *Error) {
	var r Request
	// body is not modified while doc is in use; strings kept are cloned.
	doc := gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
	if !doc.IsObject() {
		return r, &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "the request body must be a JSON object"}
	}
	var (
		e                         *Error
		hasModel, hasMax, hasMsgs bool
	)
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			hasModel = true
			switch {
			case v.Type != gjson.String:
				e = invalid("model", msgString)
			case v.Str == "":
				e = invalid("model", "String should have at least 1 character")
			default:
				r.Model = strings.Clone(v.Str)
				r.ModelStart, r.ModelEnd = v.Index, v.Index+len(v.Raw)
			}
		case "max_tokens":
			if count {
				break
			}
			hasMax = true
			var n int64
			switch n, e = gInteger("max_tokens", v); {
			case e != nil:
			case n < 1:
				e = invalid("max_tokens", "Input should be greater than or equal to 1")
			case !(v.Num <= pricing.MaxTokens): // 1e999 reads as +Inf
				e = invalid("max_tokens", "Input should be less than or equal to "+strconv.Itoa(pricing.MaxTokens))
			}
			r.MaxTokens = n
		case "messages":
			hasMsgs = true
			e = gCheckMessages(v)
			r.Messages = body[v.Index : v.Index+len(v.Raw)]
		case "system":
			e = gCheckSystem(v)
			if v.Type != gjson.Null {
				r.System = body[v.Index : v.Index+len(v.Raw)]
			}
		case "stream":
			if count {
				break
			}
			switch v.Type {
			case gjson.True, gjson.False:
				r.Stream = v.Type == gjson.True
			case gjson.Null:
			default:
				e = invalid("stream", msgBool)
			}
		case "temperature", "top_p":
			if v.Type != gjson.Number && v.Type != gjson.Null {
				e = invalid(k.Str, msgNumber)
			}
		case "top_k":
			if v.Type != gjson.Null {
				_, e = gInteger("top_k", v)
			}
		case "stop_sequences":
			e = gCheckStopSequences(v)
		case "tools":
			e = gCheckTools(v)
		case "tool_choice":
			e = gCheckToolChoice(v)
		case "metadata":
			e = gCheckMetadata(v, &r)
		case "thinking":
			e = gCheckThinking(v)
		}
		return e == nil
	})
	switch {
	case e != nil:
		return Request{}, e
	case !hasModel:
		return Request{}, invalid("model", msgRequired)
	case !hasMax && !count:
		return Request{}, invalid("max_tokens", msgRequired)
	case !hasMsgs:
		return Request{}, invalid("messages", msgRequired)
	}
	return r, nil
}

// gInteger reads an gInteger field: a JSON number without a fractional
// part (1.0 is 1, as pydantic has it). Values beyond 2^53 are capped.
func gInteger(path string, v gjson.Result) (int64, *Error) {
	if v.Type != gjson.Number {
		return 0, invalid(path, msgInteger)
	}
	if v.Num != math.Trunc(v.Num) {
		return 0, invalid(path, msgFraction)
	}
	const maxExact = 1 << 53
	return int64(max(min(v.Num, maxExact), -maxExact)), nil
}

// gTagError is pydantic's answer to a discriminator it does not know.
func gTagError(path string, tag gjson.Result, expected string) *Error {
	t := tag.Str
	if tag.Type != gjson.String {
		t = tag.Raw
	}
	if len(t) > 100 {
		t = t[:100] + "…"
	}
	return invalid(path, "Input tag '"+t+"' found using 'type' does not match any of the expected tags: "+expected)
}

// gStr checks an optional string field: absent and null pass.
func gStr(l loc, name string, v gjson.Result) *Error {
	if v.Raw != "" && v.Type != gjson.String && v.Type != gjson.Null {
		return invalid(l.field(name), msgString)
	}
	return nil
}

// gRequiredStr checks a required string field.
func gRequiredStr(l loc, name string, v gjson.Result) *Error {
	switch {
	case v.Raw == "":
		return invalid(l.field(name), msgRequired)
	case v.Type != gjson.String:
		return invalid(l.field(name), msgString)
	}
	return nil
}

// gRequiredDict checks a required object field.
func gRequiredDict(l loc, name string, v gjson.Result) *Error {
	switch {
	case v.Raw == "":
		return invalid(l.field(name), msgRequired)
	case !v.IsObject():
		return invalid(l.field(name), msgDict)
	}
	return nil
}

func gCheckMessages(v gjson.Result) *Error {
	if !v.IsArray() {
		return invalid("messages", msgList)
	}
	var e *Error
	n := 0
	v.ForEach(func(_, m gjson.Result) bool {
		e = gCheckMessage(loc{base: "messages"}.at(n), m)
		n++
		return e == nil
	})
	if e != nil {
		return e
	}
	if n == 0 {
		return invalid("messages", "at least one message is required")
	}
	return nil
}

func gCheckMessage(l loc, m gjson.Result) *Error {
	if !m.IsObject() {
		return invalid(l.String(), msgDict)
	}
	// The first of a repeated key counts, as for gjson's Get.
	var role, content gjson.Result
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "role":
			if role.Raw == "" {
				role = v
			}
		case "content":
			if content.Raw == "" {
				content = v
			}
		}
		return true
	})
	if e := gRequiredStr(l, "role", role); e != nil {
		return e
	}
	switch role.Str {
	case "user", "assistant":
	case "system":
		// Claude Code (2.1.33x) sends system turns inside messages (its
		// environment notes), and Anthropic's API takes them: accepted,
		// passed through natively, a system message in translation.
	default:
		return invalid(l.field("role"), "Input should be 'user', 'assistant' or 'system'")
	}
	switch {
	case content.Raw == "":
		return invalid(l.field("content"), msgRequired)
	case content.Type == gjson.String:
		return nil
	case !content.IsArray():
		return invalid(l.field("content"), msgList)
	}
	return gCheckBlocks(l, content, true)
}

// gCheckBlocks checks a list of content blocks at l (a message, or a
// tool_result whose blocks nest is false).
func gCheckBlocks(l loc, list gjson.Result, nest bool) *Error {
	var e *Error
	j := 0
	list.ForEach(func(_, b gjson.Result) bool {
		e = gCheckBlock(l.at(j), b, nest)
		j++
		return e == nil
	})
	return e
}

// gBlock holds the fields of a content gBlock that some check reads, the
// first occurrence of each.
type gBlock struct {
	typ, text, source, id, name, input, toolUseID, content, isError, thinking, signature, data gjson.Result
}

// set records v as the field k when it is one of block's and not yet set.
func (b *gBlock) set(k string, v gjson.Result) {
	var f *gjson.Result
	switch k {
	case "type":
		f = &b.typ
	case "text":
		f = &b.text
	case "source":
		f = &b.source
	case "id":
		f = &b.id
	case "name":
		f = &b.name
	case "input":
		f = &b.input
	case "tool_use_id":
		f = &b.toolUseID
	case "content":
		f = &b.content
	case "is_error":
		f = &b.isError
	case "thinking":
		f = &b.thinking
	case "signature":
		f = &b.signature
	case "data":
		f = &b.data
	default:
		return
	}
	if f.Raw == "" {
		*f = v
	}
}

// gCheckBlock checks one content block: an object with a string type, and
// the required fields of the known types. nest is whether a tool_result's
// content blocks are checked in turn.
func gCheckBlock(l loc, v gjson.Result, nest bool) *Error {
	if !v.IsObject() {
		return invalid(l.String(), msgDict)
	}
	var b gBlock
	v.ForEach(func(k, v gjson.Result) bool {
		b.set(k.Str, v)
		return true
	})
	switch {
	case b.typ.Raw == "":
		return invalid(l.String(), msgNoTag)
	case b.typ.Type != gjson.String:
		return gTagError(l.String(), b.typ, blockTags)
	}
	switch b.typ.Str {
	case "text":
		return gRequiredStr(l, "text", b.text)
	case "image":
		if e := gRequiredDict(l, "source", b.source); e != nil {
			return e
		}
		return gCheckImageSource(l, b.source)
	case "document":
		return gRequiredDict(l, "source", b.source)
	case "tool_use", "server_tool_use":
		if e := gRequiredStr(l, "id", b.id); e != nil {
			return e
		}
		if e := gRequiredStr(l, "name", b.name); e != nil {
			return e
		}
		return gRequiredDict(l, "input", b.input)
	case "tool_result":
		if e := gRequiredStr(l, "tool_use_id", b.toolUseID); e != nil {
			return e
		}
		switch b.isError.Type {
		case gjson.True, gjson.False, gjson.Null:
		default:
			return invalid(l.field("is_error"), msgBool)
		}
		switch {
		case b.content.Raw == "", b.content.Type == gjson.String, b.content.Type == gjson.Null:
		case !b.content.IsArray():
			return invalid(l.field("content"), msgList)
		case nest:
			return gCheckBlocks(l, b.content, false)
		}
	case "thinking":
		if e := gRequiredStr(l, "thinking", b.thinking); e != nil {
			return e
		}
		return gRequiredStr(l, "signature", b.signature)
	case "redacted_thinking":
		return gRequiredStr(l, "data", b.data)
	}
	return nil
}

// gCheckImageSource checks an image's source: base64 needs a media type
// Anthropic takes and the data, url the URL; other source types (file…)
// pass.
func gCheckImageSource(l loc, src gjson.Result) *Error {
	typ := src.Get("type")
	switch {
	case !typ.Exists():
		return invalid(l.field("source"), msgNoTag)
	case typ.Type != gjson.String:
		return gTagError(l.field("source"), typ, "'base64', 'url', 'file'")
	}
	switch typ.Str {
	case "base64":
		mt := src.Get("media_type")
		switch {
		case !mt.Exists():
			return invalid(l.field("source.media_type"), msgRequired)
		case mt.Type != gjson.String:
			return invalid(l.field("source.media_type"), msgString)
		}
		switch mt.Str {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return invalid(l.field("source.media_type"), "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'")
		}
		if d := src.Get("data"); d.Type != gjson.String {
			if !d.Exists() {
				return invalid(l.field("source.data"), msgRequired)
			}
			return invalid(l.field("source.data"), msgString)
		}
	case "url":
		if u := src.Get("url"); u.Type != gjson.String {
			if !u.Exists() {
				return invalid(l.field("source.url"), msgRequired)
			}
			return invalid(l.field("source.url"), msgString)
		}
	}
	return nil
}

// gCheckSystem checks system: a string or a list of text blocks.
func gCheckSystem(v gjson.Result) *Error {
	switch {
	case v.Type == gjson.String, v.Type == gjson.Null:
		return nil
	case !v.IsArray():
		return invalid("system", msgList)
	}
	var e *Error
	j := 0
	v.ForEach(func(_, b gjson.Result) bool {
		l := loc{base: "system"}.at(j)
		j++
		if !b.IsObject() {
			e = invalid(l.String(), msgDict)
			return false
		}
		typ := b.Get("type")
		switch {
		case !typ.Exists():
			e = invalid(l.field("type"), msgRequired)
		case typ.Type != gjson.String || typ.Str != "text":
			e = invalid(l.field("type"), "Input should be 'text'")
		default:
			e = gRequiredStr(l, "text", b.Get("text"))
		}
		return e == nil
	})
	return e
}

func gCheckStopSequences(v gjson.Result) *Error {
	switch {
	case v.Type == gjson.Null:
		return nil
	case !v.IsArray():
		return invalid("stop_sequences", msgList)
	}
	var e *Error
	i := 0
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			e = invalid("stop_sequences."+strconv.Itoa(i), msgString)
		}
		i++
		return e == nil
	})
	return e
}

// gCheckTools checks tools: a custom tool (no type, or "custom") needs a
// name Anthropic takes and an input_schema object; a tool of another
// type is a server tool (web_search_20250305, bash_20250124…) whose
// fields are its own.
func gCheckTools(v gjson.Result) *Error {
	switch {
	case v.Type == gjson.Null:
		return nil
	case !v.IsArray():
		return invalid("tools", msgList)
	}
	var e *Error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		e = gCheckTool(loc{base: "tools"}.at(i), t)
		i++
		return e == nil
	})
	return e
}

func gCheckTool(l loc, t gjson.Result) *Error {
	if !t.IsObject() {
		return invalid(l.String(), msgDict)
	}
	var typ, name, desc, schema gjson.Result
	t.ForEach(func(k, v gjson.Result) bool {
		var f *gjson.Result
		switch k.Str {
		case "type":
			f = &typ
		case "name":
			f = &name
		case "description":
			f = &desc
		case "input_schema":
			f = &schema
		default:
			return true
		}
		if f.Raw == "" {
			*f = v
		}
		return true
	})
	switch {
	case typ.Raw == "", typ.Type == gjson.Null:
	case typ.Type != gjson.String:
		return invalid(l.field("type"), msgString)
	case typ.Str != "custom":
		return nil // a server tool
	}
	if e := gRequiredStr(l, "name", name); e != nil {
		return e
	}
	if !toolName(name.Str) {
		return invalid(l.field("name"), "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")
	}
	if e := gStr(l, "description", desc); e != nil {
		return e
	}
	return gRequiredDict(l, "input_schema", schema)
}

func gCheckToolChoice(v gjson.Result) *Error {
	switch {
	case v.Type == gjson.Null:
		return nil
	case !v.IsObject():
		return invalid("tool_choice", msgDict)
	}
	typ := v.Get("type")
	switch {
	case !typ.Exists():
		return invalid("tool_choice", msgNoTag)
	case typ.Type != gjson.String:
		return gTagError("tool_choice", typ, choiceTags)
	}
	switch typ.Str {
	case "auto", "any", "none":
	case "tool":
		n := v.Get("name")
		switch {
		case !n.Exists():
			return invalid("tool_choice.name", msgRequired)
		case n.Type != gjson.String:
			return invalid("tool_choice.name", msgString)
		}
	default:
		return gTagError("tool_choice", typ, choiceTags)
	}
	switch v.Get("disable_parallel_tool_use").Type {
	case gjson.True, gjson.False, gjson.Null:
	default:
		return invalid("tool_choice.disable_parallel_tool_use", msgBool)
	}
	return nil
}

func gCheckMetadata(v gjson.Result, r *Request) *Error {
	switch {
	case v.Type == gjson.Null:
		return nil
	case !v.IsObject():
		return invalid("metadata", msgDict)
	}
	switch u := v.Get("user_id"); u.Type {
	case gjson.String:
		r.UserID = strings.Clone(u.Str)
	case gjson.Null:
	default:
		return invalid("metadata.user_id", msgString)
	}
	return nil
}

// gCheckThinking checks thinking's shape only (an object with a string
// type): which types and budgets a model takes is its own business.
func gCheckThinking(v gjson.Result) *Error {
	switch {
	case v.Type == gjson.Null:
		return nil
	case !v.IsObject():
		return invalid("thinking", msgDict)
	}
	switch typ := v.Get("type"); {
	case !typ.Exists():
		return invalid("thinking", msgNoTag)
	case typ.Type != gjson.String:
		return gTagError("thinking", typ, "'enabled', 'disabled', 'adaptive'")
	}
	return nil
}

// gjsonEstimate is the router's own estimate of a Messages
// request's input tokens (count_tokens for a target that cannot count):
// about one token per four bytes of the system prompt, the messages'
// text, tool_use inputs, tool_result contents and tool definitions, plus
// imageTokens an image; at least 1. Earlier turns' thinking is not
// counted (Anthropic drops it from the context). String lengths are taken
// as written in the JSON, escapes included, which errs slightly high.
// body is a checked request (Decode or DecodeCount passed).
func gjsonEstimate(body []byte) int64 {
	doc := gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
	var c gCounter
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "system":
			c.content(v)
		case "messages":
			v.ForEach(func(_, m gjson.Result) bool {
				c.content(m.Get("content"))
				return true
			})
		case "tools":
			v.ForEach(func(_, t gjson.Result) bool {
				c.bytes += int64(len(t.Raw))
				return true
			})
		}
		return true
	})
	return max(1, (c.bytes+bytesPerToken-1)/bytesPerToken+c.tokens)
}

// gCounter adds up the bytes of text and the tokens of images.
type gCounter struct {
	bytes, tokens int64
}

// text counts a JSON string without its quotes.
func (c *gCounter) text(v gjson.Result) {
	if v.Type == gjson.String {
		c.bytes += int64(max(len(v.Raw)-2, 0))
	}
}

// content counts a string or a list of blocks.
func (c *gCounter) content(v gjson.Result) {
	if v.Type == gjson.String {
		c.text(v)
		return
	}
	v.ForEach(func(_, b gjson.Result) bool {
		c.block(b)
		return true
	})
}

func (c *gCounter) block(b gjson.Result) {
	switch b.Get("type").Str {
	case "thinking", "redacted_thinking":
	case "image":
		c.tokens += imageTokens
	case "tool_use", "server_tool_use":
		c.text(b.Get("name"))
		c.bytes += int64(len(b.Get("input").Raw))
	case "tool_result":
		if r := b.Get("content"); r.Type == gjson.String {
			c.text(r)
		} else {
			r.ForEach(func(_, inner gjson.Result) bool {
				if inner.Get("type").Str == "image" {
					c.tokens += imageTokens
				} else {
					c.text(inner.Get("text"))
				}
				return true
			})
		}
	case "document":
		if src := b.Get("source"); src.Get("type").Str == "text" {
			c.text(src.Get("data"))
		}
	default:
		c.text(b.Get("text"))
	}
}
