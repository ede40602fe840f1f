package messages

import "net/http"

// Error is a refusal in Anthropic's terms, written as
// {"type":"error","error":{"type":Type,"message":Message}}.
type Error struct {
	// Status is the HTTP status: 400, 404, 413…
	Status int
	// Type is Anthropic's word for the error: invalid_request_error,
	// not_found_error, request_too_large…
	Type string
	// Message says what is wrong, Anthropic-style: the field path, a
	// colon, and pydantic's wording ("messages.0.role: Input should be
	// 'user' or 'assistant'").
	Message string
}

func (e *Error) Error() string { return e.Message }

// invalid is a 400 invalid_request_error about the field at path.
func invalid(path, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: path + ": " + msg}
}

// Pydantic's wording, which Anthropic's validation answers with.
const (
	msgRequired = "Field required"
	msgString   = "Input should be a valid string"
	msgInteger  = "Input should be a valid integer"
	msgFraction = "Input should be a valid integer, got a number with a fractional part"
	msgNumber   = "Input should be a valid number"
	msgBool     = "Input should be a valid boolean"
	msgList     = "Input should be a valid list"
	msgDict     = "Input should be a valid dictionary"
	msgNoTag    = "Unable to extract tag using discriminator 'type'"
)
