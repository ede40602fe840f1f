package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/relay"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// shape writes the router's own errors as Anthropic does:
// {"type":"error","error":{"type","message"},"request_id"}, the type word
// chosen by status (docs/ARCHITECTURE.md, "HTTP surface").
type shape struct{}

var _ answer.Shape = shape{}

// errorType is Anthropic's word for a status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusUnprocessableEntity:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

func (shape) AppendError(dst []byte, ex *answer.Exchange, e *apierror.Error) []byte {
	return appendError(dst, errorType(e.Status), e.Message, ex.ID)
}

// appendError appends an Anthropic error document.
func appendError(dst []byte, typ, msg, requestID string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst, _ = openaiwire.Append(dst, &typ)
	dst = append(dst, `,"message":`...)
	dst, _ = openaiwire.Append(dst, &msg)
	dst = append(dst, '}')
	if requestID != "" {
		dst = append(dst, `,"request_id":`...)
		dst, _ = openaiwire.Append(dst, &requestID)
	}
	return append(dst, '}')
}

// kindType is the Anthropic error word for a provider failure that cut a
// stream after the commit point.
func kindType(k outcome.Kind) string {
	switch k {
	case outcome.RateLimited:
		return "rate_limit_error"
	case outcome.Overloaded:
		return "overloaded_error"
	case outcome.Timeout:
		return "timeout_error"
	}
	return "api_error"
}

// nativeEvents frames a native Messages stream: each payload, as the
// provider sent it, under the event name its type gives; a failure after
// the commit point is one error event.
type nativeEvents struct{}

var _ relay.Framer = nativeEvents{}

func (nativeEvents) Chunk(dst, payload []byte) ([]byte, error) {
	name := eventType(payload)
	if !sse.EventName(name, false) {
		// The stream refuses such a type before it gets here; the event
		// line is written only for a name that cannot break it.
		return dst, errEventName
	}
	return appendEvent(dst, name, payload), nil
}

// errEventName ends a native stream whose event's type is not an event
// name ([a-z_]+).
var errEventName = &outcome.Error{Kind: outcome.ServerError, Message: "the provider's stream sent an event whose type is not a Messages event name"}

// End writes nothing: the provider's message_stop was the last event.
func (nativeEvents) End(dst []byte) []byte { return dst }

func (nativeEvents) Fail(dst []byte, kind outcome.Kind) []byte {
	return failEvent(dst, kind)
}

// failEvent appends the error event that ends a stream cut after its
// commit point.
func failEvent(dst []byte, kind outcome.Kind) []byte {
	dst = append(dst, "event: error\ndata: "...)
	dst = appendError(dst, kindType(kind), "the provider's stream failed after it started ("+kind.String()+"); the answer is incomplete", "")
	return append(dst, "\n\n"...)
}

// appendEvent appends one SSE event.
func appendEvent(dst []byte, name string, data []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, '\n')
	return sse.AppendData(dst, data)
}

// eventType reads a payload's top-level "type" without decoding it: the
// Messages API puts it first ({"type":"content_block_delta",…}); a
// payload that does not is named by a slower look.
func eventType(p []byte) string {
	const prefix = `{"type":"`
	if len(p) > len(prefix) && string(p[:len(prefix)]) == prefix {
		rest := p[len(prefix):]
		for i, c := range rest {
			if c == '"' {
				return eventName(rest[:i])
			}
			if c == '\\' {
				break
			}
		}
	}
	return eventName([]byte(typeOf(p)))
}

// eventName is the constant string of a known event type (no allocation),
// else the type itself.
func eventName(t []byte) string {
	switch string(t) {
	case "content_block_delta":
		return "content_block_delta"
	case "content_block_start":
		return "content_block_start"
	case "content_block_stop":
		return "content_block_stop"
	case "message_start":
		return "message_start"
	case "message_delta":
		return "message_delta"
	case "message_stop":
		return "message_stop"
	case "ping":
		return "ping"
	case "error":
		return "error"
	}
	if len(t) == 0 {
		return "message"
	}
	return string(t)
}

// model writes one model in Anthropic's shape.
func model(name string, created int64) []byte {
	b := appendModel(make([]byte, 0, 96), name, time.Unix(created, 0).UTC().Format(time.RFC3339))
	return append(b, '\n')
}

// appendModel appends {"type":"model","id","display_name","created_at"}.
func appendModel(b []byte, name, at string) []byte {
	b = append(b, `{"type":"model","id":`...)
	b, _ = openaiwire.Append(b, &name)
	b = append(b, `,"display_name":`...)
	b, _ = openaiwire.Append(b, &name)
	b = append(b, `,"created_at":"`...)
	b = append(b, at...)
	return append(b, `"}`...)
}

// models writes the model list in Anthropic's shape: the configured
// names as configured (patterns included).
func models(names []string, created int64) []byte {
	at := time.Unix(created, 0).UTC().Format(time.RFC3339)
	b := append(make([]byte, 0, 64+len(names)*96), `{"data":[`...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendModel(b, n, at)
	}
	b = append(b, `],"has_more":false,"first_id":`...)
	if len(names) > 0 {
		b, _ = openaiwire.Append(b, &names[0])
		b = append(b, `,"last_id":`...)
		b, _ = openaiwire.Append(b, &names[len(names)-1])
	} else {
		b = append(b, `null,"last_id":null`...)
	}
	return append(b, "}\n"...)
}

// countJSON is count_tokens' answer of the router's own estimate.
func countJSON(n int64) []byte {
	b := append(make([]byte, 0, 32), `{"input_tokens":`...)
	b = strconv.AppendInt(b, n, 10)
	return append(b, "}\n"...)
}
