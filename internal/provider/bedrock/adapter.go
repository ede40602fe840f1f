package bedrock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
)

// AnthropicVersion is the anthropic_version Bedrock's InvokeModel takes
// in a Messages body.
const AnthropicVersion = "bedrock-2023-05-31"

// Adapter sends requests to one region of Amazon Bedrock, signed with
// SigV4 (see the package doc). It is safe for concurrent use.
type Adapter struct {
	runtime     string // scheme://host of the runtime API
	probe       string // the probe's URL on the control plane
	endpoint    string // Endpoint's answer
	client      *http.Client
	maxResponse int64 // limits.max_response_bytes (provider.ReadBody)
	signer      signer
	now         func() time.Time // wall clock: signing time, created stamps
	cloud       anthropic.CloudConfig
}

var (
	_ provider.Adapter  = (*Adapter)(nil)
	_ provider.Prober   = (*Adapter)(nil)
	_ provider.ModelOps = (*Adapter)(nil)

	_ provider.CredentialFinder = (*Adapter)(nil)
	_ provider.Endpointer       = (*Adapter)(nil)
)

// Endpoint names the region, its runtime URL and the shared config
// profile: what the provider's learned state (breaker, buckets, blocks)
// is true of, kept across a reload or restart only while it stays the
// same.
func (a *Adapter) Endpoint() string { return a.endpoint }

// New returns the adapter of provider p with its `bedrock:` block c.
// p.BaseURL is scheme://host of the runtime API ("" means
// https://bedrock-runtime.{region}.amazonaws.com; a VPC interface
// endpoint, or a gateway, otherwise); api_key_env and api_key_file are
// refused (Bedrock takes AWS credentials, found by the default chain on
// first use). client nil means provider.NewHTTPClient(p). New does no I/O.
// Every problem is reported at once, joined, each naming its key.
func New(p provider.Config, c Config, client *http.Client) (*Adapter, error) {
	return newAdapter(p, c, client, defaultChain(c.Region, c.Profile, nil))
}

func newAdapter(p provider.Config, c Config, client *http.Client, load func(context.Context) (aws.CredentialsProvider, error)) (*Adapter, error) {
	errs := []error{provider.Under("bedrock", c.Validate())}
	runtime, err := hostURL(p.BaseURL, "https://bedrock-runtime."+c.Region+".amazonaws.com")
	errs = append(errs, err)
	if p.APIKeyEnv != "" || p.APIKeyFile != "" {
		errs = append(errs, errors.New("api_key_env: bedrock takes no API key: requests are signed with AWS credentials from the default chain (environment, shared profile, web identity, container or instance role)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	control := c.ControlPlaneURL
	if control == "" {
		control = "https://bedrock." + c.Region + ".amazonaws.com"
	}
	control, _ = hostURL(control, "") // checked by Validate
	if client == nil {
		client = provider.NewHTTPClient(p)
	}
	a := &Adapter{
		maxResponse: p.MaxResponseBytes,
		runtime:     runtime,
		probe:       control + "/foundation-models?byOutputModality=TEXT",
		endpoint:    runtime + " region=" + c.Region + " profile=" + c.Profile,
		client:      client,
		now:         time.Now,
	}
	a.signer = signer{creds: &credentials{load: load}, v4: v4.NewSigner(), region: c.Region, now: a.now}
	a.cloud = anthropic.CloudConfig{Version: AnthropicVersion, Reading: "reading bedrock invoke answer",
		MaxResponse: a.maxResponse, Now: func() time.Time { return a.now() }}
	return a, nil
}

// isAnthropic says whether a Bedrock model id (a foundation model, an
// inference profile such as us.anthropic.…, or an ARN naming one) is one of
// Anthropic's: those take the Messages body natively.
func isAnthropic(model string) bool { return strings.Contains(model, "anthropic.") }

// Supports reports chat (every model) and the Messages API (natively, for
// Anthropic models: SupportsModel).
func (a *Adapter) Supports(op provider.Op) bool {
	return op == provider.OpChat || op == provider.OpMessages
}

// SupportsModel refines Supports per target: the Messages API is served
// natively to Anthropic models only; a Messages request for another model
// goes as chat (provider.Request.Alt).
func (a *Adapter) SupportsModel(op provider.Op, model string) bool {
	switch op {
	case provider.OpChat:
		return true
	case provider.OpMessages:
		return isAnthropic(model)
	}
	return false
}

// Do sends req: an OpMessages request natively through InvokeModel (or
// InvokeModelWithResponseStream); an OpChat request for an Anthropic model
// translated into a Messages body and sent the same way; any other OpChat
// request through Converse (or ConverseStream). A stream request returns
// once the response headers arrived; the stream stays bound to ctx until
// Close. Every error carries an *outcome.Error.
func (a *Adapter) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	switch {
	case (req.Op == provider.OpMessages || req.Op == provider.OpChat) && isAnthropic(req.Model):
		return anthropic.OnCloud(ctx, claudeCloud{a}, &a.cloud, req)
	case req.Op == provider.OpChat:
		return a.converse(ctx, req)
	}
	return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest, Type: "invalid_request_error",
		Message: "bedrock does not serve " + req.Op.String() + " for " + req.Model}
}

// claudeCloud is how Bedrock takes Claude's Messages body (anthropic.OnCloud):
// anthropic_beta in the body, no stream flag (the endpoint streams), its
// event-stream frames; its error bodies are not Anthropic's.
type claudeCloud struct{ a *Adapter }

var _ anthropic.Cloud = claudeCloud{}

// Post sends body to InvokeModel, or InvokeModelWithResponseStream for a
// stream; beta is always "" (the betas are in the body).
func (c claudeCloud) Post(ctx context.Context, req *provider.Request, body []byte, _ string) (*http.Response, error) {
	return c.a.invoke(ctx, req, body)
}

// Events reads InvokeModelWithResponseStream's frames.
func (c claudeCloud) Events(ctx context.Context, body io.Reader) anthropic.Events {
	return newInvokeEvents(ctx, body)
}

// invoke posts a Messages body to InvokeModel, or to
// InvokeModelWithResponseStream for a stream.
func (a *Adapter) invoke(ctx context.Context, req *provider.Request, body []byte) (*http.Response, error) {
	if req.Stream {
		return a.post(ctx, modelPath(req.Model, "invoke-with-response-stream"), body, true, "calling bedrock InvokeModelWithResponseStream")
	}
	return a.post(ctx, modelPath(req.Model, "invoke"), body, false, "calling bedrock InvokeModel")
}

// Content types of Bedrock's answers.
const (
	contentJSON   = "application/json"
	contentStream = "application/vnd.amazon.eventstream"
)

// post sends a signed JSON body to the runtime API at path and returns the
// 200 answer, whose body the caller reads and closes. Any other answer is
// classified (ClassifyError).
func (a *Adapter) post(ctx context.Context, path string, body []byte, stream bool, what string) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, a.runtime+path, bytes.NewReader(body))
	if err != nil {
		return nil, &outcome.Error{Kind: outcome.ClientError, Status: http.StatusBadRequest, Type: "invalid_request_error",
			Message: what + ": " + err.Error(), Err: err}
	}
	hr.Header.Set("Content-Type", contentJSON)
	if stream {
		hr.Header.Set("Accept", contentStream)
	} else {
		hr.Header.Set("Accept", contentJSON)
	}
	if stream {
		// Signed on a goroutine of its own (apart).
		var err error
		if apart(func() { err = a.signer.sign(ctx, hr, body, what) }); err != nil {
			return nil, err
		}
		return a.sendSigned(ctx, hr, what)
	}
	return a.send(ctx, hr, body, what)
}

// send signs hr (body is its body) and sends it; a status other than 200
// is read, closed and classified.
func (a *Adapter) send(ctx context.Context, hr *http.Request, body []byte, what string) (*http.Response, error) {
	if err := a.signer.sign(ctx, hr, body, what); err != nil {
		return nil, err
	}
	return a.sendSigned(ctx, hr, what)
}

// sendSigned sends the signed hr; a status other than 200 is read, closed
// and classified.
func (a *Adapter) sendSigned(ctx context.Context, hr *http.Request, what string) (*http.Response, error) {
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

// Probe lists the region's text foundation models (ListFoundationModels,
// a signed GET on Bedrock's control plane): free, available in every
// Bedrock region, and it proves the credentials, the signature and the
// network path. An AccessDeniedException is healthy: AWS checks who signed
// before what they may do, and a role scoped to invoking models need not
// list them. The answer is drained only as far as provider.MaxErrorBody.
func (a *Adapter) Probe(ctx context.Context) error {
	const what = "probing bedrock ListFoundationModels"
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, a.probe, nil)
	if err != nil {
		return &outcome.Error{Kind: outcome.ServerError, Message: what + ": " + err.Error(), Err: err}
	}
	hr.Header.Set("Accept", contentJSON)
	resp, err := a.send(ctx, hr, nil, what)
	var oe *outcome.Error
	if errors.As(err, &oe) && oe.Code == "AccessDeniedException" {
		return nil
	}
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, provider.MaxErrorBody))
	return resp.Body.Close()
}

// modelPath is /model/{id}/{action}, the id escaped as the AWS SDKs escape
// a path label: every byte but the unreserved ones (an inference profile
// ARN's '/' and ':' included).
func modelPath(model, action string) string {
	var b strings.Builder
	b.Grow(len(model)*3 + len(action) + 8)
	b.WriteString("/model/")
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(model); i++ {
		c := model[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	b.WriteByte('/')
	b.WriteString(action)
	return b.String()
}
