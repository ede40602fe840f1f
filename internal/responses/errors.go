package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// Error is a request the router refuses before sending anything: an
// OpenAI-shaped error answer. Param names the field at fault ("" none);
// Code "" is null, as OpenAI has it for some of its own answers.
type Error struct {
	Status               int
	Code, Param, Message string
	// Type is error.type: "" means invalid_request_error.
	Type string
	// RetryAfter, when positive, is the Retry-After of a 503.
	RetryAfter time.Duration
	// Cause is what failed inside the router (a store that could not
	// answer), for the log; never shown to the client.
	Cause error
}

func (e *Error) Error() string { return e.Message }

// BadRequest is a 400 about param.
func BadRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_request_error", Param: param, Message: fmt.Sprintf(format, args...)}
}

// NotFound is the 404 for a response id the store does not hold, as
// OpenAI answers it: type invalid_request_error, param and code null.
func NotFound(id string) *Error {
	return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf("Response with id '%s' not found.", Cut(id))}
}

// Unavailable is the 503 for a store of responses that could not answer
// (store.Store's errors other than ErrNotFound): nothing is known about
// the id param names, so the request is refused rather than served
// without the conversation it continues. Clients retry a 503 after
// Retry-After.
func Unavailable(param string, cause error) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable", Param: param,
		RetryAfter: time.Second, Cause: cause,
		Message: "the router's store of responses could not be read; retry later"}
}

// Cut shortens an id or value quoted in a message.
func Cut(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// decodeError turns a decoding error into a 400 naming the field: the
// body is valid JSON (the proxy checked it), so this is a field of the
// wrong type. prefix is the path of what was decoded ("" the body).
func decodeError(prefix string, err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := join(prefix, te.Field)
		if field == "" {
			return BadRequest(prefix, "%s must be %s, got %s", orBody(prefix), kindWords(te.Type), te.Value)
		}
		return BadRequest(field, "%s must be %s, got %s", field, kindWords(te.Type), te.Value)
	}
	return BadRequest(prefix, "%s could not be read: %v", orBody(prefix), err)
}

func orBody(prefix string) string {
	if prefix == "" {
		return "the request body"
	}
	return prefix
}

// join is a field path: a.b, or a[0] for an index.
func join(prefix, field string) string {
	switch {
	case field == "":
		return prefix
	case prefix == "":
		return field
	}
	return prefix + "." + field
}

// kindWords says what a value of Go type t looks like in JSON.
func kindWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if t == reflect.TypeFor[json.RawMessage]() {
			return "a JSON value"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return kindWords(t.Elem())
	}
	return strings.ToLower(t.String())
}
