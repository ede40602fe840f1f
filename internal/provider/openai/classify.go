package openai

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// quotaWait is the longest wait a 429 may ask for and still count as a
// rate limit; longer (Azure's "retry after 86400 seconds") is a quota
// block, permanent for the provider as far as routing is concerned.
const quotaWait = time.Hour

// ClassifyError turns one error answer into an *outcome.Error
// (docs/ARCHITECTURE.md, "Classification"). status is the HTTP status; 0
// (or any status below 400) means the answer carried no HTTP error status:
// an error event inside a 200 stream, or a 200 whose body is an error. h
// may be nil. now is the reference for an HTTP-date Retry-After.
//
// It starts from outcome.ForStatus(status) and fills Type, Code, Param and
// Message from the body, which may be any of the shapes the family uses:
// OpenAI {"error":{"message","type","param","code"}} with code a string, an
// integer or null; the same wrapped in an array; vLLM's flat
// {"object":"error","message","type","code":400}; llama.cpp's
// {"error":{"code":503,...}}; Ollama native {"error":"..."}; plain text or
// nothing (Message is then the trimmed text, at most 512 bytes).
//
// RetryAfter comes from retry-after-ms/Retry-After, else from the message
// ("Please try again in 6.596s", "Please retry after 6 seconds"), else, on
// a 429, from Azure's x-rate-limit-reset-tokens.
//
// Refinements of the status's kind:
//   - a quota or billing code or type (insufficient_quota,
//     credit_balance_exhausted, *_spend_limit_exceeded,
//     organization_usage_limit_exceeded, billing_hard_limit_reached,
//     billing_not_active) on a 4xx is Quota;
//   - a 429 asking to wait more than an hour is Quota (RetryAfter kept);
//     "Request too large" stays RateLimited;
//   - a 404 with code model_not_found or DeploymentNotFound (OpenAI,
//     Azure) is TargetMissing, with the provider's message: that target is
//     misconfigured; the client did nothing wrong and the provider's other
//     targets may be fine. A 404 whose message only names a model that
//     does not exist or is not found (Ollama's `model "x" not found, try
//     pulling it first`, vLLM's "The model `x` does not exist.") is a
//     ClientError that suspects TargetMissing (Error.Suspect): a message
//     may quote the request, so the router confirms it with a request of
//     its own (docs/ARCHITECTURE.md, "Classification");
//   - a 404 with no structured error at all, OpenAI's "Invalid URL", or a
//     not_found_error/NotFoundError that names no model (llama.cpp's "File
//     Not Found"): the endpoint is missing, base_url is wrong, which fails
//     every target of the provider: ServerError;
//   - a 400 with code context_length_exceeded (OpenAI, Azure), type
//     exceed_context_size_error (llama.cpp), or a message that begins as
//     OpenAI's context-length error does (vLLM sends no code:
//     provider.OpenAITooLong) is ContextExceeded;
//   - other 400, 404, 413, 422 stay ClientError;
//   - a 5xx other than 504 saying "Loading model" or "server busy"
//     (llama.cpp, Ollama), or with code server_is_overloaded, is
//     Overloaded; a 504 is ServerError (the provider's gateway timed out).
//
// RateLimit is what the headers announced (ParseRateLimit), as on a
// successful answer; it stays zero when h is nil.
//
// Without an HTTP error status, a numeric code in the body (llama.cpp 503,
// vLLM 400, Azure "429") stands in for the status and becomes
// Error.Status; failing that, the type and code decide, and anything
// unrecognised is ServerError.
func ClassifyError(status int, h http.Header, body []byte, now time.Time) *outcome.Error {
	e := classifyError(status, h, body, now)
	e.Message = provider.Message(e.Message)
	return e
}

func classifyError(status int, h http.Header, body []byte, now time.Time) *outcome.Error {
	f := parseErrorBody(body)
	e := &outcome.Error{Status: status, Type: f.typ, Code: f.code, Param: f.param, Message: f.message}
	if h != nil {
		e.RetryAfter = provider.RetryAfter(h, now)
		e.RateLimit = ParseRateLimit(h, now)
	}
	if e.RetryAfter == 0 {
		e.RetryAfter = waitFromMessage(f.message)
	}

	eff := status
	if status < 400 {
		eff = 0
		if n := statusFromCode(f.code); n != 0 {
			eff, e.Status = n, n
		}
	}
	if e.RetryAfter == 0 && eff == http.StatusTooManyRequests && h != nil {
		e.RetryAfter = parseSeconds(provider.HeaderValue(h, hAzureResetTokens))
	}

	switch {
	case eff >= 400:
		e.Kind = outcome.ForStatus(eff)
	default:
		e.Kind = kindFromFields(f)
	}

	switch {
	case (eff == 0 || (eff >= 400 && eff < 500)) && (isQuota(f.code) || isQuota(f.typ)):
		e.Kind = outcome.Quota
	case e.Kind == outcome.RateLimited && e.RetryAfter > quotaWait:
		e.Kind = outcome.Quota
	case eff == http.StatusBadRequest && (anyFold(f.code, "context_length_exceeded") || anyFold(f.typ, "exceed_context_size_error") ||
		provider.OpenAITooLong(f.message)):
		// The prompt is too long for this target's window: a larger one
		// may serve (docs/ARCHITECTURE.md, "Context windows").
		e.Kind = outcome.ContextExceeded
	case eff == http.StatusNotFound && anyFold(f.code, "model_not_found", "DeploymentNotFound"):
		e.Kind = outcome.TargetMissing
	case eff == http.StatusNotFound && modelMissingWords(f.message):
		// Words only (Ollama, vLLM send no code), and a message may
		// quote the request: suspected until the router's own request
		// says the same.
		e.Kind, e.Suspect = outcome.ClientError, outcome.TargetMissing
	case eff == http.StatusNotFound && (!f.structured || hasPrefixFold(f.message, "invalid url") ||
		anyFold(f.typ, "not_found_error", "NotFoundError")):
		e.Kind = outcome.ServerError
		e.Message = "provider endpoint not found (check base_url): " + e.Message
	case eff >= 500 && eff != http.StatusGatewayTimeout && isOverloaded(f):
		e.Kind = outcome.Overloaded
	}
	return e
}

// errorFields are the parts of an error body the classifier reads.
type errorFields struct {
	typ, code, param, message string
	// structured: the body was JSON naming a type or a code, i.e. an API
	// speaking about the request rather than a gateway or a web server.
	structured bool
}

// parseErrorBody reads any error shape of the family; see ClassifyError.
func parseErrorBody(body []byte) errorFields {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return errorFields{}
	}
	if (body[0] == '{' || body[0] == '[') && jsoncheck.Valid(body) {
		root := gjson.ParseBytes(body)
		if root.IsArray() {
			root = root.Get("0") // Gemini's OpenAI-compatible layer wraps errors in an array
		}
		if root.IsObject() {
			obj := root
			switch e := root.Get("error"); {
			case e.IsObject():
				obj = e
			case e.Type == gjson.String:
				return errorFields{message: e.Str} // Ollama native {"error":"..."}
			}
			f := errorFields{
				typ:     scalar(obj.Get("type")),
				code:    scalar(obj.Get("code")),
				param:   scalar(obj.Get("param")),
				message: scalar(obj.Get("message")),
			}
			if st := obj.Get("status"); f.typ == "" && st.Type == gjson.String {
				f.typ = st.Str // Google RPC status name; Azure's numeric status is not a type
			}
			f.structured = f.typ != "" || f.code != ""
			if f.message == "" {
				f.message = scalar(root.Get("detail")) // FastAPI's {"detail":"Not Found"}
			}
			if f.message != "" || f.structured {
				return f
			}
		}
	}
	return errorFields{message: plainMessage(body)}
}

// scalar is a string or number field's text; "" for null, absent, objects
// and arrays.
func scalar(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		return r.Str
	case gjson.Number:
		return r.Raw
	}
	return ""
}

// plainMessage is b as a message (see provider.Message).
func plainMessage(b []byte) string { return provider.Message(string(b)) }

// statusFromCode reads a code that is an HTTP error status (llama.cpp 503,
// vLLM 400, Azure "429"); 0 otherwise.
func statusFromCode(code string) int {
	if len(code) != 3 {
		return 0
	}
	n, err := strconv.Atoi(code)
	if err != nil || n < 400 || n > 599 {
		return 0
	}
	return n
}

// kindFromFields classifies an error that came without an HTTP error
// status, by its type and code.
func kindFromFields(f errorFields) outcome.Kind {
	switch {
	case isQuota(f.code) || isQuota(f.typ):
		return outcome.Quota
	case anyFold(f.code, "rate_limit_exceeded", "slow_down") ||
		anyFold(f.typ, "rate_limit_error", "rate_limit_exceeded", "requests", "tokens", "RESOURCE_EXHAUSTED"):
		return outcome.RateLimited
	case overloadedFields(f):
		return outcome.Overloaded
	case anyFold(f.code, "model_not_found", "DeploymentNotFound"):
		return outcome.TargetMissing
	case anyFold(f.code, "invalid_api_key") ||
		anyFold(f.typ, "authentication_error", "permission_error", "AuthenticationError", "PermissionDeniedError", "UNAUTHENTICATED", "PERMISSION_DENIED"):
		return outcome.Auth
	case anyFold(f.code, "context_length_exceeded") || anyFold(f.typ, "exceed_context_size_error"):
		return outcome.ContextExceeded
	case anyFold(f.code, "content_filter", "invalid_prompt") ||
		anyFold(f.typ, "invalid_request_error", "BadRequestError", "INVALID_ARGUMENT"):
		return outcome.ClientError
	case anyFold(f.typ, "timeout_error", "DEADLINE_EXCEEDED"):
		return outcome.Timeout
	case isOverloaded(f):
		// Words last: a typed error's message may quote the request.
		return outcome.Overloaded
	}
	return outcome.ServerError
}

// isQuota reports a code or type that means out of money or over a spend
// limit, as OpenAI, Azure and OpenAI-compatible clouds name it.
func isQuota(s string) bool {
	return anyFold(s, "insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded",
		"project_spend_limit_exceeded", "organization_usage_limit_exceeded", "billing_hard_limit_reached",
		"billing_not_active")
}

// modelMissingWords reports a message that names a model and says it
// does not exist or is not found (the OpenAI-compatible servers send no
// code: Ollama `model "x" not found, try pulling it first`, vLLM "The
// model `x` does not exist.").
func modelMissingWords(msg string) bool {
	return containsFold(msg, "model") &&
		(containsFold(msg, "not found") || containsFold(msg, "not exist") || containsFold(msg, "n't exist"))
}

// isOverloaded reports a body that says the server is short of capacity.
func isOverloaded(f errorFields) bool {
	return overloadedFields(f) || containsFold(f.message, "loading model") || containsFold(f.message, "server busy")
}

// overloadedFields reports a code or type that says the server is short
// of capacity.
func overloadedFields(f errorFields) bool {
	return anyFold(f.code, "server_is_overloaded", "overloaded") ||
		anyFold(f.typ, "overloaded_error", "service_unavailable_error", "unavailable_error", "UNAVAILABLE")
}

func anyFold(s string, words ...string) bool {
	if s == "" {
		return false
	}
	for _, w := range words {
		if strings.EqualFold(s, w) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains word, ignoring ASCII case.
func containsFold(s, word string) bool { return indexFold(s, word) >= 0 }

// waitFromMessage reads the wait a rate-limit message states in words:
// OpenAI and Groq "Please try again in 6.596s" (a Go duration), Azure
// "Please retry after 6 seconds". 0 when there is none.
func waitFromMessage(msg string) time.Duration {
	for _, lead := range [...]string{"try again in ", "retry after "} {
		i := indexFold(msg, lead)
		if i < 0 {
			continue
		}
		if d := parseWaitPhrase(msg[i+len(lead):]); d > 0 {
			return d
		}
	}
	return 0
}

// indexFold is strings.Index ignoring ASCII case; messages are short and
// this runs on error paths only.
func indexFold(s, word string) int {
	for i := 0; i+len(word) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(word)], word) {
			return i
		}
	}
	return -1
}

// parseWaitPhrase reads "6.596s", "1m30s", "644ms", "6 seconds", "2
// minutes" or "500 milliseconds" at the start of s.
func parseWaitPhrase(s string) time.Duration {
	n := 0
	for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.') {
		n++
	}
	if n == 0 {
		return 0
	}
	// A Go duration runs on without a space: "6.596s", "1m30.5s", "644ms".
	end := n
	for end < len(s) && s[end] != ' ' && s[end] != ',' && s[end] != ';' && s[end] != ')' {
		end++
	}
	if end > n {
		tok := strings.TrimRight(s[:end], ".")
		if d, err := time.ParseDuration(tok); err == nil {
			return min(max(d, 0), maxWait)
		}
		return 0
	}
	v, err := strconv.ParseFloat(strings.TrimRight(s[:n], "."), 64)
	if err != nil {
		return 0
	}
	unit := strings.TrimLeft(s[n:], " ")
	switch {
	case hasPrefixFold(unit, "ms"), hasPrefixFold(unit, "millisecond"):
		return clampSeconds(v / 1000)
	case hasPrefixFold(unit, "s"): // s, sec, second(s)
		return clampSeconds(v)
	case hasPrefixFold(unit, "min"):
		return clampSeconds(v * 60)
	case hasPrefixFold(unit, "h"):
		return clampSeconds(v * 3600)
	}
	return 0
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
