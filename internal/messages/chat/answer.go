package chat

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
)

// Errors of Answer: the provider's answer cannot be read as a chat
// completion.
var (
	errNotChat  = errors.New("reading the chat completion: not a JSON object")
	errNoChoice = errors.New("reading the chat completion: it has no choice")
)

// Answer turns a provider's chat completion into the Messages answer: a
// message whose content is the text (omitted when empty) and a tool_use
// block per tool call, whose model is the client's. Reasoning is
// dropped. The error says why the chat completion could not be read.
func (t *Translation) Answer(chat []byte) ([]byte, error) {
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
		b = appendInput(b, fn.Get("arguments"))
		b = append(b, '}')
		return true
	})
	b = append(b, `],"stop_reason":"`...)
	b = append(b, stopReason(choice.Get("finish_reason").Str, calls > 0)...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	var u usage
	u.read(doc.Get("usage"))
	b = u.append(b, true)
	return append(b, '}'), nil
}

// appendInput appends a tool call's arguments as a tool_use input: the
// JSON object they hold (a string, or an object some servers send), {}
// when they are empty or not an object.
func appendInput(b []byte, args gjson.Result) []byte {
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

// stopReason maps a chat finish reason to a Messages stop_reason. stop
// (or none) after tool calls is tool_use: some servers finish a tool
// call with stop, and a client acts on tool_use. A stop sequence cannot
// be told from a natural end (chat does not say which), so both are
// end_turn.
func stopReason(finish string, calls bool) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	if calls {
		return "tool_use"
	}
	return "end_turn"
}

// usage is a chat usage in Anthropic's terms: input excludes the tokens
// read from the prompt cache, which are counted apart.
type usage struct {
	input, output, cacheRead int64
	known                    bool
}

// read takes a chat usage object; anything else leaves u unknown.
func (u *usage) read(v gjson.Result) {
	if !v.IsObject() {
		return
	}
	prompt := v.Get("prompt_tokens").Int()
	u.cacheRead = max(0, min(prompt, v.Get("prompt_tokens_details.cached_tokens").Int()))
	u.input = max(0, prompt-u.cacheRead)
	u.output = max(0, v.Get("completion_tokens").Int())
	u.known = true
}

// append appends the Messages usage object. whole writes every field
// (an answer's usage); otherwise an unknown usage is output_tokens 0
// alone (message_delta's input fields are nullable, and a client keeps
// what message_start said).
func (u *usage) append(b []byte, whole bool) []byte {
	if !u.known && !whole {
		return append(b, `{"output_tokens":0}`...)
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, u.input, 10)
	b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, u.cacheRead, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, u.output, 10)
	return append(b, '}')
}
