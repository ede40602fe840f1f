package proxy

import (
	"errors"
	"net/http"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// apiError is a client-facing error before any attempt: status plus the
// OpenAI error fields.
type apiError struct {
	status  int
	typ     string
	code    string
	param   string
	message string
	// retryAfter, when positive, is sent as Retry-After.
	retryAfter time.Duration
	// endConn: the body was not read to its end, so this answer is the
	// connection's last (see endConnection).
	endConn bool
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_request_error", param: param, message: msg}
}

// fields is what the router reads from a request body. Everything else
// passes through untouched.
type fields struct {
	model        string
	modelStart   int
	modelEnd     int
	stream       bool
	includeUsage bool
	maxTokens    int64
}

// parseFields reads the top-level fields the router needs in one pass
// over the document (values it does not need are skipped, not decoded) and
// checks the types of those it reads. body must not change while the
// result is in use; strings in the result do not alias body.
func parseFields(op provider.Op, body []byte) (fields, *apiError) {
	var f fields
	if aerr := checkJSON(body); aerr != nil {
		return f, aerr
	}
	doc := gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
	if !doc.IsObject() {
		return f, badRequest("", "the request body must be a JSON object")
	}
	var (
		aerr     *apiError
		hasModel bool
		required = requiredField(op)
		hasReq   bool
	)
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			if v.Type != gjson.String {
				aerr = badRequest("model", "model must be a string")
				return false
			}
			hasModel = true
			f.model = strings.Clone(v.Str)
			f.modelStart, f.modelEnd = v.Index, v.Index+len(v.Raw)
		case "stream":
			switch v.Type {
			case gjson.True, gjson.False:
				f.stream = v.Type == gjson.True
			case gjson.Null:
			default:
				aerr = badRequest("stream", "stream must be a boolean")
				return false
			}
		case "stream_options":
			if v.Type == gjson.Null {
				break
			}
			if !v.IsObject() {
				aerr = badRequest("stream_options", "stream_options must be an object")
				return false
			}
			iu := v.Get("include_usage")
			switch iu.Type {
			case gjson.True, gjson.False, gjson.Null:
				f.includeUsage = iu.Type == gjson.True
			default:
				aerr = badRequest("stream_options.include_usage", "stream_options.include_usage must be a boolean")
				return false
			}
		case "max_tokens", "max_completion_tokens":
			switch v.Type {
			case gjson.Null:
			case gjson.Number:
				if v.Num < 0 || v.Num != float64(int64(v.Num)) {
					aerr = badRequest(k.Str, k.Str+" must be a non-negative integer")
					return false
				}
				if n := int64(v.Num); n > f.maxTokens {
					f.maxTokens = n
				}
			default:
				aerr = badRequest(k.Str, k.Str+" must be an integer")
				return false
			}
		case required:
			hasReq = true
			if aerr = checkRequired(op, v); aerr != nil {
				return false
			}
		}
		return true
	})
	if aerr != nil {
		return f, aerr
	}
	if !hasModel || f.model == "" {
		return f, badRequest("model", "you must provide a model parameter")
	}
	if !hasReq {
		return f, badRequest(required, "missing required parameter: "+quote(required))
	}
	if f.stream && op == provider.OpEmbeddings {
		return f, badRequest("stream", "embeddings cannot be streamed")
	}
	return f, nil
}

// checkJSON validates the body in one bounded pass (jsoncheck): syntax,
// UTF-8, nesting depth, and distinct top-level keys. Nothing input depth
// can drive recurses, so no body can overflow the stack.
func checkJSON(body []byte) *apiError {
	err := jsoncheck.Check(body)
	if err == nil {
		return nil
	}
	var je *jsoncheck.Error
	if !errors.As(err, &je) {
		return badRequest("", "the request body is not valid JSON: "+err.Error())
	}
	switch je.Problem {
	case jsoncheck.DuplicateKey:
		return badRequest(je.Key, "the request body repeats the top-level key "+quote(je.Key)+": send each key once")
	case jsoncheck.Depth:
		return badRequest("", "the request body nests objects and arrays deeper than "+itoa(jsoncheck.MaxDepth)+
			" levels (at byte "+itoa(int64(je.Offset))+")")
	case jsoncheck.UTF8:
		return badRequest("", "the request body is not valid UTF-8 (at byte "+itoa(int64(je.Offset))+"): JSON text must be UTF-8")
	}
	return badRequest("", "the request body is not valid JSON: "+je.Error())
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

func checkRequired(op provider.Op, v gjson.Result) *apiError {
	switch op {
	case provider.OpChat:
		if !v.IsArray() {
			return badRequest("messages", "messages must be an array of message objects")
		}
		n := 0
		var bad *apiError
		v.ForEach(func(_, m gjson.Result) bool {
			n++
			if !m.IsObject() {
				bad = badRequest("messages", "every entry of messages must be an object")
				return false
			}
			if r := m.Get("role"); r.Type != gjson.String {
				bad = badRequest("messages", "every message needs a string role")
				return false
			}
			return true
		})
		if bad != nil {
			return bad
		}
		if n == 0 {
			return badRequest("messages", "messages must not be empty")
		}
	case provider.OpCompletions:
		if v.Type != gjson.String && !v.IsArray() {
			return badRequest("prompt", "prompt must be a string or an array")
		}
	case provider.OpEmbeddings:
		switch {
		case v.Type == gjson.String:
		case v.IsArray():
			if len(v.Array()) == 0 {
				return badRequest("input", "input must not be empty")
			}
		default:
			return badRequest("input", "input must be a string or an array")
		}
	}
	return nil
}

func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return string(provider.AppendJSONString(nil, s))
}
