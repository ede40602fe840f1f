package answer

import "github.com/llmrouter/llmrouter/internal/apierror"

// Shape is a front-door API's way of writing the router's own errors
// (docs/ARCHITECTURE.md, "Front doors"); the OpenAI shape is the
// default.
type Shape interface {
	// AppendError appends the body of e, an answer to ex, to dst.
	AppendError(dst []byte, ex *Exchange, e *apierror.Error) []byte
}
