package anthropic

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/tidwall/gjson"
	"golang.org/x/net/http/httpguts"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// The Messages API's own request headers, as the Messages front door
// forwards them in provider.Request.Native (canonical names): the client's
// API version and its betas, comma-separated.
const (
	HeaderVersion = "Anthropic-Version"
	HeaderBeta    = "Anthropic-Beta"
)

// Shared header values of the native path: net/http and internal/h1 only
// read them.
var (
	valJSON = []string{"application/json"}
	valSSE  = []string{"text/event-stream"}
)

// doMessages serves provider.OpMessages natively: the client's Messages
// body with only the model swapped, the client's anthropic-version and
// anthropic-beta, and the provider's answer as it came (see the package
// doc).
func (a *Adapter) doMessages(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := a.postNative(ctx, a.messagesURL, req, req.Stream, "calling anthropic messages")
	if err != nil {
		return nil, err
	}
	out := &provider.Response{RateLimit: ParseRateLimit(resp.Header, a.now())}
	if req.Stream {
		resp.Header, resp.Request = nil, nil // read: see Do
		out.Stream = newNativeStream(ctx, resp.Body, req.Model)
		return out, nil
	}
	raw, err := provider.ReadBody(ctx, "reading anthropic message", resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	if out.Usage, err = ReadNativeMessage(raw, req.Model); err != nil {
		return nil, err
	}
	out.Body = raw
	return out, nil
}

// ReadNativeMessage checks a 200's Messages answer, passed on natively
// (provider.OpMessages), and reads its usage and the model that answered
// (target is the one asked for): invalid JSON is a ServerError; an error
// document is the failure it names, with Body raw.
func ReadNativeMessage(raw []byte, target string) (outcome.Usage, error) {
	if !jsoncheck.Valid(raw) {
		return outcome.Usage{}, invalidAnswer("invalid JSON")
	}
	// raw is not modified while doc is in use; Usage keeps numbers and an
	// interned name only.
	doc := gjson.Parse(unsafeString(raw))
	if doc.Get("type").Str == "error" {
		// Not Anthropic's way, but an Anthropic-shaped gateway may answer
		// 200 with an error document: it is a failure all the same.
		e := eventError(doc.Get("error"))
		e.Message = "reading anthropic message: " + e.Message
		e.Body = raw
		return outcome.Usage{}, e
	}
	var u usage
	u.read(doc.Get("usage"))
	ou := u.outcome()
	ou.Model = models.Name(doc.Get("model").Str, target)
	return ou, nil
}

// CountTokens asks Anthropic to count a Messages request's input tokens
// (POST /v1/messages/count_tokens, free of charge), sent as Do sends an
// OpMessages request. A 200's body, {"input_tokens": N}, is returned in
// Response.Body as received; Usage is zero (nothing was spent), and so is
// RateLimit: Anthropic limits token counting apart from message creation,
// so its headers say nothing about the Messages budget. Any other answer is
// an *outcome.Error classified as Do's are, with Body set and, for the same
// reason, no RateLimit.
func (a *Adapter) CountTokens(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := a.postNative(ctx, a.countURL, req, false, "calling anthropic count_tokens")
	if err != nil {
		var oe *outcome.Error
		if errors.As(err, &oe) {
			oe.RateLimit = outcome.RateLimit{}
		}
		return nil, err
	}
	raw, err := provider.ReadBody(ctx, "reading anthropic token count", resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	if !jsoncheck.Valid(raw) {
		return nil, &outcome.Error{Kind: outcome.ServerError, Status: http.StatusOK,
			Message: "reading anthropic token count: invalid JSON", Err: errInvalidAnswer}
	}
	return &provider.Response{Body: raw}, nil
}

// postNative sends req (an OpMessages request) to url, asking for an
// event stream when stream is set, and returns the 200 answer, whose body
// the caller reads and closes. Any other answer is classified by
// ClassifyError, with Body the error body as it came (bounded by
// provider.ReadErrorBody): the router passes a client error on byte for
// byte, as clients match on its wording.
//
// The headers are the provider's key (never the client's: the request
// carries none), the client's anthropic-version or else the configured
// one, and the client's anthropic-beta verbatim (the Messages front door's
// req.Native): a beta is never filtered, since a body field sent without
// its beta is a 400 upstream.
func (a *Adapter) postNative(ctx context.Context, url string, req *provider.Request, stream bool, what string) (*http.Response, error) {
	if req.Op != provider.OpMessages {
		return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest,
			Type: "invalid_request_error", Message: what + ": not a Messages request (" + req.Op.String() + ")"}
	}
	// A value the transport would refuse is the client's fault, not the
	// network's: say so before sending (the transport's error would be
	// classified Network and count against the provider).
	for _, f := range req.Native {
		if !httpguts.ValidHeaderFieldValue(f.Value) {
			return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest,
				Type: "invalid_request_error", Message: what + ": anthropic-version or anthropic-beta holds characters a header cannot carry"}
		}
	}
	body := req.AppendBody(make([]byte, 0, req.BodySize()))
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, provider.TransportError(ctx, what, err)
	}
	h := hr.Header
	if a.key != "" {
		h["X-Api-Key"] = a.keyValue
	}
	h[HeaderVersion] = a.versionValue
	for _, f := range req.Native {
		if f.Value != "" {
			h[f.Name] = []string{f.Value}
		}
	}
	h["Content-Type"] = valJSON
	if stream {
		h["Accept"] = valSSE
	} else {
		h["Accept"] = valJSON
	}
	resp, err := provider.Send(a.client, hr)
	if err != nil {
		return nil, provider.TransportError(ctx, what, err)
	}
	if resp.StatusCode != http.StatusOK {
		// ReadErrorBody's slice is the adapter's own, and ClassifyError
		// keeps no view into it.
		raw := provider.ReadErrorBody(resp)
		e := ClassifyError(resp.StatusCode, resp.Header, raw, a.now())
		e.Body = raw
		return nil, e
	}
	return resp, nil
}

// nativeStream yields the data payloads of a Messages event stream
// unchanged (provider.OpMessages): message_start, content_block_start,
// _delta and _stop, message_delta, message_stop, ping and event types
// added later, in order, each the bytes of its data field. The stream ends
// properly with message_stop, whose payload is returned before io.EOF; a
// body that ends cleanly after message_delta gave the stop reason is whole
// too, and gets the message_stop it lacked (docs/ARCHITECTURE.md,
// "Streaming"). An error event is the provider's failure, classified from
// the error it carries, with Body its payload; a body that ends before the
// stop reason is a cut (provider.TransportError). Next reads a payload's type and, on
// message_start and message_delta, its usage (and message_start's model),
// from the SSE reader's own buffer: an event allocates nothing. target is
// the model asked for.
type nativeStream struct{ upstream }

var _ provider.Stream = (*nativeStream)(nil)

func newNativeStream(ctx context.Context, body io.ReadCloser, target string) *nativeStream {
	return newNativeStreamOn(ctx, sse.NewReader(body), body, target)
}

// newNativeStreamOn is newNativeStream on events from any transport; body
// is closed by Close.
func newNativeStreamOn(ctx context.Context, events Events, body io.Closer, target string) *nativeStream {
	return &nativeStream{upstream{ctx: ctx, body: body, events: events, target: target}}
}

// messageStop is the payload of the message_stop a whole answer's body
// ended without; nobody writes into it.
var messageStop = []byte(`{"type":"message_stop"}`)

// Next returns the next event's data, valid until the next call. io.EOF
// follows message_stop; any other error is an *outcome.Error and repeats
// on later calls.
func (s *nativeStream) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.done {
		return nil, io.EOF
	}
	// raw stays untouched until the next read; the results read from it
	// below keep numbers only, or are copied.
	raw, data, typ, err := s.next()
	if err == io.EOF {
		s.done = true
		return messageStop, nil
	}
	if err != nil {
		return nil, err
	}
	switch typ {
	case "message_start":
		msg := gjson.Get(data, "message")
		s.model = models.Name(msg.Get("model").Str, s.target)
		s.usage.read(msg.Get("usage"))
	case "message_delta":
		// Anthropic's counts here are cumulative: the last one wins.
		s.usage.read(gjson.Get(data, "usage"))
		if gjson.Get(data, "delta.stop_reason").Type == gjson.String {
			s.finished = true
		}
	case "message_stop":
		s.done = true
	case "error":
		e := eventError(gjson.Get(data, "error"))
		e.Body = bytes.Clone(raw)
		return nil, s.fail(e)
	}
	return raw, nil
}
