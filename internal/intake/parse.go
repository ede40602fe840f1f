package intake

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

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
	// included); both alias the body, nil when absent. What a dialect
	// reads a conversation's identity from (internal/affinity).
	Messages, PromptCacheKey []byte
}

// Parse reads the top-level fields the router needs in one pass over the
// document (values it does not need are skipped, not decoded) and checks
// the types of those it reads, after one bounded validation pass
// (jsoncheck). body must not change while the result is in use; strings
// in the result do not alias body (its byte slices do).
func Parse(op provider.Op, body []byte) (Fields, *apierror.Error) {
	var f Fields
	if aerr := checkJSON(body); aerr != nil {
		return f, aerr
	}
	doc := gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
	if !doc.IsObject() {
		return f, apierror.BadRequest("", "the request body must be a JSON object")
	}
	var (
		aerr     *apierror.Error
		hasModel bool
		required = requiredField(op)
		hasReq   bool
	)
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			if v.Type != gjson.String {
				aerr = apierror.BadRequest("model", "model must be a string")
				return false
			}
			hasModel = true
			f.Model = strings.Clone(v.Str)
			f.ModelStart, f.ModelEnd = v.Index, v.Index+len(v.Raw)
		case "stream":
			switch v.Type {
			case gjson.True, gjson.False:
				f.Stream = v.Type == gjson.True
			case gjson.Null:
			default:
				aerr = apierror.BadRequest("stream", "stream must be a boolean")
				return false
			}
		case "stream_options":
			if v.Type == gjson.Null {
				break
			}
			if !v.IsObject() {
				aerr = apierror.BadRequest("stream_options", "stream_options must be an object")
				return false
			}
			iu := v.Get("include_usage")
			switch iu.Type {
			case gjson.True, gjson.False, gjson.Null:
				f.IncludeUsage = iu.Type == gjson.True
			default:
				aerr = apierror.BadRequest("stream_options.include_usage", "stream_options.include_usage must be a boolean")
				return false
			}
		case "max_tokens", "max_completion_tokens":
			switch v.Type {
			case gjson.Null:
			case gjson.Number:
				if v.Num < 0 || v.Num != math.Trunc(v.Num) {
					aerr = apierror.BadRequest(k.Str, k.Str+" must be a non-negative integer")
					return false
				}
				if !(v.Num <= pricing.MaxTokens) { // 1e999 reads as +Inf
					aerr = apierror.BadRequest(k.Str, k.Str+" must be at most "+itoa64(pricing.MaxTokens))
					return false
				}
				if n := int64(v.Num); n > f.MaxTokens {
					f.MaxTokens = n
				}
			default:
				aerr = apierror.BadRequest(k.Str, k.Str+" must be an integer")
				return false
			}
		case "prompt_cache_key":
			if v.Type == gjson.String {
				f.PromptCacheKey = body[v.Index : v.Index+len(v.Raw)]
			}
		case required:
			hasReq = true
			if aerr = checkRequired(op, v); aerr != nil {
				return false
			}
			if op == provider.OpChat {
				f.Messages = body[v.Index : v.Index+len(v.Raw)]
			}
		}
		return true
	})
	if aerr != nil {
		return f, aerr
	}
	if !hasModel || f.Model == "" {
		return f, apierror.BadRequest("model", "you must provide a model parameter")
	}
	if !hasReq {
		return f, apierror.BadRequest(required, "missing required parameter: "+apierror.Quote(required))
	}
	if f.Stream && op == provider.OpEmbeddings {
		return f, apierror.BadRequest("stream", "embeddings cannot be streamed")
	}
	return f, nil
}

// Check is the bounded validation pass Parse starts with, for a handler
// that reads the body itself (the Responses API's): syntax, UTF-8,
// nesting depth, distinct top-level keys, and an object.
func Check(body []byte) *apierror.Error {
	if aerr := checkJSON(body); aerr != nil {
		return aerr
	}
	if !gjson.ParseBytes(body).IsObject() {
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

func checkRequired(op provider.Op, v gjson.Result) *apierror.Error {
	switch op {
	case provider.OpChat:
		if !v.IsArray() {
			return apierror.BadRequest("messages", "messages must be an array of message objects")
		}
		n := 0
		var bad *apierror.Error
		v.ForEach(func(_, m gjson.Result) bool {
			n++
			if !m.IsObject() {
				bad = apierror.BadRequest("messages", "every entry of messages must be an object")
				return false
			}
			if r := m.Get("role"); r.Type != gjson.String {
				bad = apierror.BadRequest("messages", "every message needs a string role")
				return false
			}
			return true
		})
		if bad != nil {
			return bad
		}
		if n == 0 {
			return apierror.BadRequest("messages", "messages must not be empty")
		}
	case provider.OpCompletions:
		if v.Type != gjson.String && !v.IsArray() {
			return apierror.BadRequest("prompt", "prompt must be a string or an array")
		}
	case provider.OpEmbeddings:
		switch {
		case v.Type == gjson.String:
		case v.IsArray():
			if len(v.Array()) == 0 {
				return apierror.BadRequest("input", "input must not be empty")
			}
		default:
			return apierror.BadRequest("input", "input must be a string or an array")
		}
	}
	return nil
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
