package messages

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"unsafe"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
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

// Form is a checked request as one walk of its body reads it: the
// Request, what a translation reads (internal/messages/chat) and the
// token estimate. The router's readers share it: nothing reads the body
// again.
type Form struct {
	Request
	// Tools, ToolChoice, Temperature, TopP and StopSequences are those
	// fields' JSON texts as they are in the body (they alias it), nil when
	// absent (Tools also when null).
	Tools, ToolChoice, Temperature, TopP, StopSequences []byte
	// InputTokens is EstimateInputTokens of the body.
	InputTokens int64
}

// Decode checks body as Anthropic checks a Messages request and reads the
// fields the router needs, in one walk that also makes the bounded check
// (jsonscan's: syntax, UTF-8, depth, distinct top-level keys): a body the
// check refuses is refused, but not said why, since the walk may meet a
// problem of the request's first; the caller asks the check (intake.Check)
// on any refusal, and answers its refusal first. body must not change
// while Decode runs. A refusal is a 400 invalid_request_error naming the
// field path.
//
// Checked: model (a non-empty string), max_tokens (an integer from 1 to
// pricing.MaxTokens), messages (a non-empty list of {role:
// user|assistant, content: a string or a list of blocks}), the known
// block types' required fields,
// system (a string or text blocks), stream, temperature, top_p, top_k,
// stop_sequences, tools (a custom tool's name and input_schema),
// tool_choice (auto|any|tool|none), metadata.user_id and thinking, each
// by its type. Unknown top-level fields and block types are accepted.
func Decode(body []byte) (Request, *Error) {
	f, e := decode(body, false, true)
	return f.Request, e
}

// DecodeForm is Decode that returns the whole of its walk.
func DecodeForm(body []byte) (Form, *Error) { return decode(body, false, true) }

// DecodeCount is Decode for POST /v1/messages/count_tokens: max_tokens is
// not required, and max_tokens and stream are not read (a client may send
// the same body it would send to /v1/messages).
func DecodeCount(body []byte) (Request, *Error) {
	f, e := decode(body, true, true)
	return f.Request, e
}

// DecodeCountForm is DecodeCount that returns the whole of its walk.
func DecodeCountForm(body []byte) (Form, *Error) { return decode(body, true, true) }

// decode is the walk of Decode and DecodeCount (count); checked is
// whether it checks the body as it goes (jsonscan.Checked), which
// the tests turn off to compare the two walks.
func decode(body []byte, count, checked bool) (Form, *Error) {
	var r Form
	// body is not modified while s is in use; strings kept are cloned.
	s := unsafe.String(unsafe.SliceData(body), len(body))
	i := jsonscan.Space(s, 0)
	if i >= len(s) || s[i] != '{' {
		return r, &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "the request body must be a JSON object"}
	}
	var (
		e                         *Error
		c                         counter
		hasModel, hasMax, hasMsgs bool
	)
	// One walk of the body: the containers that hold most of it
	// (messages, tools) are walked where they stand, not skipped first;
	// the bounded check is made by the same walk.
	var w jsonscan.Doc
	if checked {
		w.Start(s)
	} else {
		w.Walker = jsonscan.Walk(s, i)
	}
	for e == nil && w.Member() {
		k, at := w.Key(), w.At()
		switch k {
		case "messages":
			hasMsgs = true
			var end int
			end, e = checkMessages(&w.Walker, &c)
			if e == nil {
				r.Messages = body[at:end]
				w.Resume(end)
			}
			continue
		case "tools":
			var end int
			end, e = checkTools(&w.Walker, &c)
			if e == nil {
				if s[at] != 'n' {
					r.Tools = body[at:end]
				}
				w.Resume(end)
			}
			continue
		}
		w.Skip()
		v := w.Val()
		if v == "" {
			break // not JSON: refused below
		}
		switch k {
		case "model":
			hasModel = true
			switch m := jsonscan.Unquote(v); {
			case !jsonscan.IsString(v):
				e = invalid("model", msgString)
			case m == "":
				e = invalid("model", "String should have at least 1 character")
			default:
				r.Model = strings.Clone(m)
				r.ModelStart, r.ModelEnd = at, at+len(v)
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
			case !(number(v) <= pricing.MaxTokens): // 1e999 reads as +Inf
				e = invalid("max_tokens", "Input should be less than or equal to "+strconv.Itoa(pricing.MaxTokens))
			}
			r.MaxTokens = n
		case "system":
			e = checkSystem(v, &c)
			if v != "null" {
				r.System = body[at : at+len(v)]
			}
		case "stream":
			if count {
				break
			}
			switch v {
			case "true", "false":
				r.Stream = v == "true"
			case "null":
			default:
				e = invalid("stream", msgBool)
			}
		case "temperature", "top_p":
			if !isNumber(v) && v != "null" {
				e = invalid(k, msgNumber)
			}
			if k == "temperature" {
				r.Temperature = body[at : at+len(v)]
			} else {
				r.TopP = body[at : at+len(v)]
			}
		case "top_k":
			if v != "null" {
				_, e = integer("top_k", v)
			}
		case "stop_sequences":
			e = checkStopSequences(v)
			r.StopSequences = body[at : at+len(v)]
		case "tool_choice":
			e = checkToolChoice(v)
			r.ToolChoice = body[at : at+len(v)]
		case "metadata":
			e = checkMetadata(v, &r.Request)
		case "thinking":
			e = checkThinking(v)
		}
	}
	switch {
	case e != nil:
		return Form{}, e
	case w.At() < 0:
		return Form{}, notJSON
	case !hasModel:
		return Form{}, invalid("model", msgRequired)
	case !hasMax && !count:
		return Form{}, invalid("max_tokens", msgRequired)
	case !hasMsgs:
		return Form{}, invalid("messages", msgRequired)
	}
	r.InputTokens = c.tokens()
	return r, nil
}

// notJSON refuses a body the walk could not read (one the caller's check
// would have refused: Decode's precondition not met).
var notJSON = &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "the request body is not valid JSON"}

// Kinds of JSON text, by its first byte (as gjson types a value): "" is
// absent.
func isString(v string) bool { return jsonscan.IsString(v) }
func isObject(v string) bool { return v != "" && v[0] == '{' }
func isArray(v string) bool  { return v != "" && v[0] == '[' }
func isNumber(v string) bool { return v != "" && (v[0] == '-' || '0' <= v[0] && v[0] <= '9') }
func isBool(v string) bool   { return v == "true" || v == "false" }

// number is the number v denotes (gjson's Num): ±Inf beyond float64.
func number(v string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// integer reads an integer field: a JSON number without a fractional
// part (1.0 is 1, as pydantic has it). Values beyond 2^53 are capped.
func integer(path string, v string) (int64, *Error) {
	if !isNumber(v) {
		return 0, invalid(path, msgInteger)
	}
	n := number(v)
	if n != math.Trunc(n) {
		return 0, invalid(path, msgFraction)
	}
	const maxExact = 1 << 53
	return int64(max(min(n, maxExact), -maxExact)), nil
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
func tagError(path string, tag string, expected string) *Error {
	t := tag
	if isString(tag) {
		t = jsonscan.Unquote(tag)
	}
	if len(t) > 100 {
		t = t[:100] + "…"
	}
	return invalid(path, "Input tag '"+t+"' found using 'type' does not match any of the expected tags: "+expected)
}

// str checks an optional string field: absent and null pass.
func str(l loc, name string, v string) *Error {
	if v != "" && !isString(v) && v != "null" {
		return invalid(l.field(name), msgString)
	}
	return nil
}

// requiredStr checks a required string field.
func requiredStr(l loc, name string, v string) *Error {
	switch {
	case v == "":
		return invalid(l.field(name), msgRequired)
	case !isString(v):
		return invalid(l.field(name), msgString)
	}
	return nil
}

// requiredDict checks a required object field.
func requiredDict(l loc, name string, v string) *Error {
	switch {
	case v == "":
		return invalid(l.field(name), msgRequired)
	case !isObject(v):
		return invalid(l.field(name), msgDict)
	}
	return nil
}

// checkSystem checks system: a string or a list of text blocks; it
// counts their text into c.
func checkSystem(v string, c *counter) *Error {
	switch {
	case isString(v):
		c.text(v)
		return nil
	case v == "null":
		return nil
	case !isArray(v):
		return invalid("system", msgList)
	}
	j := 0
	for w := jsonscan.Walk(v, 0); w.Next(); {
		l := loc{base: "system"}.at(j)
		j++
		b := w.Val()
		if !isObject(b) {
			return invalid(l.String(), msgDict)
		}
		f := jsonscan.Fields(b, "type", "text")
		switch typ := f[0]; {
		case typ == "":
			return invalid(l.field("type"), msgRequired)
		case !isString(typ) || jsonscan.Unquote(typ) != "text":
			return invalid(l.field("type"), "Input should be 'text'")
		}
		if e := requiredStr(l, "text", f[1]); e != nil {
			return e
		}
		c.text(f[1])
	}
	return nil
}

func checkStopSequences(v string) *Error {
	switch {
	case v == "null":
		return nil
	case !isArray(v):
		return invalid("stop_sequences", msgList)
	}
	i := 0
	for w := jsonscan.Walk(v, 0); w.Next(); {
		if !isString(w.Val()) {
			return invalid("stop_sequences."+strconv.Itoa(i), msgString)
		}
		i++
	}
	return nil
}

// checkTools checks the tools that begin where p is, where they stand,
// counting their bytes into c, and returns the index past them: a custom
// tool (no type, or "custom") needs a name Anthropic takes and an
// input_schema object; a tool of another type is a server tool
// (web_search_20250305, bash_20250124…) whose fields are its own.
func checkTools(p *jsonscan.Walker, c *counter) (int, *Error) {
	s, at := p.Text(), p.At()
	switch {
	case at < len(s) && s[at] == 'n':
		sub := p.Walk()
		end := sub.At()
		if end < 0 {
			return -1, notJSON
		}
		if s[at:end] != "null" {
			return -1, invalid("tools", msgList)
		}
		return end, nil
	case at >= len(s) || s[at] != '[':
		if jsonscan.End(s, at) < 0 {
			return -1, notJSON
		}
		return -1, invalid("tools", msgList)
	}
	i := 0
	w := p.Walk()
	for w.Member() {
		start := w.At()
		end, e := checkTool(loc{base: "tools"}.at(i), &w)
		if e != nil {
			return -1, e
		}
		c.bytes += int64(end - start)
		w.Resume(end)
		i++
	}
	if w.At() < 0 {
		return -1, notJSON
	}
	return w.At(), nil
}

// checkTool checks the tool that begins where p is and returns the index
// past it.
func checkTool(l loc, p *jsonscan.Walker) (int, *Error) {
	if s, at := p.Text(), p.At(); at >= len(s) || s[at] != '{' {
		if jsonscan.End(s, at) < 0 {
			return -1, notJSON
		}
		return -1, invalid(l.String(), msgDict)
	}
	// The first of each, as gjson's Get finds it.
	var typ, name, desc, schema string
	w := p.Walk()
	for w.Next() {
		var f *string
		switch w.Key() {
		case "type":
			f = &typ
		case "name":
			f = &name
		case "description":
			f = &desc
		case "input_schema":
			f = &schema
		default:
			continue
		}
		if *f == "" {
			*f = w.Val()
		}
	}
	end := w.At()
	if end < 0 {
		return -1, notJSON
	}
	switch {
	case typ == "", typ == "null":
	case !isString(typ):
		return -1, invalid(l.field("type"), msgString)
	case jsonscan.Unquote(typ) != "custom":
		return end, nil // a server tool
	}
	if e := requiredStr(l, "name", name); e != nil {
		return -1, e
	}
	if !toolName(jsonscan.Unquote(name)) {
		return -1, invalid(l.field("name"), "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")
	}
	if e := str(l, "description", desc); e != nil {
		return -1, e
	}
	if e := requiredDict(l, "input_schema", schema); e != nil {
		return -1, e
	}
	return end, nil
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

func checkToolChoice(v string) *Error {
	switch {
	case v == "null":
		return nil
	case !isObject(v):
		return invalid("tool_choice", msgDict)
	}
	f := jsonscan.Fields(v, "type", "name", "disable_parallel_tool_use")
	typ := f[0]
	switch {
	case typ == "":
		return invalid("tool_choice", msgNoTag)
	case !isString(typ):
		return tagError("tool_choice", typ, choiceTags)
	}
	switch jsonscan.Unquote(typ) {
	case "auto", "any", "none":
	case "tool":
		switch n := f[1]; {
		case n == "":
			return invalid("tool_choice.name", msgRequired)
		case !isString(n):
			return invalid("tool_choice.name", msgString)
		}
	default:
		return tagError("tool_choice", typ, choiceTags)
	}
	if d := f[2]; d != "" && !isBool(d) && d != "null" {
		return invalid("tool_choice.disable_parallel_tool_use", msgBool)
	}
	return nil
}

func checkMetadata(v string, r *Request) *Error {
	switch {
	case v == "null":
		return nil
	case !isObject(v):
		return invalid("metadata", msgDict)
	}
	switch u := jsonscan.Fields(v, "user_id")[0]; {
	case isString(u):
		r.UserID = strings.Clone(jsonscan.Unquote(u))
	case u == "null", u == "":
	default:
		return invalid("metadata.user_id", msgString)
	}
	return nil
}

// checkThinking checks thinking's shape only (an object with a string
// type): which types and budgets a model takes is its own business.
func checkThinking(v string) *Error {
	switch {
	case v == "null":
		return nil
	case !isObject(v):
		return invalid("thinking", msgDict)
	}
	switch typ := jsonscan.Fields(v, "type")[0]; {
	case typ == "":
		return invalid("thinking", msgNoTag)
	case !isString(typ):
		return tagError("thinking", typ, "'enabled', 'disabled', 'adaptive'")
	}
	return nil
}
