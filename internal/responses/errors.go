package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
)

// Error is a request the router refuses before sending anything: an
// OpenAI-shaped error answer of type invalid_request_error. Param names
// the field at fault ("" none).
type Error struct {
	Status               int
	Code, Param, Message string
}

func (e *Error) Error() string { return e.Message }

// badRequest is a 400 about param.
func badRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_request_error", Param: param, Message: fmt.Sprintf(format, args...)}
}

// NotFound is the 404 for a response id the store does not hold, in
// OpenAI's words.
func NotFound(id string) *Error {
	return &Error{Status: http.StatusNotFound, Code: "not_found",
		Message: fmt.Sprintf("Response with id '%s' not found.", cut(id))}
}

// cut shortens an id or value quoted in a message.
func cut(s string) string {
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
			return badRequest(prefix, "%s must be %s, got %s", orBody(prefix), kindWords(te.Type), te.Value)
		}
		return badRequest(field, "%s must be %s, got %s", field, kindWords(te.Type), te.Value)
	}
	return badRequest(prefix, "%s could not be read: %v", orBody(prefix), err)
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
