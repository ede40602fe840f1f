package chat

import (
	"math"
	"net/http"
	"strconv"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
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
	// body is valid JSON (Decode's walk checked it), not modified during
	// Translate; nothing read from it is kept past Translate but in the
	// bytes it writes. It is read as gjson reads it (the first of each
	// field, every element), by walks over its text, each container where
	// it stands, that decode nothing they do not write: most strings are
	// copied as the client wrote them (lit), a tool's input_schema as it
	// is (valid, as the body is).
	s := unsafeString(body)
	i := jsonscan.Space(s, 0)
	if i == len(s) || s[i] != '{' {
		return nil, notObject
	}
	var f top
	for w := jsonscan.Walk(s, i); w.Next(); {
		f.set(w.Key(), w.Val())
	}
	var estimate int64
	if req.Stream {
		estimate = messages.EstimateInputTokens(body)
	}
	return build(req, f, estimate, len(body)), nil
}

// TranslateForm is Translate of the request form read: what Translate
// reads from the body again, the form holds.
func TranslateForm(body []byte, form messages.Form) (*Translation, *messages.Error) {
	s := unsafeString(body)
	if i := jsonscan.Space(s, 0); i == len(s) || s[i] != '{' {
		return nil, notObject
	}
	f := top{system: unsafeString(form.System), messages: unsafeString(form.Messages), tools: unsafeString(form.Tools),
		toolChoice: unsafeString(form.ToolChoice), temperature: unsafeString(form.Temperature), topP: unsafeString(form.TopP),
		stopSequences: unsafeString(form.StopSequences)}
	return build(form.Request, f, form.InputTokens, len(body)), nil
}

var notObject = &messages.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "the request body must be a JSON object"}

// build writes the chat request of req, whose fields f holds, of a
// body of size bytes; estimate is its input tokens (read for a stream
// only).
func build(req messages.Request, f top, estimate int64, size int) *Translation {
	t := &translator{}
	// The translation is about the size of the request.
	b := make([]byte, 0, size+256)
	b = append(b, `{"model":`...)
	start := len(b)
	b = str(b, req.Model)
	end := len(b)
	b = append(b, `,"messages":[`...)
	b = t.system(b, f.system, false)
	for w := jsonscan.Walk(f.messages, 0); w.Member(); {
		b = t.message(b, &w)
	}
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
		tr.estimate = estimate
	}
	tr.Body = append(b, '}')
	return tr
}

// top holds the top-level fields Translate reads, the first of each, as
// their JSON texts. Everything else (top_k, thinking, metadata,
// service_tier, context_management, output_config, container,
// mcp_servers…) has no chat completions equivalent every target takes,
// and is dropped; metadata.user_id identifies the client's device and
// session to Anthropic and is of no use to another provider.
type top struct {
	system, messages, tools, toolChoice, temperature, topP, stopSequences string
}

func (f *top) set(k, v string) {
	var p *string
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
	if *p == "" {
		*p = v
	}
}

// translator writes the chat request's parts. The values it reads are
// JSON texts of the body's; "" is a value the body does not have.
type translator struct {
	n int // messages written
	// The blocks of the content being written: np of them, the first
	// smallParts in small (on build's frame), the rest in more.
	np    int
	small [smallParts]part
	more  []part
}

// part is one content block as one walk of it reads it, where it stands:
// the first of each field the translation reads, as JSON texts ("" when
// absent), its source's when that is an object.
type part struct {
	typ, text, id, name, input, toolUseID, content string
	source                                         bool // a source was read (the first counts)
	srcType, mediaType, data, url                  string
}

// smallParts is how many blocks of one content the translator keeps on
// build's frame; a content of more grows onto the heap.
const smallParts = 16

// part is the i-th block read.
func (t *translator) part(i int) *part {
	if i < smallParts {
		return &t.small[i]
	}
	return &t.more[i-smallParts]
}

// readParts reads the blocks of the list w walks (its elements; an
// object's values), each where it stands, as t's blocks, and returns the
// index past the list (-1: the text ended first).
func (t *translator) readParts(w jsonscan.Walker) int {
	t.np, t.more = 0, t.more[:0]
	for w.Member() {
		var p *part
		if t.np < smallParts {
			p = &t.small[t.np]
			*p = part{}
		} else {
			t.more = append(t.more, part{})
			p = &t.more[len(t.more)-1]
		}
		t.np++
		w.Resume(readPart(&w, p))
	}
	return w.At()
}

// readPart reads the block at p's current value into pt, where it
// stands (its source too, when an object), and returns the index past it.
func readPart(p *jsonscan.Walker, pt *part) int {
	if p.First() != '{' {
		p.Skip() // a block that is not an object has no fields
		return p.At()
	}
	w := p.Walk()
	for w.Member() {
		k := w.Key()
		if k == "source" && !pt.source {
			pt.source = true
			if w.First() == '{' {
				src := w.Walk()
				for src.Next() {
					switch src.Key() {
					case "type":
						first(&pt.srcType, src.Val())
					case "media_type":
						first(&pt.mediaType, src.Val())
					case "data":
						first(&pt.data, src.Val())
					case "url":
						first(&pt.url, src.Val())
					}
				}
				w.Resume(src.At())
				continue
			}
		}
		w.Skip()
		v := w.Val()
		switch k {
		case "type":
			first(&pt.typ, v)
		case "text":
			first(&pt.text, v)
		case "id":
			first(&pt.id, v)
		case "name":
			first(&pt.name, v)
		case "input":
			first(&pt.input, v)
		case "tool_use_id":
			first(&pt.toolUseID, v)
		case "content":
			first(&pt.content, v)
		}
	}
	return w.At()
}

// first sets *p to v unless it holds a value already: the first of a
// repeated key counts, as gjson reads one.
func first(p *string, v string) {
	if *p == "" {
		*p = v
	}
}

// next appends the separator before a message.
func (t *translator) next(b []byte) []byte {
	if t.n > 0 {
		b = append(b, ',')
	}
	t.n++
	return b
}

// textIn is the text of the block at p's current value, read where it
// stands: its first "text" field, as JSON text, when a string. Text
// blocks, and blocks of types this package does not know, keep their
// text this way; thinking, tool_use and the server tools' blocks have
// none. p is then past the block.
func textIn(p *jsonscan.Walker) (string, bool) {
	if p.First() != '{' {
		p.Skip()
		return "", false
	}
	var text string
	w := p.Walk()
	for w.Member() {
		w.Skip()
		if w.Key() == "text" {
			first(&text, w.Val())
		}
	}
	p.Resume(w.At())
	return text, jsonscan.IsString(text)
}

// system appends the system message: the string, or the text blocks
// joined with a blank line in their order (cache_control dropped). An
// empty system prompt is no message. The blocks of a list are read where
// they stand; parts says they are read already, as t's blocks.
func (t *translator) system(b []byte, sys string, parts bool) []byte {
	switch {
	case jsonscan.IsString(sys):
		if sys == `""` {
			return b
		}
		b = t.next(b)
		b = append(b, `{"role":"system","content":`...)
		b = lit(b, sys)
		return append(b, '}')
	case sys == "" || sys[0] != '[':
		return b
	}
	if !parts {
		t.readParts(jsonscan.Walk(sys, 0))
	}
	mark, n := len(b), t.n
	b = t.next(b)
	b = append(b, `{"role":"system","content":"`...)
	texts := 0
	for i := range t.np {
		if s := t.part(i).text; jsonscan.IsString(s) && s != `""` {
			if texts > 0 {
				b = append(b, `\n\n`...)
			}
			b = litPart(b, s)
			texts++
		}
	}
	if texts == 0 {
		t.n = n
		return b[:mark]
	}
	return append(b, `"}`...)
}

// message appends one turn as chat messages: the message at w's
// current value, read where it stands (its first role and content, the
// content's blocks as t's blocks), w then past it.
func (t *translator) message(b []byte, w *jsonscan.Walker) []byte {
	if w.First() != '{' {
		w.Skip() // messages.Decode refuses it
		return b
	}
	var role, content string
	m := w.Walk()
	for m.Member() {
		if m.Key() == "content" && content == "" && m.First() == '[' {
			start := m.At()
			end := t.readParts(m.Walk())
			m.Resume(end)
			if end >= 0 {
				content = m.Text()[start:end]
			}
			continue
		}
		m.Skip()
		switch m.Key() {
		case "role":
			first(&role, m.Val())
		case "content":
			first(&content, m.Val())
		}
	}
	w.Resume(m.At())
	switch r := jsonscan.Unquote(role); r {
	case "user", "assistant":
		role = r
	case "system":
		// A system turn inside messages (Claude Code's): a system message
		// where it stands.
		return t.system(b, content, true)
	default:
		return b // messages.Decode refuses it
	}
	switch {
	case jsonscan.IsString(content):
		b = t.next(b)
		b = append(b, `{"role":"`...)
		b = append(b, role...)
		b = append(b, `","content":`...)
		b = lit(b, content)
		return append(b, '}')
	case content == "" || content[0] != '[':
		return b
	case role == "user":
		return t.user(b)
	}
	return t.assistant(b)
}

// Kinds of a user turn's block (userPart).
const (
	partNone = iota
	partText
	partImage
	partResult
)

// userPart classifies a user turn's block: a tool result, text (a text
// block, a text document, an unknown block's text: text is its JSON
// string), an image chat can take (base64 or URL), or nothing chat can
// carry.
func userPart(p *part) (kind int, text string) {
	switch jsonscan.Unquote(p.typ) {
	case "image":
		switch jsonscan.Unquote(p.srcType) {
		case "base64":
			if jsonscan.IsString(p.mediaType) && jsonscan.IsString(p.data) {
				return partImage, ""
			}
		case "url":
			if jsonscan.IsString(p.url) {
				return partImage, ""
			}
		}
		return partNone, ""
	case "document":
		if jsonscan.Unquote(p.srcType) == "text" && jsonscan.IsString(p.data) {
			return partText, p.data
		}
		return partNone, ""
	case "tool_result":
		return partResult, ""
	}
	if jsonscan.IsString(p.text) {
		return partText, p.text
	}
	return partNone, ""
}

// user appends a user turn of blocks (t.np): each tool_result first,
// as a "tool" message (chat needs a call's results right after the
// assistant turn that made it), then one user message of the rest, its
// content a string when it is one text, parts otherwise. A turn of
// nothing chat can carry is an empty user message, so the turns still
// alternate.
func (t *translator) user(b []byte) []byte {
	results, parts, texts := 0, 0, 0
	for i := range t.np {
		switch k, _ := userPart(t.part(i)); k {
		case partResult:
			b = t.toolResult(b, t.part(i))
			results++
		case partText:
			parts++
			texts++
		case partImage:
			parts++
		}
	}
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
		for i := range t.np {
			if k, s := userPart(t.part(i)); k == partText {
				b = lit(b, s)
				break
			}
		}
		return append(b, '}')
	}
	b = append(b, '[')
	n := 0
	for i := range t.np {
		k, s := userPart(t.part(i))
		if k != partText && k != partImage {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		if k == partText {
			b = append(b, `{"type":"text","text":`...)
			b = lit(b, s)
			b = append(b, '}')
			continue
		}
		b = append(b, `{"type":"image_url","image_url":{"url":`...)
		b = t.imageURL(b, t.part(i))
		b = append(b, "}}"...)
	}
	return append(b, "]}"...)
}

// imageURL appends an image block's source as chat's image URL: a base64
// source as a data: URL, a URL source as it is.
func (t *translator) imageURL(b []byte, p *part) []byte {
	if jsonscan.Unquote(p.srcType) == "url" {
		return lit(b, p.url)
	}
	b = append(b, `"data:`...)
	b = litPart(b, p.mediaType)
	b = append(b, ";base64,"...)
	b = litPart(b, p.data)
	return append(b, '"')
}

// toolResult appends a tool_result as a "tool" message: string content
// as it is, block content's texts joined by newlines (images dropped:
// a tool message is text), its blocks read where they stand. is_error
// has no chat equivalent; the text says what went wrong.
func (t *translator) toolResult(b []byte, p *part) []byte {
	b = t.next(b)
	b = append(b, `{"role":"tool","tool_call_id":`...)
	b = lit(b, p.toolUseID)
	b = append(b, `,"content":`...)
	if c := p.content; jsonscan.IsString(c) {
		b = lit(b, c)
		return append(b, '}')
	}
	b = append(b, '"')
	n := 0
	// An array's elements (or an object's values).
	for w := jsonscan.Walk(p.content, 0); w.Member(); {
		if s, ok := textIn(&w); ok {
			if n > 0 {
				b = append(b, `\n`...)
			}
			b = litPart(b, s)
			n++
		}
	}
	return append(b, `"}`...)
}

// assistant appends an assistant turn of blocks (t.np): its texts
// joined (as they are: text blocks split by citations are one text),
// null when it is only tool calls; its tool_use blocks as tool_calls,
// arguments the JSON of their input. Thinking is dropped (its signature
// means nothing to another provider).
func (t *translator) assistant(b []byte) []byte {
	b = t.next(b)
	b = append(b, `{"role":"assistant","content":"`...)
	mark := len(b) - 1 // the content's opening quote
	texts, calls := 0, 0
	for i := range t.np {
		p := t.part(i)
		if jsonscan.Unquote(p.typ) == "tool_use" {
			calls++
		} else if jsonscan.IsString(p.text) && p.text != `""` {
			b = litPart(b, p.text)
			texts++
		}
	}
	b = append(b, '"')
	if texts == 0 && calls > 0 {
		b = append(b[:mark], "null"...)
	}
	if calls == 0 {
		return append(b, '}')
	}
	b = append(b, `,"tool_calls":[`...)
	n := 0
	for i := range t.np {
		p := t.part(i)
		if jsonscan.Unquote(p.typ) != "tool_use" {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"id":`...)
		b = lit(b, p.id)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = lit(b, p.name)
		b = append(b, `,"arguments":`...)
		input := p.input
		if input == "" || input[0] != '{' {
			input = "{}"
		}
		b = str(b, input)
		b = append(b, "}}"...)
	}
	return append(b, "]}"...)
}

// tool holds the fields of a tool Translate reads, the first of each, as
// their JSON texts.
type tool struct {
	typ, name, description, schema string
}

// readTool reads the tool at p's current value where it stands; p is
// then past it.
func readTool(p *jsonscan.Walker) tool {
	var t tool
	if p.First() != '{' {
		p.Skip()
		return t
	}
	w := p.Walk()
	for w.Member() {
		w.Skip()
		switch w.Key() {
		case "type":
			first(&t.typ, w.Val())
		case "name":
			first(&t.name, w.Val())
		case "description":
			first(&t.description, w.Val())
		case "input_schema":
			first(&t.schema, w.Val())
		}
	}
	p.Resume(w.At())
	return t
}

// function reports whether t is a custom tool (no type, or "custom")
// with a name: the only kind chat can declare. Server tools
// (web_search_20250305, bash_20250124…) run at Anthropic, or at the
// client for Anthropic's schema, and are dropped.
func (t *tool) function() bool {
	custom := t.typ == "" || t.typ == "null" || jsonscan.IsString(t.typ) && jsonscan.Unquote(t.typ) == "custom"
	return custom && jsonscan.IsString(t.name) && t.name != `""`
}

// emptySchema is the parameters of a tool whose input_schema cannot be
// copied.
const emptySchema = `{"type":"object","properties":{}}`

// tools appends the custom tools as functions and tool_choice: auto →
// "auto", any → "required", none → "none", tool → that function ("auto"
// when it is not among them), disable_parallel_tool_use →
// parallel_tool_calls false. Without a function neither is sent (chat
// refuses a tool_choice without tools).
func (t *translator) tools(b []byte, tools, choice string) []byte {
	n := 0
	c := jsonscan.Fields(choice, "type", "name", "disable_parallel_tool_use")
	typ := jsonscan.Unquote(c[0])
	forced := ""
	if typ == "tool" {
		forced = jsonscan.Unquote(c[1])
	}
	found := false
	for w := jsonscan.Walk(tools, 0); w.Member(); {
		tl := readTool(&w)
		if !tl.function() {
			continue
		}
		if n == 0 {
			b = append(b, `,"tools":[`...)
		} else {
			b = append(b, ',')
		}
		n++
		found = found || jsonscan.Unquote(tl.name) == forced
		b = append(b, `{"type":"function","function":{"name":`...)
		b = lit(b, tl.name)
		if d := tl.description; jsonscan.IsString(d) && d != `""` {
			b = append(b, `,"description":`...)
			b = lit(b, d)
		}
		b = append(b, `,"parameters":`...)
		// Copied raw when it is an object: valid JSON, as the body passed
		// messages.Decode, whose walk checks it (Translate's precondition).
		if s := tl.schema; s != "" && s[0] == '{' {
			b = append(b, s...)
		} else {
			b = append(b, emptySchema...)
		}
		b = append(b, "}}"...)
	}
	if n == 0 {
		return b
	}
	b = append(b, ']')
	switch typ {
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
	if c[2] == "true" {
		b = append(b, `,"parallel_tool_calls":false`...)
	}
	return b
}

// stop appends stop_sequences (a list, or null: messages.Decode checked)
// as stop, an array of strings.
func (t *translator) stop(b []byte, seqs string) []byte {
	n := 0
	for w := jsonscan.Walk(seqs, 0); w.Next(); {
		if !jsonscan.IsString(w.Val()) {
			continue
		}
		if n == 0 {
			b = append(b, `,"stop":[`...)
		} else {
			b = append(b, ',')
		}
		n++
		b = lit(b, w.Val())
	}
	if n > 0 {
		b = append(b, ']')
	}
	return b
}

// number appends a number field as chat's, when v is a finite number.
func number(b []byte, key, v string) []byte {
	if v == "" || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return b
	}
	f, _ := strconv.ParseFloat(v, 64)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
