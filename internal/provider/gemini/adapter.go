package gemini

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

var (
	_ provider.Adapter = (*Adapter)(nil)
	_ provider.Prober  = (*Adapter)(nil)
)

// Adapter sends OpenAI-shaped chat and embedding requests to the Gemini
// API. It is safe for concurrent use.
type Adapter struct {
	client      *http.Client
	maxResponse int64 // limits.max_response_bytes (provider.ReadBody)
	key         string
	prefix      string // base URL + "/" + API version + "/", e.g. https://…/v1beta/
	// now is the wall clock: chat "created" stamps and per-day quota
	// resets. New sets time.Now; tests replace it.
	now func() time.Time
}

// New returns the adapter for one gemini provider entry. key is the API
// key sent as x-goog-api-key ("" sends none, for a gateway that adds it).
// c is the provider's `gemini:` block; its zero value means defaults.
// client nil means provider.NewHTTPClient(p). An empty p.BaseURL means
// DefaultBaseURL; otherwise it must be an absolute http(s) URL without the
// API version (a path prefix, as some gateways need, is kept).
// Every problem is reported at once, joined, each naming its key relative
// to the provider entry (gemini.api_version, base_url).
func New(p provider.Config, key string, c Config, client *http.Client) (*Adapter, error) {
	base, err := baseURL(p.BaseURL)
	if err := errors.Join(provider.Under("gemini", c.Validate()), err); err != nil {
		return nil, err
	}
	if client == nil {
		client = provider.NewHTTPClient(p)
	}
	return &Adapter{
		maxResponse: p.MaxResponseBytes,
		client:      client,
		key:         key,
		prefix:      base + "/" + c.apiVersion() + "/",
		now:         time.Now,
	}, nil
}

// baseURL validates base_url and returns it without a trailing slash.
func baseURL(raw string) (string, error) {
	u, err := provider.ParseBaseURL(raw, DefaultBaseURL)
	if err != nil {
		return "", err
	}
	p := strings.TrimRight(u.EscapedPath(), "/")
	last := p[strings.LastIndexByte(p, '/')+1:]
	if validVersion(last) || slices.Contains(strings.Split(p, "/"), "models") {
		return "", fmt.Errorf("base_url: %q must stop before the API path (the adapter appends /%s/models/…; set gemini.api_version to change the version)", raw, DefaultAPIVersion)
	}
	return u.Scheme + "://" + u.Host + p, nil
}

// Supports reports chat, embeddings and the Gemini API natively
// (provider.OpGemini); legacy completions are not served.
func (a *Adapter) Supports(op provider.Op) bool {
	return op == provider.OpChat || op == provider.OpEmbeddings || op == provider.OpGemini
}

// Do translates req, calls Gemini and translates the answer back. Every
// error carries an *outcome.Error.
func (a *Adapter) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	switch req.Op {
	case provider.OpChat:
		return a.chat(ctx, req)
	case provider.OpEmbeddings:
		return a.embed(ctx, req)
	case provider.OpGemini:
		return a.native(ctx, req)
	}
	return nil, badRequest(nil, "%s is not supported", req.Op)
}

// modelPath is "models/{m}" for the request's model, whatever the config
// wrote ("gemini-2.5-flash" or "models/gemini-2.5-flash").
func modelPath(model string) string {
	return "models/" + url.PathEscape(strings.TrimPrefix(model, "models/"))
}

func (a *Adapter) chat(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	model := strings.TrimPrefix(req.Model, "models/")
	body, err := translateChat(req.Body, model, req.MaxOutputTokens, req.Stream)
	if err != nil {
		return nil, err
	}
	if req.Stream {
		const what = "calling gemini streamGenerateContent"
		resp, err := a.send(ctx, http.MethodPost, a.prefix+modelPath(model)+":streamGenerateContent?alt=sse", body, what)
		if err != nil {
			return nil, err
		}
		return &provider.Response{
			Stream:    newStream(ctx, resp, model, req.IncludeUsage, a.now()),
			RateLimit: outcome.UnknownRateLimit,
		}, nil
	}
	const what = "calling gemini generateContent"
	resp, err := a.send(ctx, http.MethodPost, a.prefix+modelPath(model)+":generateContent", body, what)
	if err != nil {
		return nil, err
	}
	data, err := provider.ReadBody(ctx, what, resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	out, u, err := translateCompletion(data, model, a.now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &provider.Response{Body: out, Usage: u, RateLimit: outcome.UnknownRateLimit}, nil
}

// Probe lists one model: free, and it proves the network path and the key
// (an invalid key is a 400 API_KEY_INVALID, classified Auth).
func (a *Adapter) Probe(ctx context.Context) error {
	const what = "probing gemini models"
	resp, err := a.send(ctx, http.MethodGet, a.prefix+"models?pageSize=1", nil, what)
	if err != nil {
		return err
	}
	// Drain a little so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, provider.MaxErrorBody))
	return resp.Body.Close()
}

// send performs one call. A status other than 200 is read, closed and
// classified; on success the caller owns resp.Body.
func (a *Adapter) send(ctx context.Context, method, u string, body []byte, what string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, &outcome.Error{Kind: outcome.ServerError, Message: what + ": building request: " + err.Error(), Err: err}
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if a.key != "" {
		hr.Header.Set("X-Goog-Api-Key", a.key)
	}
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
