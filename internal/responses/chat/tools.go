package chat

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// A namespace's function and a custom tool have no chat completions
// equivalent: chat knows only functions, named by one name. So a
// namespace's function is sent as a function of a flat name (namespace
// "__" name, or a hashed name where that is too long, invalid or taken)
// and a custom tool as a function of one string argument, "input"; a
// call of either comes back as the client declared it: a function call
// with its namespace and name, a custom tool call with its input text
// (docs/ARCHITECTURE.md, "Responses API").

// maxToolName is the longest function name every provider takes:
// OpenAI's and Anthropic's 64, which Gemini and Bedrock share.
const maxToolName = 64

// customInput is the one argument of a custom tool's function.
const customInput = "input"

// customParameters is the JSON Schema of a custom tool's function.
var customParameters = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string",` +
	`"description":"The tool's whole input, as free-form text (not JSON)."}},"required":["input"],"additionalProperties":false}`)

// toolRef is the tool a chat function name stands for.
type toolRef struct {
	namespace, name string
	custom          bool
}

// toolNames maps the tools of a turn to the names they have on chat and
// back. Plain function tools keep their names and are not listed.
type toolNames struct {
	byChat map[string]toolRef // chat name → the tool, for flattened and custom tools
	byTool map[toolRef]string // (namespace, name) → chat name; custom false in keys
	taken  map[string]bool    // every chat name given
}

// newToolNames names fns on chat: plain functions and custom tools by
// their own names first, then each namespace's functions.
func newToolNames(fns []wire.FunctionTool) *toolNames {
	n := &toolNames{byChat: map[string]toolRef{}, byTool: map[toolRef]string{}, taken: map[string]bool{}}
	for _, f := range fns {
		if f.Namespace == "" {
			n.taken[f.Name] = true
			if f.Custom {
				n.byChat[f.Name] = toolRef{name: f.Name, custom: true}
			}
		}
	}
	for _, f := range fns {
		if f.Namespace != "" {
			n.name(f.Namespace, f.Name, f.Custom)
		}
	}
	return n
}

// name is the chat name of the tool namespace/name ("" namespace: the
// name itself), given one when it has none yet (a call in the history of
// a tool no longer declared).
func (n *toolNames) name(namespace, name string, custom bool) string {
	if namespace == "" {
		return name
	}
	key := toolRef{namespace: namespace, name: name}
	if c, ok := n.byTool[key]; ok {
		return c
	}
	c := flatName(namespace, name, n.taken)
	n.taken[c] = true
	n.byTool[key] = c
	n.byChat[c] = toolRef{namespace: namespace, name: name, custom: custom}
	return c
}

// tool is the tool the chat name c stands for.
func (n *toolNames) tool(c string) toolRef {
	if r, ok := n.byChat[c]; ok {
		return r
	}
	return toolRef{name: c}
}

// flatName is namespace__name when that is a name every provider takes
// ([A-Za-z0-9_-], starting with a letter or _, at most 64 bytes) and not
// taken; else that name's valid characters cut to 55 bytes, "_" and 8 hex
// digits of a hash of namespace and name.
func flatName(namespace, name string, taken map[string]bool) string {
	b := []byte(namespace + "__" + name)
	changed := false
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i], changed = '_', true
		}
	}
	if c := b[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
		b, changed = append([]byte{'_'}, b...), true
	}
	if s := string(b); !changed && len(s) <= maxToolName && !taken[s] {
		return s
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(namespace))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(name))
	sum := strconv.FormatUint(h.Sum64(), 16)
	for len(sum) < 16 {
		sum = "0" + sum
	}
	s := string(b[:min(len(b), maxToolName-9)]) + "_" + sum[:8]
	for i := 2; taken[s]; i++ { // a collision of hashes: count on
		suffix := sum[:8] + strconv.Itoa(i)
		s = string(b[:min(len(b), maxToolName-1-len(suffix))]) + "_" + suffix
	}
	return s
}

// chatTool is the function f is sent as, under its chat name.
func (n *toolNames) chatTool(f *wire.FunctionTool) chatTool {
	fn := chatFunction{Name: n.name(f.Namespace, f.Name, f.Custom), Description: f.Description, Parameters: f.Parameters, Strict: f.Strict}
	if f.Custom {
		fn.Description += "\n\nCall it with its whole input as the string argument `input`."
		if f.Grammar != "" {
			fn.Description += " The input must match this " + f.Grammar
		}
		fn.Parameters, fn.Strict = customParameters, nil
	}
	return chatTool{Type: "function", Function: fn}
}

// callArguments are the chat arguments of a call in the history: a
// custom tool call's input as the one string argument.
func callArguments(it *wire.Item) string {
	if it.Type != wire.TypeCustomToolCall {
		return it.Arguments
	}
	b, _ := json.Marshal(map[string]string{customInput: it.Arguments}) // a string always encodes
	return string(b)
}

// call is the output item for a provider's tool call (chat name c,
// arguments args): a function call, with its namespace when it calls a
// namespace's function; a custom tool call with its input text when it
// calls a custom tool. The provider's call id (call_…, toolu_…) is kept
// as call_id; the item id is minted.
func (n *toolNames) call(callID, c, args string) wire.Item {
	if callID == "" {
		callID = wire.NewCallID()
	}
	r := n.tool(c)
	if r.custom {
		return wire.Item{Type: wire.TypeCustomToolCall, ID: wire.NewID("ctc_"), CallID: callID, Name: r.name, Arguments: inputOf(args)}
	}
	return wire.Item{Type: wire.TypeFunctionCall, ID: wire.NewID("fc_"), CallID: callID, Name: r.name, Namespace: r.namespace, Arguments: args}
}

// inputOf is a custom tool's input from its function's arguments: the
// string argument "input"; arguments of another shape as they are.
func inputOf(args string) string {
	if v := gjson.Get(args, customInput); v.Type == gjson.String && gjson.Valid(args) {
		return v.Str
	}
	return args
}
