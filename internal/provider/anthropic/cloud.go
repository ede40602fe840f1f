package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

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
