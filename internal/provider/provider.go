package provider

import (
	"context"
	"strconv"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Op is the OpenAI operation a request asks for.
type Op uint8

const (
	OpChat        Op = iota // POST /v1/chat/completions
	OpCompletions           // POST /v1/completions (legacy)
	OpEmbeddings            // POST /v1/embeddings
	// OpResponses is POST /v1/responses sent natively to a provider's own
	// Responses API (OpenAI, Azure): the body is the client's, and a
	// stream is the Responses API's events, not chat chunks. Only
	// adapters that say so serve it; the Responses API translated onto
	// chat is OpChat.
	OpResponses
	// OpMessages is POST /v1/messages (Anthropic's Messages API) sent
	// natively to an Anthropic-format provider: the body is the client's
	// with only the model swapped, and a stream is the Messages events'
	// data payloads (each carries its type). Only adapters that say so
	// serve it; a Messages request translated onto chat is OpChat.
	OpMessages
	// OpGemini is the Gemini API's generateContent (streamGenerateContent
	// when Stream is set) sent natively to a provider that speaks it
	// (gemini, and Google's models on vertex): the body is the client's,
	// the target's model named in the URL (the body names none), and a
	// stream is the GenerateContentResponse events' data payloads. Only
	// adapters that say so serve it; a Gemini request translated onto chat
	// is OpChat.
	OpGemini
)

func (o Op) String() string {
	switch o {
	case OpChat:
		return "chat"
	case OpCompletions:
		return "completions"
	case OpEmbeddings:
		return "embeddings"
	case OpResponses:
		return "responses"
	case OpMessages:
		return "messages"
	case OpGemini:
		return "gemini"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Path is the OpenAI path of the operation below /v1.
func (o Op) Path() string {
	switch o {
	case OpCompletions:
		return "/completions"
	case OpEmbeddings:
		return "/embeddings"
	case OpResponses:
		return "/responses"
	case OpMessages:
		return "/messages"
	case OpGemini:
		return "/models:generateContent"
	}
	return "/chat/completions"
}

// Request is one attempt's input. Body is the client's JSON exactly as
// received; the proxy validated it and read the fields below from it. The
// adapter must not modify Body: the same bytes serve every retry.
type Request struct {
	Op Op
	// Stream and IncludeUsage share Op's word: a request is allocated
	// for every client request, and one word more would take it into
	// the next size class.
	Stream       bool // the client asked for an SSE stream
	IncludeUsage bool // stream_options.include_usage was true

	Model string // the provider's model name for this target (replaces the client's)
	Body  []byte

	// ModelStart and ModelEnd delimit the client's "model" value in Body
	// (the JSON string including its quotes), so that OpenAI-family adapters
	// can swap the model name without re-encoding the document.
	ModelStart, ModelEnd int

	// MaxOutputTokens is the target's cap on the answer's length
	// (route.Target.MaxOutputTokens), set with Model for each attempt: an
	// output limit in Body above it is sent as MaxOutputTokens (by
	// AppendBody, and by the translating adapters in their provider's
	// field), and so is a default an adapter sends when the client set
	// none (docs/ARCHITECTURE.md, "Output limits"). 0 means no cap.
	MaxOutputTokens int64

	// Native are the client's headers of a native API that its front door
	// forwards, as sent, to the adapters serving that API natively (the
	// Messages API's anthropic-version and anthropic-beta): each dialect
	// fills its own, the adapters of its API read them (NativeHeader), the
	// others ignore them. Never the client's credentials; nil: none.
	Native []Header

	// Alt, when not nil, is the same request translated for the targets
	// whose adapter does not serve Op (a Messages request sent natively
	// to Anthropic-format targets and as chat completions to the
	// others); the attempt loop picks per target.
	Alt *Request
}

// Header is one request header: Name canonical (as
// http.CanonicalHeaderKey writes it), Value as the client sent it (a
// header sent on several lines joined by commas).
type Header struct{ Name, Value string }

// NativeHeader is the value of r's native header name (canonical); "" when
// the client sent none.
func (r *Request) NativeHeader(name string) string {
	for _, h := range r.Native {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// AppendBody appends Body with the model value replaced by r.Model to dst
// and, when r.MaxOutputTokens is set, each of the op's output limits
// above it (chat's max_completion_tokens and max_tokens, completions' and
// Messages' max_tokens, the Responses API's max_output_tokens) written as
// r.MaxOutputTokens.
func (r *Request) AppendBody(dst []byte) []byte {
	if r.MaxOutputTokens > 0 {
		return r.appendCapped(dst)
	}
	if r.ModelEnd <= r.ModelStart {
		return append(dst, r.Body...)
	}
	dst = append(dst, r.Body[:r.ModelStart]...)
	// A string always encodes, and a pointer costs no allocation.
	dst, _ = openaiwire.Append(dst, &r.Model)
	return append(dst, r.Body[r.ModelEnd:]...)
}

// BodySize is the length AppendBody will produce, give or take escaping.
func (r *Request) BodySize() int {
	return len(r.Body) - (r.ModelEnd - r.ModelStart) + len(r.Model) + 2
}

// Response is a successful answer. For a non-stream request Body holds the
// whole JSON document, OpenAI-shaped (the provider's own for a native
// operation: OpResponses, OpMessages); for a stream request Stream yields
// the chunks and Body is nil.
type Response struct {
	Body   []byte
	Stream Stream
	Usage  outcome.Usage // non-stream usage; streams report theirs via Stream.Usage

	// RateLimit is what the provider's headers said about its budget.
	RateLimit outcome.RateLimit
}

// Stream yields the OpenAI chat.completion.chunk (or completion) JSON
// payloads of a streamed answer, without SSE framing; for OpResponses,
// the Responses API's event payloads, and for OpMessages the Messages
// API's (each carries its type).
type Stream interface {
	// Next returns the next payload: one valid JSON document (an adapter
	// checks what its provider sent before it returns it, so framers
	// downstream need not). The slice is valid until the next call.
	// io.EOF means the provider ended the stream properly; any other error
	// is classified (a cut connection is outcome.Network, an error event is
	// the kind it names).
	Next() ([]byte, error)
	// Usage is the usage the stream has reported so far.
	Usage() outcome.Usage
	// Close releases the upstream connection; it is safe to call twice.
	Close() error
}

// Adapter sends one attempt to one provider.
type Adapter interface {
	// Do sends req. The returned error, if any, carries an *outcome.Error.
	// When the answer is a stream, Do returns once the response headers
	// arrived; ctx stays bound to the stream until Close.
	Do(ctx context.Context, req *Request) (*Response, error)
	// Supports reports whether the adapter can serve op at all.
	Supports(op Op) bool
}

// ModelOps is implemented by adapters whose operations depend on the
// target's model: a cloud that serves Anthropic's models the Messages API
// natively and its other models chat only. SupportsModel refines Supports
// for one target's model; it is never true where Supports is false.
type ModelOps interface {
	SupportsModel(op Op, model string) bool
}

// Serves reports whether a serves op for a target of model: Supports,
// refined by SupportsModel when a implements ModelOps.
func Serves(a Adapter, op Op, model string) bool {
	if !a.Supports(op) {
		return false
	}
	if m, ok := a.(ModelOps); ok {
		return m.SupportsModel(op, model)
	}
	return true
}

// Endpointer is implemented by adapters whose type's block, not base_url
// alone, says which endpoint the provider reaches (Bedrock's region,
// Vertex's project and location). Endpoint names it, without a secret: it
// is part of what the router's learned state of the provider applies to,
// so a reload or restart that changes it starts the provider afresh.
type Endpointer interface {
	Endpoint() string
}

// EndpointOf is a's Endpoint, or "" when a is not an Endpointer (base_url
// says it all).
func EndpointOf(a Adapter) string {
	if e, ok := a.(Endpointer); ok {
		return e.Endpoint()
	}
	return ""
}

// CredentialFinder is implemented by adapters that take their cloud's own
// credentials instead of an API key (bedrock, vertex). FindCredentials
// looks for them as the first request would (files, and the network: STS,
// a metadata server), bounded by ctx, and says where they came from, never
// what they are; an error carries an *outcome.Error as Do's would. Build
// never calls it: `router validate --credentials` does.
type CredentialFinder interface {
	FindCredentials(ctx context.Context) (source string, err error)
}

// Prober is implemented by adapters that can check their provider's health
// on a free endpoint (GET models, Ollama tags, /health) without spending
// tokens. A nil error means healthy; an *outcome.Error says why not.
type Prober interface {
	Probe(ctx context.Context) error
}

// ResponseFetcher is implemented by adapters whose provider keeps the
// responses of its own Responses API (OpenAI, Azure): it forwards a
// request about one of them (a background response the provider is still
// running) to the provider. method is GET, DELETE or POST; path is below
// /responses/ ("resp_1", "resp_1/input_items", "resp_1/cancel"), its
// segments escaped; query is the raw query ("" none). A 2xx answer's body
// is returned in Response.Body; any other answer is an error carrying an
// *outcome.Error, classified as Do's are.
type ResponseFetcher interface {
	FetchResponse(ctx context.Context, method, path, query string) (*Response, error)
}

// TokenCounter is implemented by adapters whose provider counts a Messages
// request's input tokens for free (Anthropic's POST
// /v1/messages/count_tokens). req is an OpMessages request (its Body the
// client's count_tokens body, model swapped by AppendBody); a 200's body
// is returned in Response.Body as received; any other answer is an error
// carrying an *outcome.Error (with Body set), classified as Do's are.
type TokenCounter interface {
	CountTokens(ctx context.Context, req *Request) (*Response, error)
}
