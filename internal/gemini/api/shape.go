package api

import (
	"net/http"
	"strconv"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// shape writes the router's own errors as Google does:
// {"error":{"code","message","status"}}, the status word chosen by the
// HTTP status (docs/ARCHITECTURE.md, "HTTP surface").
type shape struct{}

var _ answer.Shape = shape{}

// statusWord is Google's google.rpc.Code name for an HTTP status.
func statusWord(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable, 529:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 400 && status < 500 {
		return "INVALID_ARGUMENT"
	}
	return "INTERNAL"
}

func (shape) AppendError(dst []byte, _ *answer.Exchange, e *apierror.Error) []byte {
	return appendError(dst, e.Status, e.Message)
}

// appendError appends a Google error document.
func appendError(dst []byte, status int, msg string) []byte {
	dst = append(dst, `{"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(status), 10)
	dst = append(dst, `,"message":`...)
	dst, _ = openaiwire.Append(dst, &msg)
	dst = append(dst, `,"status":"`...)
	dst = append(dst, statusWord(status)...)
	return append(dst, `"}}`...)
}

// kindStatus is the HTTP status a provider failure that cut a stream
// after the commit point is reported with.
func kindStatus(k outcome.Kind) int {
	switch k {
	case outcome.RateLimited, outcome.Quota:
		return http.StatusTooManyRequests
	case outcome.Overloaded:
		return http.StatusServiceUnavailable
	case outcome.Timeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// failError appends the error document that ends a stream cut after its
// commit point.
func failError(dst []byte, kind outcome.Kind) []byte {
	return appendError(dst, kindStatus(kind), "the provider's stream failed after it started ("+kind.String()+"); the answer is incomplete")
}

// bad is a 400 INVALID_ARGUMENT naming what is wrong.
func bad(msg string) *apierror.Error {
	return &apierror.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_argument", Message: msg}
}
