package vertex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/gemini"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// AnthropicVersion is the anthropic_version Vertex AI's rawPredict takes
// in a Messages body.
const AnthropicVersion = "vertex-2023-10-16"

// Adapter sends requests to one location of Google Vertex AI with OAuth2
// access tokens (see the package doc). It is safe for concurrent use.
type Adapter struct {
	location    string // scheme://host/{version}/projects/{p}/locations/{r}
	client      *http.Client
	maxResponse int64 // limits.max_response_bytes (provider.ReadBody)
	tokens      *tokens
	now         func() time.Time      // wall clock: created stamps, quota resets
	cloud       anthropic.CloudConfig // how Claude is served (anthropic.OnCloud)
}

var (
	_ provider.Adapter  = (*Adapter)(nil)
	_ provider.Prober   = (*Adapter)(nil)
	_ provider.ModelOps = (*Adapter)(nil)

	_ provider.CredentialFinder = (*Adapter)(nil)
	_ provider.Endpointer       = (*Adapter)(nil)
)

// Endpoint names the project and location (and API version), as the
// URL prefix of every call: what the provider's learned state is true of,
// kept across a reload or restart only while it stays the same.
func (a *Adapter) Endpoint() string { return a.location }

// New returns the adapter of provider p with its `vertex:` block c.
// p.BaseURL is scheme://host ("" means https://{region}-aiplatform.
// googleapis.com, or https://aiplatform.googleapis.com for global; a
// Private Service Connect endpoint or a gateway otherwise); api_key_env
// and api_key_file are refused (Vertex AI takes OAuth2 tokens from
// Application Default Credentials, found on first use). client nil means
// provider.NewHTTPClient(p). New does no I/O. Every problem is reported
// at once, joined, each naming its key.
func New(p provider.Config, c Config, client *http.Client) (*Adapter, error) {
	return newAdapter(p, c, client, defaultCredentials(nil))
}

func newAdapter(p provider.Config, c Config, client *http.Client, creds func() (*auth.Credentials, error)) (*Adapter, error) {
	errs := []error{provider.Under("vertex", c.Validate())}
	host := "https://" + c.Region + "-aiplatform.googleapis.com"
	if c.Region == "global" {
		host = "https://aiplatform.googleapis.com"
	}
	u, err := provider.ParseBaseURL(p.BaseURL, host)
	switch {
	case err != nil:
		errs = append(errs, err)
	case strings.Trim(u.Path, "/") != "":
		errs = append(errs, fmt.Errorf("base_url: %q: give scheme://host only; the adapter appends /v1/projects/…", p.BaseURL))
	}
	if p.APIKeyEnv != "" || p.APIKeyFile != "" {
		errs = append(errs, errors.New("api_key_env: vertex takes no API key: requests carry OAuth2 tokens from Application Default Credentials (a service-account key file, workload identity, the metadata server)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	version := c.APIVersion
	if version == "" {
		version = DefaultAPIVersion
	}
	if client == nil {
		client = provider.NewHTTPClient(p)
	}
	a := &Adapter{
		maxResponse: p.MaxResponseBytes,
		location:    u.Scheme + "://" + u.Host + "/" + version + "/projects/" + url.PathEscape(c.Project) + "/locations/" + c.Region,
		client:      client,
		tokens:      &tokens{load: creds},
		now:         time.Now,
	}
	a.cloud = anthropic.CloudConfig{Version: AnthropicVersion, BetasInHeader: true, KeepStream: true, ErrorBodies: true,
		Reading: "reading vertex rawPredict answer", MaxResponse: a.maxResponse, Now: func() time.Time { return a.now() }}
	return a, nil
}

// isAnthropic says whether a Vertex model name is one of Anthropic's
// (claude-sonnet-4-5@20250929, claude-haiku-4-5…): those are published by
// anthropic and take the Messages body; every other model is Google's.
func isAnthropic(model string) bool { return strings.HasPrefix(model, "claude") }

// Supports reports chat (every model) and the Messages API (natively, for
// Anthropic models: SupportsModel).
func (a *Adapter) Supports(op provider.Op) bool {
	return op == provider.OpChat || op == provider.OpMessages || op == provider.OpGemini
}

// SupportsModel refines Supports per target: the Messages API natively to
// Anthropic models only; for Gemini a Messages request goes as chat.
func (a *Adapter) SupportsModel(op provider.Op, model string) bool {
	switch op {
	case provider.OpChat:
		return true
	case provider.OpMessages:
		return isAnthropic(model)
	case provider.OpGemini:
		return !isAnthropic(model)
	}
	return false
}

// Do sends req: OpMessages for an Anthropic model natively through
// rawPredict (streamRawPredict); OpChat for an Anthropic model translated
// by the anthropic package onto the same calls; OpChat for any other model
// translated by the gemini package onto generateContent
// (streamGenerateContent). A stream request returns once the response
// headers arrived; the stream stays bound to ctx until Close. Every error
// carries an *outcome.Error.
func (a *Adapter) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	switch {
	case (req.Op == provider.OpMessages || req.Op == provider.OpChat) && isAnthropic(req.Model):
		return anthropic.OnCloud(ctx, claudeCloud{a}, &a.cloud, req)
	case req.Op == provider.OpChat:
		return a.generate(ctx, req)
	case req.Op == provider.OpGemini && !isAnthropic(req.Model):
		return a.generateNative(ctx, req)
	}
	return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest, Type: "invalid_request_error",
		Message: "vertex does not serve " + req.Op.String() + " for " + req.Model}
}

// claudeCloud is how Vertex takes Claude's Messages body (anthropic.OnCloud):
// the client's anthropic-beta as the same header (as Anthropic's Vertex SDK
// sends it), the stream flag kept (streamRawPredict reads it), an SSE
// stream, Anthropic's own error documents passed on.
type claudeCloud struct{ a *Adapter }

var _ anthropic.Cloud = claudeCloud{}

// Post sends body to rawPredict, or streamRawPredict for a stream.
func (c claudeCloud) Post(ctx context.Context, req *provider.Request, body []byte, beta string) (*http.Response, error) {
	return c.a.rawPredict(ctx, req, body, beta)
}

// Events reads streamRawPredict's server-sent events.
func (c claudeCloud) Events(_ context.Context, body io.Reader) anthropic.Events {
	return sse.NewReader(body)
}

// rawPredict posts a Messages body to rawPredict, or streamRawPredict for
// a stream, with beta ("" none) as anthropic-beta.
func (a *Adapter) rawPredict(ctx context.Context, req *provider.Request, body []byte, beta string) (*http.Response, error) {
	u := a.location + "/publishers/anthropic/models/" + url.PathEscape(req.Model)
	if req.Stream {
		return a.post(ctx, u+":streamRawPredict", body, true, beta, "calling vertex streamRawPredict")
	}
	return a.post(ctx, u+":rawPredict", body, false, beta, "calling vertex rawPredict")
}

// generate serves OpenAI chat for a Gemini model through the gemini
// package's translation.
func (a *Adapter) generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	model := strings.TrimPrefix(req.Model, "models/")
	body, err := gemini.TranslateChat(req.Body, model, req.MaxOutputTokens, req.Stream)
	if err != nil {
		return nil, err
	}
	u := a.location + "/publishers/google/models/" + url.PathEscape(model)
	if req.Stream {
		resp, err := a.post(ctx, u+":streamGenerateContent?alt=sse", body, true, "", "calling vertex streamGenerateContent")
		if err != nil {
			return nil, err
		}
		return &provider.Response{Stream: gemini.NewStream(ctx, resp, model, req.IncludeUsage, a.now()), RateLimit: outcome.UnknownRateLimit}, nil
	}
	const what = "calling vertex generateContent"
	resp, err := a.post(ctx, u+":generateContent", body, false, "", what)
	if err != nil {
		return nil, err
	}
	raw, err := provider.ReadBody(ctx, what, resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	out, usage, err := gemini.TranslateCompletion(raw, model, a.now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &provider.Response{Body: out, Usage: usage, RateLimit: outcome.UnknownRateLimit}, nil
}

// generateNative serves provider.OpGemini for a Gemini model: the
// client's generateContent body as gemini.NativeBody makes it, the answer
// and the stream's events as they came, an error answer's body kept for
// the client.
func (a *Adapter) generateNative(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	model := strings.TrimPrefix(req.Model, "models/")
	body := gemini.NativeBody(req.Body, model, req.MaxOutputTokens)
	u := a.location + "/publishers/google/models/" + url.PathEscape(model)
	if req.Stream {
		resp, err := a.postNative(ctx, u+":streamGenerateContent?alt=sse", body, true, "calling vertex streamGenerateContent")
		if err != nil {
			return nil, err
		}
		return &provider.Response{Stream: gemini.NewNativeStream(ctx, resp.Body, model, a.now()), RateLimit: outcome.UnknownRateLimit}, nil
	}
	const what = "calling vertex generateContent"
	resp, err := a.postNative(ctx, u+":generateContent", body, false, what)
	if err != nil {
		return nil, err
	}
	raw, err := provider.ReadBody(ctx, what, resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	usage, err := gemini.ReadNative(raw, model, a.now())
	if err != nil {
		return nil, err
	}
	return &provider.Response{Body: raw, Usage: usage, RateLimit: outcome.UnknownRateLimit}, nil
}

// postNative posts a generateContent body as post does, and keeps an
// error answer's body (outcome.Error.Body) for the Gemini client that
// asked natively: it gets Google's own error as it came.
func (a *Adapter) postNative(ctx context.Context, u string, body []byte, stream bool, what string) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: what + ": " + err.Error(), Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	} else {
		hr.Header.Set("Accept", "application/json")
	}
	tok, err := a.tokens.token(ctx, what)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Authorization", "Bearer "+tok)
	resp, err := provider.Send(a.client, hr)
	if err != nil {
		return nil, provider.TransportError(ctx, what, err)
	}
	if resp.StatusCode != http.StatusOK {
		raw := provider.ReadErrorBody(resp)
		e := ClassifyError(resp.StatusCode, resp.Header, raw, a.now())
		e.Message = what + ": " + e.Message
		e.Body = raw
		return nil, e
	}
	return resp, nil
}

// post sends body to u with an access token (and beta, when not "", as
// anthropic-beta) and returns the 200 answer, whose body the caller reads
// and closes.
func (a *Adapter) post(ctx context.Context, u string, body []byte, stream bool, beta, what string) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: what + ": " + err.Error(), Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	if beta != "" {
		hr.Header.Set("Anthropic-Beta", beta)
	}
	if stream {
		hr.Header.Set("Accept", "text/event-stream")
	} else {
		hr.Header.Set("Accept", "application/json")
	}
	return a.send(ctx, hr, what)
}

// send adds the access token to hr and sends it; a status other than 200
// is read, closed and classified (ClassifyError).
func (a *Adapter) send(ctx context.Context, hr *http.Request, what string) (*http.Response, error) {
	tok, err := a.tokens.token(ctx, what)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Authorization", "Bearer "+tok)
	resp, err := provider.Send(a.client, hr)
	if err != nil {
		return nil, provider.TransportError(ctx, what, err)
	}
	if resp.StatusCode != http.StatusOK {
		e := ClassifyError(resp.StatusCode, resp.Header, provider.ReadErrorBody(resp), a.now())
		return nil, fmt.Errorf("%s: %w", what, e)
	}
	return resp, nil
}

// ClassifyError turns a Vertex AI error answer into an *outcome.Error.
// Vertex answers in Google's error shape ({"error":{"code","message",
// "status","details"}}), classified as the Gemini API's are
// (gemini.ClassifyError: RESOURCE_EXHAUSTED rate limited, or quota when
// its details name a per-day quota; UNAVAILABLE overloaded;
// PERMISSION_DENIED and UNAUTHENTICATED auth; NOT_FOUND for a model
// target_missing); except that Anthropic's own errors, which rawPredict
// passes on in Anthropic's shape ({"type":"error",…}), are classified as
// the anthropic adapter classifies them, and keep their body so that a
// Messages client gets them byte for byte.
func ClassifyError(status int, h http.Header, body []byte, now time.Time) *outcome.Error {
	if jsoncheck.Valid(body) && gjson.GetBytes(body, "type").Str == "error" {
		e := anthropic.ClassifyError(status, h, body, now)
		e.RateLimit = outcome.UnknownRateLimit
		e.Body = body
		return e
	}
	return gemini.ClassifyError(status, h, body, now)
}

// Probe lists one endpoint of the project's location (GET
// …/locations/{region}/endpoints?pageSize=1): free, and it proves the
// network path, the access token and that the project has Vertex AI in
// that location.
func (a *Adapter) Probe(ctx context.Context) error {
	const what = "probing vertex endpoints"
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, a.location+"/endpoints?pageSize=1", nil)
	if err != nil {
		return &outcome.Error{Kind: outcome.ServerError, Message: what + ": " + err.Error(), Err: err}
	}
	hr.Header.Set("Accept", "application/json")
	resp, err := a.send(ctx, hr, what)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, provider.MaxErrorBody))
	return resp.Body.Close()
}
