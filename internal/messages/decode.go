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

// Request is what the router reads from a checked Messages request.
// Everything else in the body passes through untouched.
type Request struct {
	// Model is the model the client asked for, never ""; ModelStart and
	// ModelEnd delimit its JSON string literal (quotes included) in the
	// body, for swapping it.
	Model                string
	ModelStart, ModelEnd int
	// Stream is stream (false when absent or null, and for count_tokens).
	Stream bool
	// MaxTokens is max_tokens, at least 1 (0 for count_tokens).
	MaxTokens int64
	// UserID is metadata.user_id, "" when absent or null.
	UserID string
	// System and Messages are system and messages as they are in the body
	// (they alias it; System is nil when absent): what the conversation's
	// identity is read from when nothing names it (internal/affinity).
	System, Messages []byte
}

// Decode checks body as Anthropic checks a Messages request and reads the
// fields the router needs. body has been validated as one JSON object
// (syntax, UTF-8, depth, distinct top-level keys) by the caller; it must
// not change while Decode runs. A refusal is a 400 invalid_request_error
// naming the field path.
//
// Checked: model (a non-empty string), max_tokens (an integer from 1 to
// pricing.MaxTokens), messages (a non-empty list of {role:
// user|assistant, content: a string or a list of blocks}), the known
// block types' required fields,
// system (a string or text blocks), stream, temperature, top_p, top_k,
// stop_sequences, tools (a custom tool's name and input_schema),
// tool_choice (auto|any|tool|none), metadata.user_id and thinking, each
// by its type. Unknown top-level fields and block types are accepted.
func Decode(body []byte) (Request, *Error) { return decode(body, false) }

// DecodeCount is Decode for POST /v1/messages/count_tokens: max_tokens is
// not required, and max_tokens and stream are not read (a client may send
// the same body it would send to /v1/messages).
func DecodeCount(body []byte) (Request, *Error) { return decode(body, true) }

func decode(body []byte, count bool) (Request, *Error) {
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
			switch n, e = integer("max_tokens", v); {
			case e != nil:
			case n < 1:
				e = invalid("max_tokens", "Input should be greater than or equal to 1")
			case !(v.Num <= pricing.MaxTokens): // 1e999 reads as +Inf
				e = invalid("max_tokens", "Input should be less than or equal to "+strconv.Itoa(pricing.MaxTokens))
			}
			r.MaxTokens = n
		case "messages":
			hasMsgs = true
			e = checkMessages(v)
			r.Messages = body[v.Index : v.Index+len(v.Raw)]
		case "system":
			e = checkSystem(v)
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
				_, e = integer("top_k", v)
			}
		case "stop_sequences":
			e = checkStopSequences(v)
		case "tools":
			e = checkTools(v)
		case "tool_choice":
			e = checkToolChoice(v)
		case "metadata":
			e = checkMetadata(v, &r)
		case "thinking":
			e = checkThinking(v)
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

// integer reads an integer field: a JSON number without a fractional
// part (1.0 is 1, as pydantic has it). Values beyond 2^53 are capped.
func integer(path string, v gjson.Result) (int64, *Error) {
	if v.Type != gjson.Number {
		return 0, invalid(path, msgInteger)
	}
	if v.Num != math.Trunc(v.Num) {
		return 0, invalid(path, msgFraction)
	}
	const maxExact = 1 << 53
	return int64(max(min(v.Num, maxExact), -maxExact)), nil
}

// loc is where a value sits: base, then up to three indices, the second
// and third inside "content" ("messages.1.content.0.content.2"). It is
// made into a string only for an error, so a walk allocates nothing.
type loc struct {
	base string
	n    int
	idx  [3]int
}

// at is l with one index more (the last one replaced past three).
func (l loc) at(i int) loc {
	if l.n == len(l.idx) {
		l.n--
	}
	l.idx[l.n] = i
	l.n++
	return l
}

func (l loc) String() string {
	b := make([]byte, 0, 48)
	b = append(b, l.base...)
	for k := range l.n {
		if k > 0 {
			b = append(b, ".content"...)
		}
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(l.idx[k]), 10)
	}
	return string(b)
}

// field is the path of one of l's fields.
func (l loc) field(name string) string { return l.String() + "." + name }

// tagError is pydantic's answer to a discriminator it does not know.
func tagError(path string, tag gjson.Result, expected string) *Error {
	t := tag.Str
	if tag.Type != gjson.String {
		t = tag.Raw
	}
	if len(t) > 100 {
		t = t[:100] + "…"
	}
	return invalid(path, "Input tag '"+t+"' found using 'type' does not match any of the expected tags: "+expected)
}

// str checks an optional string field: absent and null pass.
func str(l loc, name string, v gjson.Result) *Error {
	if v.Raw != "" && v.Type != gjson.String && v.Type != gjson.Null {
		return invalid(l.field(name), msgString)
	}
	return nil
}

// requiredStr checks a required string field.
func requiredStr(l loc, name string, v gjson.Result) *Error {
	switch {
	case v.Raw == "":
		return invalid(l.field(name), msgRequired)
	case v.Type != gjson.String:
		return invalid(l.field(name), msgString)
	}
	return nil
}

// requiredDict checks a required object field.
func requiredDict(l loc, name string, v gjson.Result) *Error {
	switch {
	case v.Raw == "":
		return invalid(l.field(name), msgRequired)
	case !v.IsObject():
		return invalid(l.field(name), msgDict)
	}
	return nil
}

func checkMessages(v gjson.Result) *Error {
	if !v.IsArray() {
		return invalid("messages", msgList)
	}
	var e *Error
	n := 0
	v.ForEach(func(_, m gjson.Result) bool {
		e = checkMessage(loc{base: "messages"}.at(n), m)
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

func checkMessage(l loc, m gjson.Result) *Error {
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
	if e := requiredStr(l, "role", role); e != nil {
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
	return checkBlocks(l, content, true)
}

// checkBlocks checks a list of content blocks at l (a message, or a
// tool_result whose blocks nest is false).
func checkBlocks(l loc, list gjson.Result, nest bool) *Error {
	var e *Error
	j := 0
	list.ForEach(func(_, b gjson.Result) bool {
		e = checkBlock(l.at(j), b, nest)
		j++
		return e == nil
	})
	return e
}

// blockTags are the block types Anthropic's message says it expects; a
// type outside them is accepted all the same (a newer block).
const blockTags = "'text', 'image', 'document', 'search_result', 'thinking', 'redacted_thinking', 'tool_use', 'tool_result', 'server_tool_use', 'web_search_tool_result'"

// block holds the fields of a content block that some check reads, the
// first occurrence of each.
type block struct {
	typ, text, source, id, name, input, toolUseID, content, isError, thinking, signature, data gjson.Result
}

// set records v as the field k when it is one of block's and not yet set.
func (b *block) set(k string, v gjson.Result) {
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

// checkBlock checks one content block: an object with a string type, and
// the required fields of the known types. nest is whether a tool_result's
// content blocks are checked in turn.
func checkBlock(l loc, v gjson.Result, nest bool) *Error {
	if !v.IsObject() {
		return invalid(l.String(), msgDict)
	}
	var b block
	v.ForEach(func(k, v gjson.Result) bool {
		b.set(k.Str, v)
		return true
	})
	switch {
	case b.typ.Raw == "":
		return invalid(l.String(), msgNoTag)
	case b.typ.Type != gjson.String:
		return tagError(l.String(), b.typ, blockTags)
	}
	switch b.typ.Str {
	case "text":
		return requiredStr(l, "text", b.text)
	case "image":
		if e := requiredDict(l, "source", b.source); e != nil {
			return e
		}
		return checkImageSource(l, b.source)
	case "document":
		return requiredDict(l, "source", b.source)
	case "tool_use", "server_tool_use":
		if e := requiredStr(l, "id", b.id); e != nil {
			return e
		}
		if e := requiredStr(l, "name", b.name); e != nil {
			return e
		}
		return requiredDict(l, "input", b.input)
	case "tool_result":
		if e := requiredStr(l, "tool_use_id", b.toolUseID); e != nil {
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
			return checkBlocks(l, b.content, false)
		}
	case "thinking":
		if e := requiredStr(l, "thinking", b.thinking); e != nil {
			return e
		}
		return requiredStr(l, "signature", b.signature)
	case "redacted_thinking":
		return requiredStr(l, "data", b.data)
	}
	return nil
}

// checkImageSource checks an image's source: base64 needs a media type
// Anthropic takes and the data, url the URL; other source types (file…)
// pass.
func checkImageSource(l loc, src gjson.Result) *Error {
	typ := src.Get("type")
	switch {
	case !typ.Exists():
		return invalid(l.field("source"), msgNoTag)
	case typ.Type != gjson.String:
		return tagError(l.field("source"), typ, "'base64', 'url', 'file'")
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

// checkSystem checks system: a string or a list of text blocks.
func checkSystem(v gjson.Result) *Error {
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
			e = requiredStr(l, "text", b.Get("text"))
		}
		return e == nil
	})
	return e
}

func checkStopSequences(v gjson.Result) *Error {
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

// checkTools checks tools: a custom tool (no type, or "custom") needs a
// name Anthropic takes and an input_schema object; a tool of another
// type is a server tool (web_search_20250305, bash_20250124…) whose
// fields are its own.
func checkTools(v gjson.Result) *Error {
	switch {
	case v.Type == gjson.Null:
		return nil
	case !v.IsArray():
		return invalid("tools", msgList)
	}
	var e *Error
	i := 0
	v.ForEach(func(_, t gjson.Result) bool {
		e = checkTool(loc{base: "tools"}.at(i), t)
		i++
		return e == nil
	})
	return e
}

func checkTool(l loc, t gjson.Result) *Error {
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
	if e := requiredStr(l, "name", name); e != nil {
		return e
	}
	if !toolName(name.Str) {
		return invalid(l.field("name"), "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")
	}
	if e := str(l, "description", desc); e != nil {
		return e
	}
	return requiredDict(l, "input_schema", schema)
}

// toolName reports whether s is a name Anthropic takes for a custom tool:
// 1 to 128 of [a-zA-Z0-9_-].
func toolName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !idByte(s[i]) {
			return false
		}
	}
	return true
}

// idByte reports whether c may appear in a tool name or a tool_use id.
func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

const choiceTags = "'auto', 'any', 'tool', 'none'"

func checkToolChoice(v gjson.Result) *Error {
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
		return tagError("tool_choice", typ, choiceTags)
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
		return tagError("tool_choice", typ, choiceTags)
	}
	switch v.Get("disable_parallel_tool_use").Type {
	case gjson.True, gjson.False, gjson.Null:
	default:
		return invalid("tool_choice.disable_parallel_tool_use", msgBool)
	}
	return nil
}

func checkMetadata(v gjson.Result, r *Request) *Error {
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

// checkThinking checks thinking's shape only (an object with a string
// type): which types and budgets a model takes is its own business.
func checkThinking(v gjson.Result) *Error {
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
		return tagError("thinking", typ, "'enabled', 'disabled', 'adaptive'")
	}
	return nil
}
