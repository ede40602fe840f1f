package apierror

import (
	"net/http"
	"time"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// Error is one of the router's own error answers: a refusal before any
// attempt, a provider's client error passed on, or nothing served
// (docs/ARCHITECTURE.md, "HTTP surface"). Its fields are the status and
// the OpenAI error fields; a front door of another shape writes the same
// value in its own (Exchange.Shape).
type Error struct {
	Status                     int
	Type, Code, Param, Message string
	// RetryAfter, when positive, is sent as Retry-After.
	RetryAfter time.Duration
	// EndConn: the body was not read to its end, so the answer must be the
	// connection's last (EndConnection).
	EndConn bool
	// Raw, when not nil, is a provider's own error body, written as it is
	// instead of the shape's (an error of a request sent natively, which
	// clients match on the provider's wording).
	Raw []byte
	// Final: retrying cannot win this answer (a spent budget), so it
	// carries x-should-retry: false, which the OpenAI and Anthropic SDKs
	// (and so Claude Code and Codex) obey instead of retrying every 429.
	Final bool
}

func (e *Error) Error() string { return e.Message }

// BadRequest is a 400 invalid_request_error about param ("" none).
func BadRequest(param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_request_error", Param: param, Message: msg}
}

// EndConnection makes the answer about to be written the connection's
// last, for an answer that leaves the request body unread: the server
// would otherwise read (and wait for) the rest of the body before
// answering, with no deadline, and keep the connection. Connection: close
// skips that; the expired read deadline makes the server's final drain of
// the body return at once, so a silent client can hold neither the
// answer nor the connection.
func EndConnection(w http.ResponseWriter) {
	w.Header()["Connection"] = valClose
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

var valClose = []string{"close"}

// Quote quotes s for an error message, cut to 100 bytes.
func Quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	b, _ := openaiwire.Append(nil, &s) // a string always encodes
	return string(b)
}
