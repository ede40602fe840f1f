package anthropic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Defaults for zero Config fields and an empty base_url.
const (
	DefaultVersion   = "2023-06-01"
	DefaultMaxTokens = 4096
	DefaultBaseURL   = "https://api.anthropic.com"
)

// Config is the `anthropic:` block under a provider of type anthropic.
type Config struct {
	// Version is sent as the anthropic-version header, a date such as
	// "2023-06-01". Empty means DefaultVersion.
	Version string `mapstructure:"version"`
	// DefaultMaxTokens is the max_tokens sent when the client gave neither
	// max_completion_tokens nor max_tokens (Anthropic requires one).
	// 0 means DefaultMaxTokens; negative is invalid.
	DefaultMaxTokens int `mapstructure:"default_max_tokens"`
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = DefaultMaxTokens
	}
	return c
}

// Validate reports every invalid field, joined, each naming its key
// relative to the `anthropic:` block.
func (c Config) Validate() error {
	var errs []error
	if c.Version != "" {
		if _, err := time.Parse(time.DateOnly, c.Version); err != nil {
			errs = append(errs, fmt.Errorf("version: %q is not a date like %s", c.Version, DefaultVersion))
		}
	}
	if c.DefaultMaxTokens < 0 {
		errs = append(errs, fmt.Errorf("default_max_tokens: must not be negative, got %d", c.DefaultMaxTokens))
	}
	return errors.Join(errs...)
}

// Type is the provider type anthropic, with its `anthropic:` block.
var Type = provider.Type{Name: "anthropic", NeedsKey: true,
	NewBlock: func() any { return new(Config) },
	Build: func(p provider.Config, key string, block any) (provider.Adapter, error) {
		return New(p, key, *block.(*Config), nil)
	}}

// Adapter sends OpenAI chat requests to Anthropic's Messages API. It is
// safe for concurrent use.
type Adapter struct {
	messagesURL string
	countURL    string // count_tokens (CountTokens)
	modelsURL   string
	key         string
	version     string

	// The native path's header values, shared read-only by its requests
	// (one-element slices: a transport that appends copies them).
	keyValue, versionValue []string

	maxTokens   int64
	client      *http.Client
	maxResponse int64            // limits.max_response_bytes (provider.ReadBody)
	now         func() time.Time // wall clock for created and reset headers
}

var (
	_ provider.Adapter      = (*Adapter)(nil)
	_ provider.Prober       = (*Adapter)(nil)
	_ provider.TokenCounter = (*Adapter)(nil)
)

// New returns the adapter for provider p. p.BaseURL is scheme://host[:port]
// only ("" means DefaultBaseURL); the adapter appends /v1/messages,
// /v1/messages/count_tokens and /v1/models. key is sent as x-api-key; ""
// sends no key (an Anthropic-shaped local server). client nil means provider.NewHTTPClient(p).
// Every problem is reported at once, joined, each naming its key.
func New(p provider.Config, key string, c Config, client *http.Client) (*Adapter, error) {
	base, err := parseBaseURL(p.BaseURL)
	if err := errors.Join(provider.Under("anthropic", c.Validate()), err); err != nil {
		return nil, err
	}
	c = c.WithDefaults()
	if client == nil {
		client = provider.NewHTTPClient(p)
	}
	return &Adapter{
		maxResponse:  p.MaxResponseBytes,
		messagesURL:  base + "/v1/messages",
		countURL:     base + "/v1/messages/count_tokens",
		modelsURL:    base + "/v1/models?limit=1",
		key:          key,
		version:      c.Version,
		keyValue:     []string{key},
		versionValue: []string{c.Version},
		maxTokens:    int64(c.DefaultMaxTokens),
		client:       client,
		now:          time.Now,
	}, nil
}

func parseBaseURL(raw string) (string, error) {
	u, err := provider.ParseBaseURL(raw, DefaultBaseURL)
	if err != nil {
		return "", err
	}
	if strings.Trim(u.Path, "/") != "" {
		return "", fmt.Errorf("base_url: %q: give scheme://host only; the adapter appends /v1/messages", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// Supports reports true for provider.OpChat (translated) and
// provider.OpMessages (native).
func (a *Adapter) Supports(op provider.Op) bool {
	return op == provider.OpChat || op == provider.OpMessages
}

// Do sends req to /v1/messages. An OpChat request is translated, and so is
// its answer; an OpMessages request goes natively, its body passed with
// only the model swapped and its answer returned as it came (a stream's
// payloads are the events' data, see nativeStream). A stream request
// returns once the response headers arrived; the stream stays bound to ctx
// until Close. Every error carries an *outcome.Error; for OpMessages an
// error answer's body is kept in its Body.
func (a *Adapter) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	switch req.Op {
	case provider.OpChat:
	case provider.OpMessages:
		return a.doMessages(ctx, req)
	default:
		return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest,
			Type: "invalid_request_error", Message: "anthropic does not serve " + req.Op.String()}
	}
	body, err := translate(make([]byte, 0, len(req.Body)+256), req, a.maxTokens)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, a.messagesURL, bytes.NewReader(body))
	if err != nil {
		return nil, provider.TransportError(ctx, "calling anthropic messages", err)
	}
	a.setHeaders(hr.Header)
	hr.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hr.Header.Set("Accept", "text/event-stream")
	} else {
		hr.Header.Set("Accept", "application/json")
	}
	resp, err := provider.Send(a.client, hr)
	if err != nil {
		return nil, provider.TransportError(ctx, "calling anthropic messages", err)
	}
	now := a.now()
	if resp.StatusCode != http.StatusOK {
		return nil, ClassifyError(resp.StatusCode, resp.Header, provider.ReadErrorBody(resp), now)
	}
	out := &provider.Response{RateLimit: ParseRateLimit(resp.Header, now)}
	if req.Stream {
		// The headers are read: a chunked body (internal/h1's framing, as
		// net/http's) keeps its *http.Response (for trailers) for the
		// stream's life, and with it the header map and the request it
		// answers (docs/BENCHMARKS.md, "Memory per stream").
		resp.Header, resp.Request = nil, nil
		out.Stream = newStream(ctx, resp.Body, req.Model, now.Unix(), req.IncludeUsage)
		return out, nil
	}
	raw, err := provider.ReadBody(ctx, "reading anthropic message", resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	out.Body, out.Usage, err = convertMessage(make([]byte, 0, len(raw)+256), raw, req.Model, now.Unix())
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Probe lists one model (GET /v1/models?limit=1): it proves the network
// path and the key without spending tokens.
func (a *Adapter) Probe(ctx context.Context) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, a.modelsURL, nil)
	if err != nil {
		return provider.TransportError(ctx, "probing anthropic models", err)
	}
	a.setHeaders(hr.Header)
	resp, err := provider.Send(a.client, hr)
	if err != nil {
		return provider.TransportError(ctx, "probing anthropic models", err)
	}
	if resp.StatusCode != http.StatusOK {
		return ClassifyError(resp.StatusCode, resp.Header, provider.ReadErrorBody(resp), a.now())
	}
	defer resp.Body.Close()
	// Drain a bounded amount so the connection can be reused.
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, provider.MaxErrorBody)); err != nil {
		return provider.TransportError(ctx, "probing anthropic models", err)
	}
	return nil
}

func (a *Adapter) setHeaders(h http.Header) {
	if a.key != "" {
		h.Set("X-Api-Key", a.key)
	}
	h.Set("Anthropic-Version", a.version)
}
