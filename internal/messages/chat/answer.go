package chat

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
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
	if !jsonscan.Valid(chat) {
		return nil, errNotChat
	}
	// chat is valid JSON, not modified while it is read: each field is
	// the first of its name, as gjson's Get finds it, each object read
	// in one walk.
	doc := unsafeString(chat)
	i := jsonscan.Space(doc, 0)
	if i == len(doc) || doc[i] != '{' {
		return nil, errNotChat
	}
	top := jsonscan.Fields(doc[i:], "id", "choices", "usage")
	var choice string
	if choices := top[1]; choices != "" && choices[0] == '[' {
		w := jsonscan.Walk(choices, 0)
		if w.Next() {
			choice = w.Val()
		}
	}
	if choice == "" || choice[0] != '{' {
		return nil, errNoChoice
	}
	ch := jsonscan.Fields(choice, "message", "finish_reason")
	msg := jsonscan.Fields(ch[0], "content", "refusal", "tool_calls")
	b := make([]byte, 0, 256+len(chat))
	b = append(b, `{"id":"`...)
	b = appendMessageID(b, jsonscan.Unquote(top[0]))
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = str(b, t.model)
	b = append(b, `,"content":[`...)
	n := 0
	// Refusal: OpenAI's own models put a refusal there instead of content.
	for _, v := range msg[:2] {
		if s := jsonscan.Unquote(v); s != "" {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"text","text":`...)
			b = str(b, s)
			b = append(b, '}')
		}
	}
	calls := 0
	// An array's elements, or an object's values.
	for w := jsonscan.Walk(msg[2], 0); w.Next(); {
		tc := jsonscan.Fields(w.Val(), "function", "id")
		if fn := tc[0]; fn == "" || fn[0] != '{' {
			continue // not a function call
		}
		fn := jsonscan.Fields(tc[0], "name", "arguments")
		if n > 0 {
			b = append(b, ',')
		}
		n++
		calls++
		b = append(b, `{"type":"tool_use","id":"`...)
		b = appendToolID(b, jsonscan.Unquote(tc[1]))
		b = append(b, `","name":`...)
		b = str(b, jsonscan.Unquote(fn[0]))
		b = append(b, `,"input":`...)
		b = appendInput(b, fn[1])
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":"`...)
	b = append(b, stopReason(jsonscan.Unquote(ch[1]), calls > 0)...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	var u usage
	u.read(top[2])
	b = u.append(b, true)
	return append(b, '}'), nil
}

// appendInput appends a tool call's arguments, the JSON text args, as a
// tool_use input: the JSON object they hold (a string, or an object some
// servers send), {} when they are empty or not an object.
func appendInput(b []byte, args string) []byte {
	raw := args
	if args != "" && args[0] == '"' {
		raw = jsonscan.Unquote(args)
	}
	in := bytes.TrimSpace(unsafeBytes(raw))
	if len(in) == 0 || in[0] != '{' || !jsonscan.Valid(in) {
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

// read takes a chat usage object, the JSON text v; anything else leaves
// u unknown.
func (u *usage) read(v string) {
	if v == "" || v[0] != '{' {
		return
	}
	f := jsonscan.Fields(v, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
	prompt := intValue(f[0])
	u.cacheRead = max(0, min(prompt, intValue(jsonscan.Fields(f[2], "cached_tokens")[0])))
	u.input = max(0, prompt-u.cacheRead)
	u.output = max(0, intValue(f[1]))
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
