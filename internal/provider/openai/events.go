package openai

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// errNoTerminal is the cause of a Responses stream that ended before its
// terminal event. It wraps io.ErrUnexpectedEOF, never io.EOF.
var errNoTerminal = fmt.Errorf("stream ended before response.completed: %w", io.ErrUnexpectedEOF)

// eventStream yields the data payloads of a Responses API event stream
// (provider.OpResponses) unchanged. Unlike a chat stream it has no [DONE]:
// it ends properly with its terminal event, response.completed or
// response.incomplete, after which Next reports io.EOF without reading on.
// An error event, or response.failed, is the provider's failure, classified
// from the error it carries; a body that ends before the terminal event is
// a cut (outcome.Network). Next, Usage and Close belong to one goroutine.
type eventStream struct {
	sseBody
	target string // the model asked for
}

var _ provider.Stream = (*eventStream)(nil)

func newEventStream(ctx context.Context, body io.ReadCloser, what, target string) *eventStream {
	return &eventStream{newSSEBody(ctx, body, what+" (stream)"), target}
}

// Next returns the next event's data, valid until the next call.
func (s *eventStream) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	for {
		ev, err := s.rd.Next()
		if err != nil {
			if err == io.EOF {
				err = errNoTerminal
			}
			s.err = provider.TransportError(s.ctx, s.what, err)
			return nil, s.err
		}
		data := ev.Data
		if len(data) == 0 {
			continue
		}
		if sse.IsDone(data) {
			// Not OpenAI's (it sends no [DONE] on /responses), but a
			// [DONE] before the terminal event is a cut all the same.
			s.err = provider.TransportError(s.ctx, s.what, errNoTerminal)
			return nil, s.err
		}
		if !jsoncheck.Valid(data) {
			s.err = fmt.Errorf("%s: %w", s.what, &outcome.Error{
				Kind: outcome.ServerError, Message: "invalid JSON in stream event: " + plainMessage(data)})
			return nil, s.err
		}
		typ := gjson.GetBytes(data, "type").Str
		if typ != "" && !sse.EventName(typ, true) {
			// The client's event line is this type (issue 31, finding 4).
			s.err = fmt.Errorf("%s: %w", s.what, &outcome.Error{
				Kind: outcome.ServerError, Message: "stream event type " + strconv.Quote(typ) + " is not a Responses event name"})
			return nil, s.err
		}
		switch typ {
		case "error", "response.failed":
			s.err = fmt.Errorf("%s: %w", s.what, eventError(typ, data))
			return nil, s.err
		case "response.created":
			// The model is known from the start: a stream the client
			// leaves early has it too.
			s.usage.Model = models.Name(gjson.Get(unsafeString(data), "response.model").Str, s.target)
		case "response.completed", "response.incomplete":
			// data is not modified while the view is in use.
			u := readAnswer(provider.OpResponses, gjson.Get(unsafeString(data), "response"), s.target)
			if u.Model == "" {
				u.Model = s.usage.Model
			}
			s.usage = u
			s.err = io.EOF // the next call ends the stream
		}
		return data, nil
	}
}

// eventError classifies an error event (flat {type:"error", code, message,
// param}, or OpenAI's nested {type:"error", error:{type, code, message,
// param}}) or a response.failed event (response.error {code, message}).
func eventError(typ string, data []byte) *outcome.Error {
	var e openaiwire.Error
	res := gjson.ParseBytes(data)
	switch {
	case typ == "response.failed":
		r := res.Get("response.error")
		e = openaiwire.Error{Code: r.Get("code").Str, Message: r.Get("message").Str}
	case res.Get("error").IsObject():
		r := res.Get("error")
		e = openaiwire.Error{Type: r.Get("type").Str, Code: r.Get("code").Str, Param: r.Get("param").Str, Message: r.Get("message").Str}
	default:
		e = openaiwire.Error{Code: res.Get("code").Str, Param: res.Get("param").Str, Message: res.Get("message").Str}
	}
	if e.Type == "" {
		e.Type = e.Code // the flat shape and response.error carry no type: the code says it
	}
	oe := ClassifyError(0, nil, openaiwire.AppendError(nil, e), time.Time{})
	if oe.Message == "" {
		oe.Message = "the response failed during streaming"
	}
	return oe
}
