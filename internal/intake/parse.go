package intake

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Fields is what the router reads from a request body. Everything else
// passes through untouched.
type Fields struct {
	// Model is the model the client asked for; ModelStart and ModelEnd
	// delimit its string literal in the body (for swapping it).
	Model                string
	ModelStart, ModelEnd int
	// Stream and IncludeUsage are stream and stream_options.include_usage.
	Stream, IncludeUsage bool
	// MaxTokens is the larger of max_tokens and max_completion_tokens; 0
	// when neither is set.
	MaxTokens int64
	// Messages is a chat request's messages array as it is in the body,
	// and PromptCacheKey prompt_cache_key's string literal (quotes
	// included); both alias the body, nil when absent. A conversation's
	// identity is read from them (internal/affinity): the name
	// PromptCacheKey gives, or the messages' opening (ParseTurns).
	Messages, PromptCacheKey []byte
}

// Parse reads the top-level fields the router needs and checks the types
// of those it reads, in one walk of the document that also makes the
// bounded check (jsonscan.Doc: syntax, UTF-8, nesting depth, distinct
// top-level keys): values it does not need are stepped over, not decoded,
// and the messages array is walked where it stands. A body the check
// refuses gets the check's refusal, as when the check was a pass of its
// own before the fields: the walk stops at its first problem, which may
// be the request's, so on any refusal the check runs over the body again
// (on that path only) and its answer comes first. body must not change
// while the result is in use; strings in the result do not alias body
// (its byte slices do).
func Parse(op provider.Op, body []byte) (Fields, *apierror.Error) {
	return ParseTurns(op, body, nil)
}

// ParseTurns is Parse that also hands turn, when not nil, the chat
// request's messages as its walk reads them, in order, while turn
// returns true: the JSON texts of each one's first role and first
// content ("" when absent). It is how the conversation's opening is
// kept by the same walk (affinity.Turns); turn sees the
// messages of a request Parse may yet refuse.
func ParseTurns(op provider.Op, body []byte, turn func(role, content string) bool) (Fields, *apierror.Error) {
	f, aerr := parse(op, body, turn)
	if aerr != nil {
		if cerr := Check(body); cerr != nil {
			return Fields{}, cerr
		}
		return Fields{}, aerr
	}
	return f, nil
}

// notJSON is the refusal of a walk that could not read the body: the
// check, asked next, says why.
var notJSON = apierror.BadRequest("", "the request body is not valid JSON")

// parse is Parse's checked walk.
func parse(op provider.Op, body []byte, turn func(role, content string) bool) (Fields, *apierror.Error) {
	var f Fields
	// body is not modified while s is in use; strings kept are cloned.
	s := unsafe.String(unsafe.SliceData(body), len(body))
	var d jsonscan.Doc
	d.Start(s)
	if !d.Object() {
		return f, apierror.BadRequest("", "the request body must be a JSON object")
	}
	var (
		hasModel bool
		required = requiredField(op)
		hasReq   bool
	)
	for d.Member() {
		k, at := d.Key(), d.At()
		if k == required {
			hasReq = true
			if op == provider.OpChat {
				// Most of a chat body: walked where it stands.
				end, aerr := chatMessages(&d.Walker, turn)
				if aerr != nil {
					return f, aerr
				}
				f.Messages = body[at:end]
				d.Resume(end)
				continue
			}
		}
		d.Skip()
		v := d.Val()
		if v == "" {
			break // not JSON: the check says why
		}
		switch k {
		case "model":
			if !jsonscan.IsString(v) {
				return f, apierror.BadRequest("model", "model must be a string")
			}
			hasModel = true
			f.Model = strings.Clone(jsonscan.Unquote(v))
			f.ModelStart, f.ModelEnd = at, at+len(v)
		case "stream":
			switch v {
			case "true", "false":
				f.Stream = v == "true"
			case "null":
			default:
				return f, apierror.BadRequest("stream", "stream must be a boolean")
			}
		case "stream_options":
			if v == "null" {
				break
			}
			if v[0] != '{' {
				return f, apierror.BadRequest("stream_options", "stream_options must be an object")
			}
			switch iu := jsonscan.Fields(v, "include_usage")[0]; iu {
			case "true", "false", "null", "":
				f.IncludeUsage = iu == "true"
			default:
				return f, apierror.BadRequest("stream_options.include_usage", "stream_options.include_usage must be a boolean")
			}
		case "max_tokens", "max_completion_tokens":
			if v == "null" {
				break
			}
			if c := v[0]; c != '-' && (c < '0' || c > '9') {
				return f, apierror.BadRequest(k, k+" must be an integer")
			}
			n, _ := strconv.ParseFloat(v, 64) // valid JSON: ±Inf past float64
			if n < 0 || n != math.Trunc(n) {
				return f, apierror.BadRequest(k, k+" must be a non-negative integer")
			}
			if !(n <= pricing.MaxTokens) { // 1e999 reads as +Inf
				return f, apierror.BadRequest(k, k+" must be at most "+itoa64(pricing.MaxTokens))
			}
			f.MaxTokens = max(f.MaxTokens, int64(n))
		case "prompt_cache_key":
			if jsonscan.IsString(v) {
				f.PromptCacheKey = body[at : at+len(v)]
			}
		case required:
			if aerr := checkRequired(op, v); aerr != nil {
				return f, aerr
			}
		}
	}
	switch {
	case d.At() < 0:
		return f, notJSON
	case !hasModel || f.Model == "":
		return f, apierror.BadRequest("model", "you must provide a model parameter")
	case !hasReq:
		return f, apierror.BadRequest(required, "missing required parameter: "+apierror.Quote(required))
	case f.Stream && op == provider.OpEmbeddings:
		return f, apierror.BadRequest("stream", "embeddings cannot be streamed")
	}
	return f, nil
}

// chatMessages checks a chat request's messages where they stand, the
// value p is at (a checked walk): a non-empty array of objects, each
// with a string role (its first). It hands turn each message's first
// role and content while it returns true (ParseTurns), and returns the
// index past the messages.
func chatMessages(p *jsonscan.Walker, turn func(role, content string) bool) (int, *apierror.Error) {
	if p.First() != '[' {
		return -1, apierror.BadRequest("messages", "messages must be an array of message objects")
	}
	w := p.Walk()
	n := 0
	for w.Member() {
		n++
		if w.First() != '{' {
			return -1, apierror.BadRequest("messages", "every entry of messages must be an object")
		}
		m := w.Walk()
		var role, content string
		for m.Member() {
			m.Skip()
			switch v := m.Val(); m.Key() {
			case "role":
				if role == "" && v != "" {
					if !jsonscan.IsString(v) {
						return -1, apierror.BadRequest("messages", "every message needs a string role")
					}
					role = v
				}
			case "content":
				if content == "" {
					content = v
				}
			}
		}
		if m.At() < 0 {
			return -1, notJSON
		}
		if role == "" {
			return -1, apierror.BadRequest("messages", "every message needs a string role")
		}
		w.Resume(m.At())
		if turn != nil && !turn(role, content) {
			turn = nil
		}
	}
	switch {
	case w.At() < 0:
		return -1, notJSON
	case n == 0:
		return -1, apierror.BadRequest("messages", "messages must not be empty")
	}
	return w.At(), nil
}

// Check is the bounded validation pass Parse makes as it walks, for a
// handler that reads a body itself (a Responses API WebSocket message),
// and the
// answer to a body a checked walk refused: syntax, UTF-8, nesting depth,
// distinct top-level keys, and an object.
func Check(body []byte) *apierror.Error {
	if aerr := checkJSON(body); aerr != nil {
		return aerr
	}
	// One valid JSON value: an object when it opens with a brace.
	if i := jsonscan.Space(unsafe.String(unsafe.SliceData(body), len(body)), 0); body[i] != '{' {
		return apierror.BadRequest("", "the request body must be a JSON object")
	}
	return nil
}

// checkJSON validates the body in one bounded pass (jsoncheck): syntax,
// UTF-8, nesting depth, and distinct top-level keys. Nothing input depth
// can drive recurses, so no body can overflow the stack.
func checkJSON(body []byte) *apierror.Error {
	err := jsonscan.Check(body)
	if err == nil {
		return nil
	}
	var je *jsonscan.Error
	if !errors.As(err, &je) {
		return apierror.BadRequest("", "the request body is not valid JSON: "+err.Error())
	}
	switch je.Problem {
	case jsonscan.DuplicateKey:
		return apierror.BadRequest(je.Key, "the request body repeats the top-level key "+apierror.Quote(je.Key)+": send each key once")
	case jsonscan.Depth:
		return apierror.BadRequest("", "the request body nests objects and arrays deeper than "+itoa64(jsonscan.MaxDepth)+
			" levels (at byte "+itoa64(int64(je.Offset))+")")
	case jsonscan.UTF8:
		return apierror.BadRequest("", "the request body is not valid UTF-8 (at byte "+itoa64(int64(je.Offset))+"): JSON text must be UTF-8")
	}
	return apierror.BadRequest("", "the request body is not valid JSON: "+je.Error())
}

func requiredField(op provider.Op) string {
	switch op {
	case provider.OpCompletions:
		return "prompt"
	case provider.OpEmbeddings:
		return "input"
	}
	return "messages"
}

// checkRequired checks the value v of a completions request's prompt or
// an embeddings request's input (a chat request's messages are
// chatMessages').
func checkRequired(op provider.Op, v string) *apierror.Error {
	switch op {
	case provider.OpCompletions:
		if !jsonscan.IsString(v) && v[0] != '[' {
			return apierror.BadRequest("prompt", "prompt must be a string or an array")
		}
	case provider.OpEmbeddings:
		switch {
		case jsonscan.IsString(v):
		case v[0] == '[':
			if v[jsonscan.Space(v, 1)] == ']' {
				return apierror.BadRequest("input", "input must not be empty")
			}
		default:
			return apierror.BadRequest("input", "input must be a string or an array")
		}
	}
	return nil
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
