package chat

import (
	"bytes"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/messages"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// gjsonChunk is Chunk as it was written before its walks: each level of
// the chunk read with gjson's ForEach and Get. Chunk must write the same
// bytes for every valid JSON payload.
func (e *Events) gjsonChunk(dst, payload []byte) ([]byte, error) {
	// payload is valid JSON (provider.Stream's contract: the adapter
	// checked it, so text is copied as the chunk wrote it); it is not
	// modified during Chunk, and nothing read from it is kept but
	// copies.
	doc := gjson.Parse(unsafeString(payload))
	if !doc.IsObject() {
		return dst, errBadChunk
	}
	if !e.started {
		dst = e.start(dst, doc.Get("id").Str)
	}
	var choices gjson.Result
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = v
		case "usage":
			// A usage chunk (choices empty) comes last when asked for.
			e.usage.gjsonRead(v)
		}
		return true
	})
	choices.ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() == 0 { // one choice is asked for
			dst = e.gjsonChoice(dst, c)
		}
		return true
	})
	return dst, nil
}

// gjsonChoice is choice with gjson: it appends the events for one
// choice's delta and remembers its finish reason.
func (e *Events) gjsonChoice(dst []byte, c gjson.Result) []byte {
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "delta":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "content", "refusal":
					if v.Type == gjson.String && len(v.Raw) > 2 {
						dst = e.text(dst, v.Raw)
					}
				case "tool_calls":
					v.ForEach(func(_, tc gjson.Result) bool {
						dst = e.gjsonCall(dst, tc)
						return true
					})
				}
				return true
			})
		case "finish_reason":
			if v.Type == gjson.String && v.Str != "" {
				e.stop = stopReason(v.Str, false) // a constant: payload is reused
			}
		}
		return true
	})
	return dst
}

// gjsonCall is call with gjson: it appends a piece of a tool call: a new
// call (another index, or another id) closes the open block and opens a
// tool_use block; its arguments go out as input_json_delta.
func (e *Events) gjsonCall(dst []byte, tc gjson.Result) []byte {
	var idx, id, fn gjson.Result
	tc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			idx = v
		case "id":
			id = v
		case "function":
			fn = v
		}
		return true
	})
	i := idx.Int()
	newCall := e.open < 0 || !e.tool ||
		idx.Exists() && i != e.callIdx ||
		id.Str != "" && id.Str != e.callID
	if newCall {
		if scanCalled(e, i) && (id.Str == "" || id.Str == e.callID) {
			return dst // a later piece of a call whose block is closed
		}
		dst = e.closeBlock(dst)
		dst = e.blockStart(dst, true)
		dst = append(dst, `,"content_block":{"type":"tool_use","id":"`...)
		dst = appendToolID(dst, id.Str)
		dst = append(dst, `","name":`...)
		dst = str(dst, fn.Get("name").Str)
		dst = append(dst, ",\"input\":{}}}\n\n"...)
		e.callIdx, e.callID, e.calls = i, strings.Clone(id.Str), true
		e.markCalled(i)
	}
	args := fn.Get("arguments")
	switch {
	case args.Type == gjson.String && len(args.Raw) > 2:
	case args.IsObject():
		// A server that sends the arguments whole, as an object.
	default:
		return dst
	}
	dst = e.deltaHead(dst)
	dst = append(dst, `,"delta":{"type":"input_json_delta","partial_json":`...)
	if args.Type == gjson.String {
		dst = append(dst, args.Raw...) // a JSON string literal, as for text
	} else {
		dst = str(dst, args.Raw)
	}
	return append(dst, "}}\n\n"...)
}

// gjsonAnswer is Answer as it was written before its walks: each field
// read with gjson's Get. Answer must write the same bytes for every
// answer.
func (t *Translation) gjsonAnswer(chat []byte) ([]byte, error) {
	if !jsoncheck.Valid(chat) {
		return nil, errNotChat
	}
	// chat is not modified while doc is in use.
	doc := gjson.Parse(unsafeString(chat))
	if !doc.IsObject() {
		return nil, errNotChat
	}
	var choice gjson.Result
	if choices := doc.Get("choices"); choices.IsArray() {
		choices.ForEach(func(_, c gjson.Result) bool {
			choice = c
			return false
		})
	}
	if !choice.IsObject() {
		return nil, errNoChoice
	}
	msg := choice.Get("message")
	b := make([]byte, 0, 256+len(chat))
	b = append(b, `{"id":"`...)
	b = appendMessageID(b, doc.Get("id").Str)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = str(b, t.model)
	b = append(b, `,"content":[`...)
	n := 0
	// Refusal: OpenAI's own models put a refusal there instead of content.
	for _, key := range [...]string{"content", "refusal"} {
		if s := msg.Get(key); s.Type == gjson.String && s.Str != "" {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"text","text":`...)
			b = str(b, s.Str)
			b = append(b, '}')
		}
	}
	calls := 0
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		fn := tc.Get("function")
		if !fn.IsObject() {
			return true // not a function call
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		calls++
		b = append(b, `{"type":"tool_use","id":"`...)
		b = appendToolID(b, tc.Get("id").Str)
		b = append(b, `","name":`...)
		b = str(b, fn.Get("name").Str)
		b = append(b, `,"input":`...)
		b = gjsonInput(b, fn.Get("arguments"))
		b = append(b, '}')
		return true
	})
	b = append(b, `],"stop_reason":"`...)
	b = append(b, stopReason(choice.Get("finish_reason").Str, calls > 0)...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	var u usage
	u.gjsonRead(doc.Get("usage"))
	b = u.append(b, true)
	return append(b, '}'), nil
}

// gjsonInput is appendInput with gjson.
func gjsonInput(b []byte, args gjson.Result) []byte {
	raw := args.Raw
	if args.Type == gjson.String {
		raw = args.Str
	}
	in := bytes.TrimSpace(unsafeBytes(raw))
	if len(in) == 0 || in[0] != '{' || !jsoncheck.Valid(in) {
		return append(b, "{}"...)
	}
	return append(b, in...)
}

// gjsonRead is usage.read with gjson.
func (u *usage) gjsonRead(v gjson.Result) {
	if !v.IsObject() {
		return
	}
	prompt := v.Get("prompt_tokens").Int()
	u.cacheRead = max(0, min(prompt, v.Get("prompt_tokens_details.cached_tokens").Int()))
	u.input = max(0, prompt-u.cacheRead)
	u.output = max(0, v.Get("completion_tokens").Int())
	u.known = true
}

// gjsonTranslate is Translate as it was written before its walks, each
// level of the body read with gjson's ForEach and Get; Translate must
// write the same bytes for every body that is valid JSON. It turns a
// checked Messages request (messages.Decode passed) into
// a chat completions request. Nothing the request holds is an error: what
// chat completions cannot carry is dropped. The only refusal is a body
// that is not a JSON object.
func gjsonTranslate(body []byte, req messages.Request) (*Translation, *messages.Error) {
	// body is not modified while doc is in use; nothing read from it is
	// kept past Translate but in the bytes it writes.
	doc := gjson.Parse(unsafeString(body))
	if !doc.IsObject() {
		return nil, &messages.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "the request body must be a JSON object"}
	}
	var f gjsonTop
	doc.ForEach(func(k, v gjson.Result) bool {
		f.set(k.Str, v)
		return true
	})
	t := &gjsonTranslator{}
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
	b = gjsonNumber(b, "temperature", f.temperature)
	b = gjsonNumber(b, "top_p", f.topP)
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

// gjsonTop holds the gjsonTop-level fields Translate reads, the first of each.
// Everything else (top_k, thinking, metadata, service_tier,
// context_management, output_config, container, mcp_servers…) has no
// chat completions equivalent every target takes, and is dropped;
// metadata.user_id identifies the client's device and session to
// Anthropic and is of no use to another provider.
type gjsonTop struct {
	system, messages, tools, toolChoice, temperature, topP, stopSequences gjson.Result
}

func (f *gjsonTop) set(k string, v gjson.Result) {
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

// gjsonTranslator writes the chat request's parts.
type gjsonTranslator struct {
	n int // messages written
}

// next appends the separator before a message.
func (t *gjsonTranslator) next(b []byte) []byte {
	if t.n > 0 {
		b = append(b, ',')
	}
	t.n++
	return b
}

// gjsonTextOf is a block's text: its string "text" field. Text blocks, and
// blocks of types this package does not know, keep their text this way;
// thinking, tool_use and the server tools' blocks have none.
func gjsonTextOf(blk gjson.Result) (string, bool) {
	v := blk.Get("text")
	return v.Str, v.Type == gjson.String
}

// system appends the system message: the string, or the text blocks
// joined with a blank line in their order (cache_control dropped). An
// empty system prompt is no message.
func (t *gjsonTranslator) system(b []byte, sys gjson.Result) []byte {
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
		if s, ok := gjsonTextOf(blk); ok && s != "" {
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
func (t *gjsonTranslator) message(b []byte, m gjson.Result) []byte {
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

// gjsonUserPart classifies a user turn's block other than a tool result:
// text (a text block, a text document, an unknown block's text), an
// image chat can take (base64 or URL), or nothing chat can carry.
func gjsonUserPart(blk gjson.Result) (kind int, text string) {
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
	if s, ok := gjsonTextOf(blk); ok {
		return partText, s
	}
	return partNone, ""
}

// user appends a user turn of blocks: each tool_result first, as a
// "tool" message (chat needs a call's results right after the assistant
// turn that made it), then one user message of the rest, its content a
// string when it is one text, parts otherwise. A turn of nothing chat can
// carry is an empty user message, so the turns still alternate.
func (t *gjsonTranslator) user(b []byte, blocks gjson.Result) []byte {
	results, parts, texts := 0, 0, 0
	blocks.ForEach(func(_, blk gjson.Result) bool {
		if blk.Get("type").Str == "tool_result" {
			b = t.toolResult(b, blk)
			results++
			return true
		}
		switch k, _ := gjsonUserPart(blk); k {
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
			k, s := gjsonUserPart(blk)
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
		k, s := gjsonUserPart(blk)
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
func (t *gjsonTranslator) imageURL(b []byte, src gjson.Result) []byte {
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
func (t *gjsonTranslator) toolResult(b []byte, blk gjson.Result) []byte {
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
		if s, ok := gjsonTextOf(inner); ok {
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
func (t *gjsonTranslator) assistant(b []byte, blocks gjson.Result) []byte {
	b = t.next(b)
	b = append(b, `{"role":"assistant","content":"`...)
	mark := len(b) - 1 // the content's opening quote
	texts, calls := 0, 0
	blocks.ForEach(func(_, blk gjson.Result) bool {
		if blk.Get("type").Str == "tool_use" {
			calls++
		} else if s, ok := gjsonTextOf(blk); ok && s != "" {
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
type gjsonTool struct {
	typ, name, description, schema gjson.Result
}

func gjsonReadTool(v gjson.Result) gjsonTool {
	var t gjsonTool
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
func (t *gjsonTool) function() bool {
	custom := t.typ.Type == gjson.Null || t.typ.Type == gjson.String && t.typ.Str == "custom"
	return custom && t.name.Type == gjson.String && t.name.Str != ""
}

// tools appends the custom tools as functions and tool_choice: auto →
// "auto", any → "required", none → "none", tool → that function ("auto"
// when it is not among them), disable_parallel_tool_use →
// parallel_tool_calls false. Without a function neither is sent (chat
// refuses a tool_choice without tools).
func (t *gjsonTranslator) tools(b []byte, tools, choice gjson.Result) []byte {
	n := 0
	forced := ""
	if choice.Get("type").Str == "tool" {
		forced = choice.Get("name").Str
	}
	found := false
	tools.ForEach(func(_, v gjson.Result) bool {
		tl := gjsonReadTool(v)
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
func (t *gjsonTranslator) stop(b []byte, seqs gjson.Result) []byte {
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
func gjsonNumber(b []byte, key string, v gjson.Result) []byte {
	if v.Type != gjson.Number || math.IsInf(v.Num, 0) || math.IsNaN(v.Num) {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendFloat(b, v.Num, 'g', -1, 64)
}

// randomID is an id appendRandom made: what two runs cannot share.
var randomID = regexp.MustCompile(`"(toolu_|msg_)[a-zA-Z0-9]{24}"`)

// sameAsGJSON runs chunks through Chunk and gjsonChunk, each on its own
// Events, and fails unless each chunk's events, the error and the end are
// the same bytes (random ids aside). fail ends the streams with Fail.
func sameAsGJSON(t testing.TB, tr *Translation, chunks [][]byte, fail bool) {
	t.Helper()
	ev, ref := tr.Events(), tr.Events()
	same := func(what string, got, want []byte) {
		t.Helper()
		g := randomID.ReplaceAllString(string(got), `"$1random"`)
		w := randomID.ReplaceAllString(string(want), `"$1random"`)
		if g != w {
			t.Fatalf("%s: Chunk wrote\n%s\ngjsonChunk wrote\n%s", what, g, w)
		}
	}
	for _, c := range chunks {
		got, err := ev.Chunk([]byte("x"), c)
		want, refErr := ref.gjsonChunk([]byte("x"), c)
		same(string(c), got, want)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("%s: Chunk's error %v, gjsonChunk's %v", c, err, refErr)
		}
		if err != nil {
			fail = true
			break
		}
	}
	if fail {
		same("Fail", ev.Fail(nil, outcome.Network), ref.Fail(nil, outcome.Network))
		return
	}
	same("End", ev.End(nil), ref.End(nil))
}

// TestChunkAsGJSON: Chunk reads a chunk as gjson does, whatever the
// shape: keys repeated or escaped, a delta before the index, choices an
// object, tool calls a scalar, whitespace anywhere.
func TestChunkAsGJSON(t *testing.T) {
	tests := map[string][]string{
		"text":        {chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"Hel"}`, ""), chunk(`{"content":"lo \"you\"\n\u2028"}`, ""), chunk(`{}`, "stop"), usageChunk},
		"tool calls":  {chunk(call(0, "call_1", "get_weather", `""`), ""), chunk(call(0, "", "", `"{\"city\":"`), ""), chunk(call(1, "call:2", "noop", `"{}"`), ""), chunk(`{}`, "tool_calls")},
		"object args": {`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":"\u00e9\n"}}}]}}]}`},
		"late piece":  {chunk(call(0, "call_1", "f", `"{"`), ""), chunk(call(1, "call_2", "g", `"{}"`), ""), chunk(call(0, "", "", `"}"`), "")},
		"keys repeated": {
			`{"id":"a","id":"b","choices":[{"index":0,"delta":{"content":"x"}}],"choices":[{"index":0,"delta":{"content":"y","content":"z","refusal":"r"},"delta":{"content":"w"},"finish_reason":"length","finish_reason":null}],"usage":{"prompt_tokens":5},"usage":null}`,
			`{"choices":[{"index":0,"index":1,"delta":{"tool_calls":[{"index":0,"index":2,"id":"p","id":"q","function":{"name":"n","name":"m","arguments":"{}","arguments":"[]"},"function":{"name":"o","arguments":"\"\""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"r","function":{"name":"n","name":"m","arguments":"{}","arguments":"[]"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":4,"id":"s","function":{"name":"a","arguments":"{}"},"function":{"name":"b"}}]}}]}`,
		},
		"keys escaped": {`{"i\u0064":"\u0061b","ch\u006fices":[{"ind\u0065x":0,"d\u0065lta":{"c\u006fntent":"x","tool_c\u0061lls":[{"\u0069d":"c\u0031","function":{"n\u0061me":"f\u00e9","\u0061rguments":"{}"}}]},"finish_re\u0061son":"to\u006fl_calls"}]}`},
		"delta before index": {
			`{"choices":[{"delta":{"content":"a"},"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}`,
			`{"choices":[{"delta":{"content":"c"},"index":1},{"finish_reason":"length","delta":{"content":"d"}}]}`,
			`{"choices":[{"delta":{"content":"e"},"index":0,"logprobs":{"content":"no"},"delta":{"content":"f"}}]}`,
		},
		"indexes": {
			`{"choices":[{"index":"0","delta":{"content":"s"}},{"index":0.5,"delta":{"content":"f"}},{"index":-0,"delta":{"content":"m"}},{"index":null,"delta":{"content":"n"}},{"index":true,"delta":{"content":"t"}},{"index":1e0,"delta":{"content":"e"}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":"1","function":{"arguments":"a"}},{"index":1.0,"function":{"arguments":"b"}},{"index":12345678901234567890,"function":{"arguments":"c"}},{"index":-3,"function":{"arguments":"d"}}]}}]}`,
		},
		"choices before the id":   {`{"choices":[{"delta":{"content":"a"}}],"id":"late"}`, `{"choices":[{"delta":{"content":"b"}}]}`},
		"choices, id, choices":    {`{"choices":[{"delta":{"content":"a"}}],"id":"late","choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":2}}`},
		"choices, usage, choices": {`{"id":"x","choices":[{"delta":{"content":"a"},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":2},"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"name":"f"}}]}}]}`, `{"choices":[{"delta":{"content":"b"}}],"choices":[]}`},
		"heads repeated": {
			`{"id":"h","created":1,"choices":[{"delta":{"content":"a"}}]}`, `{"id":"h","created":1,"choices":[{"delta":{"content":"b"}}],"choices":[{"delta":{"content":"c"}}]}`,
			`{"id":"h","created":2,"choices":[{"delta":{"content":"d"}}]}`, `{"id":"h","created":2,"choices":[{"delta":{"content":"e"}}],"usage":{"prompt_tokens":3}}`,
			`{"id":"h"}`, `{"id":"h","created":2,"choices":7}`, `{"id":"h","created":2,"choices":[{"delta":{"content":"f"},"finish_reason":"stop"}]}`,
		},
		"heads with usage": {
			`{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"a"}}]}`, `{"usage":{"prompt_tokens":2},"choices":[{"delta":{"content":"b"}}]}`,
			`{"usage":{"prompt_tokens":2},"choices":[{"delta":{"content":"c"}}]}`, `{"choices":[{"delta":{"content":"d"}}],"usage":null}`,
			`{"choices":[{"delta":{"content":"e"}}],"usage":{"completion_tokens":9}}`,
		},
		"heads after usage": {
			`{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"a"}}]}`, `{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"a"}}]}`,
			`{"usage":{"prompt_tokens":1},"choices":[],"usage":{"prompt_tokens":5}}`, `{"usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"b"}}]}`,
		},
		"heads, choices twice": {
			`{"choices":[],"id":"x","choices":[{"delta":{"content":"a"}}]}`, `{"choices":[],"id":"x","choices":[{"delta":{"content":"b"}}]}`,
			`{"choices":[{"delta":{"content":"c"}}],"id":"x","choices":[]}`,
		},
		"choices an object":   {`{"choices":{"a":{"index":0,"delta":{"content":"o"}},"b":"x","c":[{"delta":{"content":"no"}}]}}`},
		"choices scalars":     {`{"choices":"x"}`, `{"choices":null}`, `{"choices":[null,1,"s",[{"delta":{"content":"no"}}]]}`},
		"deltas not objects":  {`{"choices":[{"delta":"x"},{"delta":["content","x"]},{"delta":null}]}`},
		"tool calls scalars":  {`{"choices":[{"delta":{"tool_calls":null}}]}`, `{"choices":[{"delta":{"tool_calls":[null,1,{"function":"f"},{"function":[{"name":"x"}]}]}}]}`, `{"choices":[{"delta":{"tool_calls":{"a":{"id":"z","function":{"name":"g"}}}}}]}`},
		"content not text":    {`{"choices":[{"delta":{"content":1,"refusal":["x"]}}]}`, `{"choices":[{"delta":{"content":"","refusal":"no"}}]}`},
		"whitespace":          {" \t\r\n{ \"id\" : \"w\" , \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"a\\\\\" , \"tool_calls\" : [ { \"id\" : \"t\" , \"function\" : { \"name\" : \"f\" , \"arguments\" : { \"k\" : [ 1 , { } ] } } } ] } , \"finish_reason\" : \"stop\" } ] , \"usage\" : { \"prompt_tokens\" : 3 } } \n"},
		"not chunks":          {`{"choices":[{"delta":{"content":"a"}}]}`, `[1]`},
		"strings with quotes": {`{"id":"a\\","choices":[{"delta":{"content":"\\\"}\\","tool_calls":[{"id":"\\\"","function":{"name":"\"]}","arguments":"\\"}}]}}]}`},
	}
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	for name, chunks := range tests {
		t.Run(name, func(t *testing.T) {
			var bs [][]byte
			for _, c := range chunks {
				if !gjson.Valid(c) {
					t.Fatalf("not JSON: %s", c)
				}
				bs = append(bs, []byte(c))
			}
			sameAsGJSON(t, tr, bs, false)
			sameAsGJSON(t, tr, bs, true)
		})
	}
}

// sameAnswerAsGJSON fails unless Answer and gjsonAnswer write the same
// bytes (random ids aside), or both refuse.
func sameAnswerAsGJSON(t testing.TB, tr *Translation, chat []byte) {
	t.Helper()
	got, err := tr.Answer(chat)
	want, refErr := tr.gjsonAnswer(chat)
	if err != refErr {
		t.Fatalf("%s: Answer's error %v, gjsonAnswer's %v", chat, err, refErr)
	}
	g := randomID.ReplaceAllString(string(got), `"$1random"`)
	w := randomID.ReplaceAllString(string(want), `"$1random"`)
	if g != w {
		t.Fatalf("%s: Answer wrote\n%s\ngjsonAnswer wrote\n%s", chat, g, w)
	}
}

// TestAnswerAsGJSON: Answer reads a chat completion as gjson's Get does,
// whatever the shape.
func TestAnswerAsGJSON(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	for _, chat := range []string{
		`{"id":"chatcmpl-abc","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
		`{"id":"a","id":"b","choices":[{"message":{"content":"x","content":"y","refusal":"no\u0021","tool_calls":[{"id":"c.1","function":{"name":"f","name":"g","arguments":"{\"a\":1}","arguments":"{}"},"function":{"name":"h"}},{"function":"f"},null,7,{"id":"d","function":{"arguments":{"k":[1,"\u2028"]}}},{"function":{"name":"i","arguments":" {\"x\":[]} "}},{"function":{"name":"j","arguments":"[1]"}},{"function":{"name":"k","arguments":"{\"a\""}}]},"message":{"content":"z"},"finish_reason":"stop","finish_reason":"length"}],"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":4,"cached_tokens":2},"completion_tokens":"3"},"usage":null}`,
		`{"\u0069d":"e","ch\u006fices":[{"m\u0065ssage":{"c\u006fntent":"\u00e9\n","tool_c\u0061lls":{"a":{"function":{"n\u0061me":"f","arguments":"{}"}}}},"finish_re\u0061son":"to\u006fl_calls"}],"us\u0061ge":{"prompt_t\u006fkens":5.0,"completion_tokens":-2,"prompt_tokens_details":{"cached_tokens":9}}}`,
		`{"choices":[{"message":"x","finish_reason":7}]}`,
		`{"choices":[{"message":[{"content":"no"}]}],"usage":{"prompt_tokens":1e2,"prompt_tokens_details":[{"cached_tokens":1}]}}`,
		`{"choices":[{"message":{"content":"","refusal":null,"tool_calls":null}}],"usage":[]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f"}}]},"finish_reason":"stop"}]}`,
		` {"choices" : [ { "message" : { "content" : "a" } } , 1 ] } `,
		`{"choices":[1]}`, `{"choices":{"0":{}}}`, `{"choices":[]}`, `{}`, `[1]`, `"x"`, `{"choices":`, ``,
	} {
		sameAnswerAsGJSON(t, tr, []byte(chat))
	}
}

// sameTranslationAsGJSON fails unless Translate and gjsonTranslate give
// the same translation of a body Decode passed.
func sameTranslationAsGJSON(t testing.TB, body []byte, req messages.Request) {
	t.Helper()
	got, err := Translate(body, req)
	want, refErr := gjsonTranslate(body, req)
	if (err == nil) != (refErr == nil) {
		t.Fatalf("%s: Translate's error %v, gjsonTranslate's %v", body, err, refErr)
	}
	if err != nil {
		return
	}
	if !bytes.Equal(got.Body, want.Body) || got.ModelStart != want.ModelStart || got.ModelEnd != want.ModelEnd ||
		got.Stream != want.Stream || got.model != want.model || got.estimate != want.estimate {
		t.Fatalf("%s: Translate wrote\n%s\ngjsonTranslate wrote\n%s", body, got.Body, want.Body)
	}
}

// TestTranslateAsGJSON: Translate reads a request as gjson does, and
// writes its strings as openaiwire would, whatever their escapes.
func TestTranslateAsGJSON(t *testing.T) {
	for _, body := range []string{
		claudeCodeBody(),
		conversationBody(),
		`{"model":"m","max_tokens":5,"system":"s\u0041\/\n\u00e9\ud83d\ude00","messages":[{"role":"user","content":"a\"b\\c\u001f\u2028é"}],"stop_sequences":["x","\u0078"],"temperature":1e400,"top_p":-0.0}`,
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":""},{"type":"text","text":"a","text":"b"}],"messages":[{"role":"user","content":[{"type":"text","text":"t"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA\n"}},{"type":"image","source":{"type":"url","url":"https://x/\u0079"}},{"type":"document","source":{"type":"text","data":"doc"}},{"type":"newer","text":"n"},{"type":"image","source":{"type":"file","file_id":"f"}}]},{"role":"assistant","content":"ok"},{"role":"system","content":[{"type":"text","text":"env"}]},{"role":"user","content":[{"type":"document","source":{"type":"text","data":"only"}}]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","description":"d\"\n","input_schema":{"type":"object","properties":{"a":{"type":"string"}}}},{"type":"custom","name":"g","input_schema":{}},{"type":null,"name":"h","description":"","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"w"},{"name":"x\u0041","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"xA","disable_parallel_tool_use":true},
		  "messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":""},{"type":"tool_use","id":"a","name":"f","input":{"k":[1,{"x":null}]}},{"type":"tool_use","id":"b\u0042","name":"g","input":{"q":"\u00e9"}}]},
		  {"role":"user","content":[{"type":"text","text":"r"},{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"ok"},{"type":"image","source":{"type":"url","url":"u"}},{"type":"text","text":"\u0000"}],"is_error":true},{"type":"tool_result","tool_use_id":"b","content":"plain"},{"type":"tool_result","tool_use_id":"c"}]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"missing"},"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":[]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"stop_sequences":null,"temperature":0.25,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":null}]}]}`,
		`{"model":"m","max_tokens":5,"system":"","tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":false},"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":5,"system":[],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"none","disable_parallel_tool_use":null},"messages":[{"role":"user","content":""}]}`,
		` { "model" : "m" , "max_tokens" : 5 , "stream" : true , "messages" : [ { "role" : "user" , "content" : [ { "type" : "text" , "text" : "spaced" } , { "type" : "text" , "text" : "out" } ] } ] } `,
		`{"model":"m","max_tokens":5,"ro\u006ce":"x","m\u0065ssages":[{"r\u006fle":"user","c\u006fntent":"escaped keys"}]}`,
	} {
		req, e := messages.Decode([]byte(body))
		if e != nil {
			t.Fatalf("%s: %v", body, e)
		}
		if err := jsoncheck.Check([]byte(body)); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		sameTranslationAsGJSON(t, []byte(body), req)
	}
}

// scanCalled is the old Events.called, the oracle's own: whether i is
// among the indexes seen, looked for one by one.
func scanCalled(e *Events, i int64) bool {
	for _, j := range e.seen {
		if j == i {
			return true
		}
	}
	return false
}
