package bedrock

import (
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// exceptions maps an AWS error code (an HTTP answer's x-amzn-ErrorType,
// or a stream's exception frame, capitalised) to its kind and the status
// AWS documents for it; the status serves exception frames, which arrive
// after a 200. docs/ARCHITECTURE.md, "Classification", has the table.
var exceptions = map[string]struct {
	kind   outcome.Kind
	status int
}{
	"ThrottlingException":         {outcome.RateLimited, http.StatusTooManyRequests},
	"TooManyRequestsException":    {outcome.RateLimited, http.StatusTooManyRequests},
	"ModelNotReadyException":      {outcome.Overloaded, http.StatusTooManyRequests},
	"ServiceUnavailableException": {outcome.Overloaded, http.StatusServiceUnavailable},
	"InternalServerException":     {outcome.ServerError, http.StatusInternalServerError},
	"ModelErrorException":         {outcome.ServerError, http.StatusFailedDependency},
	"ModelStreamErrorException":   {outcome.ServerError, http.StatusFailedDependency},
	// The model's own time limit on Bedrock's side, not our timer (as
	// Anthropic's timeout_error).
	"ModelTimeoutException":         {outcome.ServerError, http.StatusRequestTimeout},
	"ValidationException":           {outcome.ClientError, http.StatusBadRequest},
	"ServiceQuotaExceededException": {outcome.Quota, http.StatusBadRequest},
	"ResourceNotFoundException":     {outcome.ClientError, http.StatusNotFound},
	"AccessDeniedException":         {outcome.Auth, http.StatusForbidden},
	// Authentication itself: an unknown key, a bad or stale signature, a
	// session token past its expiry.
	"UnrecognizedClientException":         {outcome.Auth, http.StatusForbidden},
	"InvalidSignatureException":           {outcome.Auth, http.StatusForbidden},
	"IncompleteSignatureException":        {outcome.Auth, http.StatusForbidden},
	"MissingAuthenticationTokenException": {outcome.Auth, http.StatusForbidden},
	"ExpiredTokenException":               {outcome.Auth, http.StatusForbidden},
	"InvalidClientTokenId":                {outcome.Auth, http.StatusForbidden},
	// A path the service does not have: a wrong base_url, which fails
	// every target of the provider.
	"UnknownOperationException": {outcome.ServerError, http.StatusNotFound},
}

// ClassifyError turns a Bedrock error answer into an *outcome.Error. The
// code is x-amzn-ErrorType's (up to its ':'), else the body's __type (after
// its '#') or code; the message is the body's message. The code decides
// the kind (exceptions). Where Bedrock reuses a code for a target that
// cannot be served, the message refines it: an AccessDeniedException
// saying the account has no access to the model (model access is granted
// per model; the provider's other models still serve) is TargetMissing; a
// ValidationException saying the model identifier is invalid, needs an
// inference profile or reached its end of life, and a
// ResourceNotFoundException about the model, are a ClientError that
// suspects TargetMissing (Error.Suspect), since a ValidationException
// quotes the request: the router confirms it with a request of its own
// (docs/ARCHITECTURE.md, "Classification"). A code not listed, or none, is classified by status
// (outcome.ForStatus). Bedrock sends no rate-limit headers; RetryAfter is
// read all the same, in case a gateway in front sends one.
func ClassifyError(status int, h http.Header, body []byte, now time.Time) *outcome.Error {
	var doc gjson.Result
	if jsoncheck.Valid(body) {
		doc = gjson.ParseBytes(body)
	}
	code := h.Get("X-Amzn-Errortype")
	if code == "" {
		code = doc.Get("__type").Str
		if i := strings.LastIndexByte(code, '#'); i >= 0 {
			code = code[i+1:]
		}
	}
	if code == "" {
		code = doc.Get("code").Str
	}
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	msg := doc.Get("message").Str
	if msg == "" {
		msg = doc.Get("Message").Str
	}
	if msg == "" && !doc.Exists() {
		msg = string(body)
	}
	e := classify(code, status, msg)
	e.RetryAfter = provider.RetryAfter(h, now)
	return e
}

// exceptionError classifies an exception frame of an event stream: its
// :exception-type (throttlingException, modelStreamErrorException, …) and
// its payload, {"message": …}.
func exceptionError(typ string, payload []byte) *outcome.Error {
	var msg string
	if jsoncheck.Valid(payload) {
		msg = gjson.GetBytes(payload, "message").Str
	}
	if typ != "" {
		typ = strings.ToUpper(typ[:1]) + typ[1:]
	}
	e := classify(typ, 0, msg)
	if e.Kind == outcome.ServerError && e.Status == 0 {
		e.Kind = outcome.Unknown // an exception of a type we do not know
	}
	e.Message = provider.Message("bedrock stream: " + e.Message)
	return e
}

// classify is the kind, status and words of an error with code, status
// (0 for an exception frame) and message.
func classify(code string, status int, msg string) *outcome.Error {
	e := &outcome.Error{Status: status, Code: code, Message: msg}
	ex, known := exceptions[code]
	if e.Status == 0 {
		e.Status = ex.status
	}
	lower := strings.ToLower(msg)
	switch {
	case code == "ValidationException" && (strings.Contains(lower, "model identifier is invalid") ||
		strings.Contains(lower, "on-demand throughput") || strings.Contains(lower, "end of its life")),
		code == "ResourceNotFoundException" && strings.Contains(lower, "model"):
		// A ValidationException quotes the request ("extraneous key [x]
		// is not permitted", the model's own 400 about a block's tag):
		// its words only suspect the target, until the router's own
		// request says the same.
		e.Kind, e.Suspect = outcome.ClientError, outcome.TargetMissing
	case code == "ValidationException" && provider.BedrockTooLong(msg):
		// "Input is too long for requested model.": for this target's
		// window; a larger one may serve (docs/ARCHITECTURE.md, "Context
		// windows").
		e.Kind = outcome.ContextExceeded
	case code == "AccessDeniedException" && strings.Contains(lower, "access to the model"):
		// IAM's words about the target's model, never a request's: a
		// request's content cannot be denied access.
		e.Kind = outcome.TargetMissing
	case known:
		e.Kind = ex.kind
	default:
		e.Kind = outcome.ForStatus(e.Status)
	}
	switch e.Kind {
	case outcome.OK:
		// A redirect or another non-200 success: base_url points somewhere
		// that is not Bedrock.
		e.Kind = outcome.ServerError
	case outcome.ClientError, outcome.TargetMissing, outcome.ContextExceeded:
		// The word both front doors use for a request's fault; the AWS
		// code stays in Code.
		e.Type = "invalid_request_error"
	}
	if e.Message == "" {
		e.Message = code
	}
	if e.Message == "" {
		e.Message = http.StatusText(e.Status)
	}
	e.Message = provider.Message(e.Message)
	return e
}
