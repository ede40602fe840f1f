package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Flavor selects the member of the OpenAI family an Adapter talks to. The
// zero value is OpenAI.
type Flavor uint8

const (
	OpenAI     Flavor = iota // api.openai.com (config type "openai")
	Azure                    // Azure OpenAI (config type "azure")
	Compatible               // any OpenAI-compatible server: Ollama, vLLM, llama.cpp, Groq... (config type "openai_compatible")
)

// String returns the config type of the flavor.
func (f Flavor) String() string {
	switch f {
	case OpenAI:
		return "openai"
	case Azure:
		return "azure"
	case Compatible:
		return "openai_compatible"
	}
	return fmt.Sprintf("flavor(%d)", uint8(f))
}

// DefaultBaseURL is OpenAI's public API, used when an OpenAI provider has
// no base_url.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultAPIVersion is the Azure api-version used when none is configured:
// a generally available (non-preview) data-plane version.
const DefaultAPIVersion = "2024-10-21"

// APIVersionV1 selects the Azure v1 API (/openai/v1/..., no api-version
// parameter, the body's model names the deployment).
const APIVersionV1 = "v1"

// Config holds the options only some members of the family have. It is the
// `azure:` block of an azure provider; other flavors take the zero Config.
type Config struct {
	// APIVersion is the Azure api-version query parameter: a date such as
	// "2024-10-21", optionally with "-preview" ("2025-04-01-preview"), or
	// "v1" for the v1 API (/openai/v1/...), which takes no api-version.
	// Empty means DefaultAPIVersion. Only for azure.
	APIVersion string `mapstructure:"api_version"`
}

// Validate checks c; errors name the key relative to the block.
func (c Config) Validate() error {
	v := c.APIVersion
	if v == "" || v == APIVersionV1 {
		return nil
	}
	date := strings.TrimSuffix(v, "-preview")
	if _, err := time.Parse(time.DateOnly, date); err != nil || len(date) != len(time.DateOnly) {
		return fmt.Errorf("api_version: %q is neither %q nor a date like %q (optionally with -preview)",
			v, APIVersionV1, DefaultAPIVersion)
	}
	return nil
}

// The provider types of the family. Only azure has a block (`azure:`,
// this package's Config); every type but openai_compatible needs a key.
var (
	Type = provider.Type{Name: "openai", NeedsKey: true,
		Build: func(p provider.Config, key string, _ any) (provider.Adapter, error) {
			return New(OpenAI, p, key, Config{}, nil)
		}}
	AzureType = provider.Type{Name: "azure", NeedsKey: true,
		NewBlock: func() any { return new(Config) },
		Build: func(p provider.Config, key string, block any) (provider.Adapter, error) {
			return New(Azure, p, key, *block.(*Config), nil)
		}}
	CompatibleType = provider.Type{Name: "openai_compatible",
		Build: func(p provider.Config, key string, _ any) (provider.Adapter, error) {
			return New(Compatible, p, key, Config{}, nil)
		}}
)

// Adapter sends attempts to one OpenAI-family provider. It is safe for
// concurrent use.
type Adapter struct {
	flavor      Flavor
	client      *http.Client
	maxResponse int64  // limits.max_response_bytes (provider.ReadBody)
	base        string // base_url without trailing slash
	version     string // Azure api-version; APIVersionV1 for the v1 API; "" for other flavors

	urls [4]string // by provider.Op: the full URL, except Azure classic (per deployment)
	// parsed are urls parsed once (nil: not a fixed URL), shared by every
	// request to it: a RoundTripper does not modify its request
	// (net/http's contract), nor does anything else here.
	parsed   [4]*url.URL
	what     [4]string // by provider.Op: "calling openai chat completions"
	probeURL string
	query    string // Azure classic: "?api-version=V"

	// Header values, shared read-only by every request (one-element
	// slices: a transport that appends copies them).
	authKey   string   // canonical header name; "" for no auth
	authValue []string // e.g. "Bearer sk-..."
	json      []string // application/json
	sse       []string // text/event-stream

	now func() time.Time // nil means time.Now
}

var (
	_ provider.Adapter         = (*Adapter)(nil)
	_ provider.Prober          = (*Adapter)(nil)
	_ provider.ResponseFetcher = (*Adapter)(nil)
)

// New returns the adapter for one provider.
//
// p.BaseURL: empty means DefaultBaseURL for OpenAI and is an error for
// Azure (scheme://host of the resource) and Compatible (up to and including
// /v1). It must be an http or https URL with a host and no query or
// fragment; a trailing slash is ignored.
// key is the resolved API key; "" is allowed only for Compatible, which
// then sends no Authorization header.
// c holds the azure block; other flavors reject a non-zero c.
// client nil means provider.NewHTTPClient(p).
// Every problem is reported at once, joined, each naming its key.
func New(f Flavor, p provider.Config, key string, c Config, client *http.Client) (*Adapter, error) {
	if f > Compatible {
		return nil, fmt.Errorf("type: unknown openai flavor %d", uint8(f))
	}
	var errs []error
	if f == Azure {
		errs = append(errs, provider.Under("azure", c.Validate()))
	} else if c != (Config{}) {
		errs = append(errs, fmt.Errorf("azure: only for type azure, not %s", f))
	}
	base, err := parseBaseURL(f, p.BaseURL)
	errs = append(errs, err)
	if key == "" && f != Compatible {
		errs = append(errs, fmt.Errorf("api_key_env: %s needs an API key (set api_key_env or api_key_file)", f))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if client == nil {
		client = provider.NewHTTPClient(p)
	}

	a := &Adapter{
		maxResponse: p.MaxResponseBytes,
		flavor:      f,
		client:      client,
		base:        base,
		json:        []string{"application/json"},
		sse:         []string{"text/event-stream"},
	}
	switch {
	case f == Azure:
		a.authKey, a.authValue = "Api-Key", []string{key}
	case key != "":
		a.authKey, a.authValue = "Authorization", []string{"Bearer " + key}
	}

	prefix := base // OpenAI, Compatible: base_url ends in /v1
	switch {
	case f == Azure && c.APIVersion == APIVersionV1:
		a.version = APIVersionV1
		prefix = base + "/openai/v1"
		a.probeURL = prefix + "/models"
	case f == Azure:
		a.version = c.APIVersion
		if a.version == "" {
			a.version = DefaultAPIVersion
		}
		a.query = "?api-version=" + url.QueryEscape(a.version)
		a.probeURL = base + "/openai/models" + a.query
	default:
		a.probeURL = base + "/models"
	}
	for _, op := range [...]provider.Op{provider.OpChat, provider.OpCompletions, provider.OpEmbeddings, provider.OpResponses} {
		a.urls[op] = prefix + op.Path()
		a.what[op] = "calling " + f.String() + " " + opWords(op)
	}
	if f == Azure {
		// Azure's Responses API is on the v1 API only, whatever
		// api_version the other operations use (learn.microsoft.com,
		// "Azure OpenAI Responses API"): the body's model names the
		// deployment, and no api-version is sent.
		a.urls[provider.OpResponses] = base + "/openai/v1" + provider.OpResponses.Path()
	}
	for op, u := range a.urls {
		if r, err := http.NewRequest(http.MethodPost, u, nil); err == nil {
			a.parsed[op] = r.URL // as http.NewRequest parses it (the host's empty port dropped)
		}
	}
	return a, nil
}

// parseBaseURL validates and normalises base_url for flavor f.
func parseBaseURL(f Flavor, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		if f != OpenAI {
			return "", fmt.Errorf("base_url: required for type %s", f)
		}
		raw = DefaultBaseURL
	}
	u, err := provider.ParseBaseURL(raw, DefaultBaseURL)
	if err != nil {
		return "", err
	}
	base := strings.TrimRight(u.String(), "/")
	// A gateway prefix in front of Azure is fine; the API path is not: the
	// adapter appends /openai/... itself.
	if f == Azure {
		if p := strings.TrimRight(u.Path, "/"); strings.HasSuffix(p, "/openai") || strings.Contains(p, "/openai/") {
			return "", fmt.Errorf("base_url: %q: give scheme://host only for azure, the adapter appends the /openai path", raw)
		}
	}
	return base, nil
}

func opWords(op provider.Op) string {
	switch op {
	case provider.OpCompletions:
		return "completions"
	case provider.OpEmbeddings:
		return "embeddings"
	case provider.OpResponses:
		return "responses"
	}
	return "chat completions"
}

// Flavor reports which member of the family a is for.
func (a *Adapter) Flavor() Flavor { return a.flavor }

// Supports reports whether a can serve op: chat completions, legacy
// completions and embeddings, for every flavor; the native Responses API
// for OpenAI and Azure (OpenAI-compatible servers' /responses vary too
// much to send OpenAI's built-in tools to).
func (a *Adapter) Supports(op provider.Op) bool {
	switch op {
	case provider.OpChat, provider.OpCompletions, provider.OpEmbeddings:
		return true
	case provider.OpResponses:
		return a.flavor == OpenAI || a.flavor == Azure
	}
	return false
}

func (a *Adapter) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// Do sends req and returns the provider's answer. A non-stream answer is
// read whole; its body is the provider's bytes unchanged. A stream answer
// returns once the response headers arrived; ctx then stays bound to the
// stream until its Close. Every error carries an *outcome.Error; its Status
// is set when the provider answered with an HTTP error status.
func (a *Adapter) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	if !a.Supports(req.Op) {
		return nil, &outcome.Error{Kind: outcome.ClientError, Message: "unsupported operation " + req.Op.String()}
	}
	what := a.what[req.Op]
	target := a.urls[req.Op]
	if a.flavor == Azure && a.version != APIVersionV1 && req.Op != provider.OpResponses {
		if req.Model == "" {
			return nil, &outcome.Error{Kind: outcome.ServerError, Message: what + ": no deployment name (the target's model is empty)"}
		}
		target = a.base + "/openai/deployments/" + url.PathEscape(req.Model) + req.Op.Path() + a.query
	}

	hreq, b, hideUsage, err := a.newRequest(ctx, req, target)
	if err != nil {
		return nil, &outcome.Error{Kind: outcome.ServerError, Message: what + ": " + err.Error(), Err: err}
	}
	resp, head, err := provider.SendHead(a.client, hreq)
	// The transport asks for no more readers once Do returned; the ones it
	// holds keep the buffer alive until it closes them. (resp.Request
	// still carries GetBody: nothing may call it after this point.)
	b.release()
	if err != nil {
		return nil, provider.TransportError(ctx, what, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s: %w", what, a.statusError(resp, head))
	}
	if req.Stream {
		return a.openStream(ctx, req, resp, head, what, hideUsage)
	}
	return a.readJSON(ctx, req, resp, head, what)
}

// The parts of Do before and after the provider's answer are functions
// of their own so that their locals are not on the stack while a new
// connection is dialled or an answer parsed (a streaming request's
// goroutine keeps the stack it grew to: docs/BENCHMARKS.md, "Memory per
// stream").

// newRequest makes the HTTP request of req to target; hideUsage: the
// body asks for the stream's usage chunk the client did not ask for.
// Release b once the request is sent.
func (a *Adapter) newRequest(ctx context.Context, req *provider.Request, target string) (_ *http.Request, _ *body, hideUsage bool, _ error) {
	b := getBody()
	b.buf = req.AppendBody(b.buf)
	if req.Stream && !req.IncludeUsage && req.Op != provider.OpResponses && a.forcesUsage() {
		// Ask for the usage chunk even when the client did not, so the
		// router's token buckets and metrics see real stream usage; the
		// stream hides that chunk from the client.
		if nb, err := sjson.SetBytes(b.buf, "stream_options.include_usage", true); err == nil {
			b.buf, hideUsage = nb, true
		}
	}
	var hreq *http.Request
	if u := a.parsed[req.Op]; u != nil && target == a.urls[req.Op] {
		// What http.NewRequestWithContext makes, without parsing the URL
		// again.
		hreq = (&http.Request{Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: make(http.Header, 4), Host: u.Host}).WithContext(ctx)
	} else {
		var err error
		if hreq, err = http.NewRequestWithContext(ctx, http.MethodPost, target, nil); err != nil {
			b.release()
			return nil, nil, false, err
		}
	}
	hreq.Body = b.reader()
	hreq.GetBody = b.getBody
	hreq.ContentLength = int64(len(b.buf))
	a.setHeaders(hreq.Header, req.Stream)
	return hreq, b, hideUsage, nil
}

// openStream returns a stream answer, once its headers (head) arrived.
func (a *Adapter) openStream(ctx context.Context, req *provider.Request, resp *http.Response, head provider.Head, what string, hideUsage bool) (*provider.Response, error) {
	if isJSON(head.Get("Content-Type")) {
		return nil, fmt.Errorf("%s: %w", what, a.jsonInsteadOfStream(resp, head))
	}
	out := &provider.Response{RateLimit: rateLimit(head, a.clock())}
	// The headers are read: a chunked body (net/http's framing) keeps its
	// *http.Response (for trailers) as long as the stream lasts, and with
	// it the header map, a kilobyte or two a stream (docs/BENCHMARKS.md,
	// "Memory per stream"; internal/h1's answer made none). So does the
	// request it answers, sent by now: its header map, URL and context
	// copy are another kilobyte or so.
	resp.Header, resp.Request = nil, nil
	if req.Op == provider.OpResponses {
		out.Stream = newEventStream(ctx, resp.Body, what, req.Model)
		return out, nil
	}
	st := newStream(ctx, resp.Body, what, req.Model)
	st.hideUsage = hideUsage
	out.Stream = st
	return out, nil
}

// readJSON reads a non-stream answer whole; head is its header.
func (a *Adapter) readJSON(ctx context.Context, req *provider.Request, resp *http.Response, head provider.Head, what string) (*provider.Response, error) {
	out := &provider.Response{RateLimit: rateLimit(head, a.clock())}
	raw, err := provider.ReadBody(ctx, what, resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	if !jsoncheck.Valid(raw) {
		return nil, fmt.Errorf("%s: %w", what, &outcome.Error{
			Kind: outcome.ServerError, Status: resp.StatusCode,
			Message: "invalid JSON from provider: " + plainMessage(bytes.TrimSpace(raw)),
		})
	}
	// Some OpenAI-compatible gateways answer 200 with an error document.
	if hasErrorField(raw) {
		return nil, fmt.Errorf("%s: %w", what, ClassifyError(0, head.Header(), raw, a.clock()))
	}
	out.Body = raw
	// raw is not modified while the view is in use; Usage keeps numbers
	// and an interned name only.
	out.Usage = readAnswer(req.Op, gjson.Parse(unsafeString(raw)), req.Model)
	return out, nil
}

// forcesUsage reports whether the adapter adds stream_options.include_usage
// to streams: OpenAI, and Azure API versions that know the field (v1 and
// 2024-09-01 onwards). OpenAI-compatible servers vary too much to risk an
// unknown field.
func (a *Adapter) forcesUsage() bool {
	switch a.flavor {
	case OpenAI:
		return true
	case Azure:
		return a.version == APIVersionV1 || a.version >= "2024-09-01"
	}
	return false
}

// setHeaders writes the headers every call sends.
func (a *Adapter) setHeaders(h http.Header, stream bool) {
	h["Content-Type"] = a.json
	if stream {
		h["Accept"] = a.sse
	} else {
		h["Accept"] = a.json
	}
	if a.authKey != "" {
		h[a.authKey] = a.authValue
	}
}

// statusError reads and classifies a non-2xx answer, head its header.
func (a *Adapter) statusError(resp *http.Response, head provider.Head) *outcome.Error {
	body := provider.ReadErrorBody(resp)
	h := head.Header()
	if resp.StatusCode < 400 {
		// The client follows no redirects: the provider does not answer
		// API calls with one, so base_url points at the wrong place.
		e := ClassifyError(resp.StatusCode, h, body, a.clock())
		e.Kind = outcome.ServerError
		e.Message = fmt.Sprintf("unexpected status %d (redirect to %q?): check base_url", resp.StatusCode, h.Get("Location"))
		return e
	}
	return ClassifyError(resp.StatusCode, h, body, a.clock())
}

// jsonInsteadOfStream handles a 2xx JSON answer to a stream request: an
// error document is classified; anything else means the server ignored
// "stream": true.
func (a *Adapter) jsonInsteadOfStream(resp *http.Response, head provider.Head) *outcome.Error {
	body := provider.ReadErrorBody(resp)
	if hasErrorField(body) {
		return ClassifyError(0, head.Header(), body, a.clock())
	}
	return &outcome.Error{Kind: outcome.ServerError, Status: resp.StatusCode,
		Message: "stream requested but the provider answered with a JSON document"}
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// hasErrorField reports whether a JSON document is an error: an object with
// a non-empty top-level "error" (what openai-python checks on every stream
// event) or vLLM's {"object":"error",...}. The byte scan first keeps the
// common case, a document with no such text, to one pass with no allocation.
func hasErrorField(doc []byte) bool {
	if !bytes.Contains(doc, []byte(`"error"`)) {
		return false
	}
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || doc[0] != '{' {
		return false
	}
	res := gjson.GetManyBytes(doc, "error", "object")
	switch e := res[0]; e.Type {
	case gjson.Null, gjson.False:
	case gjson.String:
		if e.Str != "" {
			return true
		}
	case gjson.JSON:
		if e.Raw != "{}" && e.Raw != "[]" {
			return true
		}
	default:
		if e.Exists() {
			return true
		}
	}
	return res[1].Str == "error"
}

// Probe checks the provider on its free models endpoint:
// GET {base}/models, or for Azure {base}/openai/models?api-version=V
// ({base}/openai/v1/models for the v1 API). It proves network and key
// only, not a model or deployment. nil means a 2xx; otherwise the error
// carries a classified *outcome.Error.
func (a *Adapter) Probe(ctx context.Context) error {
	what := "probing " + a.flavor.String() + " models"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, a.probeURL, nil)
	if err != nil {
		return &outcome.Error{Kind: outcome.ServerError, Message: what + ": " + err.Error(), Err: err}
	}
	hreq.Header["Accept"] = a.json
	if a.authKey != "" {
		hreq.Header[a.authKey] = a.authValue
	}
	resp, err := provider.Send(a.client, hreq)
	if err != nil {
		return provider.TransportError(ctx, what, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %w", what, a.statusError(resp, provider.HeadOf(resp.Header)))
	}
	// Read a bounded part so the connection can be reused; the list
	// itself is not needed.
	provider.ReadErrorBody(resp)
	return nil
}

// models keeps the model names the family's answers report.
var models provider.ModelNames

// readAnswer reads a whole answer (or a Responses event's response) in one
// pass over its members: its usage object and the model it names, target
// being the model asked for. The model is "" when doc names none.
func readAnswer(op provider.Op, doc gjson.Result, target string) outcome.Usage {
	var usage, model gjson.Result
	doc.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "usage" && !usage.Exists():
			usage = v
		case k.Str == "model" && !model.Exists():
			model = v
		}
		return !usage.Exists() || !model.Exists()
	})
	var u outcome.Usage
	if usage.IsObject() {
		u = readUsage(op, usage)
	}
	u.Model = models.Name(model.Str, target)
	return u
}

// unsafeString views b as a string without copying. b must not change while
// the string or anything sliced from it is in use.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// readUsage reads a usage object: the Responses API names its counts
// input_tokens and output_tokens, the other operations prompt_tokens and
// completion_tokens.
//
// It reads as gjson's Get and Int do, without gjson's float parse (see
// jsonscan.AsInt), whose frames would grow the request's goroutine past 8 KiB.
func readUsage(op provider.Op, u gjson.Result) outcome.Usage {
	keys := [3]string{"prompt_tokens", "completion_tokens", "prompt_tokens_details"}
	if op == provider.OpResponses {
		keys = [3]string{"input_tokens", "output_tokens", "input_tokens_details"}
	}
	// completion_tokens counts reasoning tokens too (billed as output);
	// cached_tokens is the part of the prompt read from the cache, billed
	// at its own price.
	f := jsonscan.Fields(u.Raw, keys[0], keys[1], keys[2])
	return outcome.Usage{PromptTokens: jsonscan.AsInt(f[0]), CompletionTokens: jsonscan.AsInt(f[1]),
		CachedInput: jsonscan.AsInt(jsonscan.Fields(f[2], "cached_tokens")[0])}
}

// FetchResponse forwards a request about one of the provider's own
// responses (provider.ResponseFetcher): {url of /responses}/{path}, the
// Azure v1 API's for Azure. Only OpenAI and Azure have them.
func (a *Adapter) FetchResponse(ctx context.Context, method, path, query string) (*provider.Response, error) {
	what := "calling " + a.flavor.String() + " responses/" + path
	if !a.Supports(provider.OpResponses) {
		return nil, &outcome.Error{Kind: outcome.ClientError, Message: what + ": " + a.flavor.String() + " keeps no responses"}
	}
	target := a.urls[provider.OpResponses] + "/" + path
	if query != "" {
		target += "?" + query
	}
	hreq, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return nil, &outcome.Error{Kind: outcome.ServerError, Message: what + ": " + err.Error(), Err: err}
	}
	a.setHeaders(hreq.Header, false)
	resp, err := provider.Send(a.client, hreq)
	if err != nil {
		return nil, provider.TransportError(ctx, what, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s: %w", what, a.statusError(resp, provider.HeadOf(resp.Header)))
	}
	out := &provider.Response{RateLimit: ParseRateLimit(resp.Header, a.clock())}
	if out.Body, err = provider.ReadBody(ctx, what, resp, a.maxResponse); err != nil {
		return nil, err
	}
	return out, nil
}
