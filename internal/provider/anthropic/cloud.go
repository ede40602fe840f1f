package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/net/http/httpguts"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// What the clouds that sell Claude (AWS Bedrock, Google Vertex AI) reuse
// of this package: they take the same Messages body and answer the same
// message and events, but name the model in the URL, take the version and
// betas in the body, and frame a stream their own way
// (docs/ARCHITECTURE.md, "Providers").

// Events is a Messages event stream as its transport delivers it: an SSE
// body from Anthropic and Vertex, event-stream frames from Bedrock.
// *sse.Reader is one.
type Events interface {
	// Next returns the next event; its Data (one event's JSON) and Name
	// are valid until the next call. io.EOF means the transport ended
	// cleanly between events; an *outcome.Error (a cloud's exception
	// frame) is kept as it is; any other error is a cut.
	Next() (sse.Event, error)
	// Pending reports whether the next event is probably already read
	// from the connection (see sse.Reader.Pending).
	Pending() bool
}

var _ Events = (*sse.Reader)(nil)

// TranslateChat appends the Messages request for an OpenAI chat request
// (provider.OpChat) to dst, as the adapter sends it to /v1/messages: with
// req.Model as model and stream set when req.Stream is. defaultMaxTokens
// is the max_tokens sent when the client gave none; either is lowered to
// req.MaxOutputTokens when above it. Its error is an
// *outcome.Error of kind ClientError: the request never reaches the
// network.
func TranslateChat(dst []byte, req *provider.Request, defaultMaxTokens int64) ([]byte, error) {
	return translate(dst, req, defaultMaxTokens)
}

// ConvertMessage appends the OpenAI chat.completion for the Messages
// answer raw to dst, created its timestamp, and returns its usage and the
// model that answered (target is the one asked for).
func ConvertMessage(dst, raw []byte, target string, created int64) ([]byte, outcome.Usage, error) {
	return convertMessage(dst, raw, target, created)
}

// NewChatStream returns the OpenAI chat.completion.chunk stream of a
// Messages event stream read from events (see the package doc); body is
// closed by Close, and ctx classifies a cut. model names the chunks until
// message_start names the provider's; created stamps them.
func NewChatStream(ctx context.Context, events Events, body io.Closer, model string, created int64, includeUsage bool) provider.Stream {
	return newStreamOn(ctx, events, body, model, created, includeUsage)
}

// NewNativeStream returns the stream of a Messages event stream's data
// payloads, unchanged, as provider.OpMessages yields them (see
// nativeStream); target is the model asked for.
func NewNativeStream(ctx context.Context, events Events, body io.Closer, target string) provider.Stream {
	return newNativeStreamOn(ctx, events, body, target)
}

// InvokeBody is a Messages body as a cloud's invoke call takes it (Bedrock
// InvokeModel, Vertex rawPredict): body's members in their order, each
// value byte for byte, except model (the URL names it) and, unless
// keepStream, stream (Bedrock streams by endpoint; Vertex reads the flag);
// with anthropic_version first, set to version unless body has one, and
// anthropic_beta, the client's anthropic-beta header split on commas,
// unless the header is empty or body has one. A client that already wrote
// the cloud's fields (a Bedrock SDK pointed at the router) keeps them.
// maxTokens, when above 0, is the target's cap (provider.Request's
// MaxOutputTokens): a max_tokens above it is written as maxTokens.
// body must be a JSON object: anything else is a ClientError.
func InvokeBody(body []byte, version, beta string, keepStream bool, maxTokens int64) ([]byte, error) {
	doc := gjson.ParseBytes(body)
	if !doc.IsObject() {
		return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest,
			Type: "invalid_request_error", Message: "a Messages body must be a JSON object"}
	}
	hasVersion, hasBeta := doc.Get("anthropic_version").Exists(), doc.Get("anthropic_beta").Exists()
	out := make([]byte, 0, len(body)+len(version)+len(beta)+64)
	out = append(out, '{')
	if !hasVersion {
		v, _ := json.Marshal(version)
		out = append(append(append(out, `"anthropic_version":`...), v...), ',')
	}
	if !hasBeta {
		if betas := splitBetas(beta); len(betas) > 0 {
			v, _ := json.Marshal(betas)
			out = append(append(append(out, `"anthropic_beta":`...), v...), ',')
		}
	}
	doc.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "model", k.Str == "stream" && !keepStream:
			return true
		case k.Str == "max_tokens" && maxTokens > 0 && v.Type == gjson.Number && v.Num > float64(maxTokens):
			out = strconv.AppendInt(append(append(out, k.Raw...), ':'), maxTokens, 10)
			out = append(out, ',')
			return true
		}
		out = append(append(append(append(out, k.Raw...), ':'), v.Raw...), ',')
		return true
	})
	if out[len(out)-1] == ',' {
		out = out[:len(out)-1]
	}
	return append(out, '}'), nil
}

// splitBetas is an anthropic-beta header's values, trimmed, empty ones
// dropped; never filtered otherwise (a beta stripped is a silent loss).
func splitBetas(h string) []string {
	var out []string
	for v := range strings.SplitSeq(h, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Cloud is what a cloud that sells Claude does its own way: where a
// Messages body for a model goes, and how a streamed answer is framed.
// Bedrock and Vertex each implement it; OnCloud does the rest, once for
// both (docs/ARCHITECTURE.md, "Providers").
type Cloud interface {
	// Post sends body, a Messages body as InvokeBody made it, for req's
	// model (to the streaming call when req.Stream), with beta ("" none)
	// as the anthropic-beta header, and returns the 200 answer, whose body
	// the caller reads and closes. Any other answer is an error carrying
	// an *outcome.Error.
	Post(ctx context.Context, req *provider.Request, body []byte, beta string) (*http.Response, error)
	// Events reads a streamed answer's Messages events from body.
	Events(ctx context.Context, body io.Reader) Events
}

// CloudConfig is how a cloud takes the Messages body.
type CloudConfig struct {
	// Version is the anthropic_version its invoke call takes
	// (bedrock-2023-05-31, vertex-2023-10-16).
	Version string
	// BetasInHeader sends the client's anthropic-beta as the header
	// (Vertex reads betas there); false writes them into the body's
	// anthropic_beta (Bedrock).
	BetasInHeader bool
	// KeepStream keeps the body's stream flag (Vertex reads it); false
	// drops it (Bedrock streams by endpoint).
	KeepStream bool
	// ErrorBodies: the cloud passes Anthropic's own error documents on
	// (Vertex), so a Messages client sent natively gets one byte for byte;
	// false drops them (Bedrock's are not Anthropic's) and the front door
	// words the error from its kind.
	ErrorBodies bool
	// Reading names the read of a whole answer in errors ("reading
	// bedrock invoke answer").
	Reading string
	// MaxResponse bounds a whole answer (limits.max_response_bytes).
	MaxResponse int64
	// Now stamps translated answers; nil means time.Now.
	Now func() time.Time
}

// OnCloud serves req, for one of Anthropic's models, through c: a
// Messages request (provider.OpMessages) natively, the client's body as
// InvokeBody makes it and the answer and events as they came; an OpChat
// request translated onto the Messages API (TranslateChat) and its answer
// translated back. Every error carries an *outcome.Error.
func OnCloud(ctx context.Context, c Cloud, cc *CloudConfig, req *provider.Request) (*provider.Response, error) {
	var (
		body []byte
		beta string
		err  error
	)
	switch req.Op {
	case provider.OpMessages:
		if cc.BetasInHeader {
			beta = req.NativeHeader(HeaderBeta)
			if !httpguts.ValidHeaderFieldValue(beta) {
				// The transport would refuse it as a network failure; it
				// is the client's.
				return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest, Type: "invalid_request_error",
					Message: cc.Reading + ": anthropic-beta holds characters a header cannot carry"}
			}
			body, err = InvokeBody(req.Body, cc.Version, "", cc.KeepStream, req.MaxOutputTokens)
		} else {
			body, err = InvokeBody(req.Body, cc.Version, req.NativeHeader(HeaderBeta), cc.KeepStream, req.MaxOutputTokens)
		}
	case provider.OpChat:
		var msg []byte
		if msg, err = TranslateChat(make([]byte, 0, len(req.Body)+256), req, DefaultMaxTokens); err == nil {
			body, err = InvokeBody(msg, cc.Version, "", cc.KeepStream, req.MaxOutputTokens)
		}
	default:
		return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: "Claude on a cloud does not serve " + req.Op.String()}
	}
	if err != nil {
		return nil, err
	}
	resp, err := c.Post(ctx, req, body, beta)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if cc.Now != nil {
		now = cc.Now
	}
	out := &provider.Response{RateLimit: outcome.UnknownRateLimit}
	if req.Stream {
		resp.Header, resp.Request = nil, nil // not read after the status: see Adapter.Do
		events := c.Events(ctx, resp.Body)
		if req.Op == provider.OpMessages {
			out.Stream = NewNativeStream(ctx, events, resp.Body, req.Model)
		} else {
			out.Stream = NewChatStream(ctx, events, resp.Body, req.Model, now().Unix(), req.IncludeUsage)
		}
		return out, nil
	}
	raw, err := provider.ReadBody(ctx, cc.Reading, resp, cc.MaxResponse)
	if err != nil {
		return nil, err
	}
	if req.Op == provider.OpChat {
		if out.Body, out.Usage, err = ConvertMessage(make([]byte, 0, len(raw)+256), raw, req.Model, now().Unix()); err != nil {
			return nil, err
		}
		return out, nil
	}
	if out.Usage, err = ReadNativeMessage(raw, req.Model); err != nil {
		var oe *outcome.Error
		if !cc.ErrorBodies && errors.As(err, &oe) {
			oe.Body = nil
		}
		return nil, err
	}
	out.Body = raw
	return out, nil
}
