package bedrock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// signingName is the SigV4 service name of Bedrock's runtime and control
// plane alike.
const signingName = "bedrock"

// Credentials are refreshed this long before they expire (with up to half
// of it taken off at random, so that a fleet does not refresh at once): a
// request signed just before expiry must not arrive after it
// (ExpiredTokenException).
const (
	expiryWindow       = 5 * time.Minute
	expiryWindowJitter = 0.5
)

// credentials finds the provider's AWS credentials on first use, never in
// Build (which does no I/O): the default chain of the AWS SDK for Go
// (config.LoadDefaultConfig), whose provider comes wrapped in an
// aws.CredentialsCache that refreshes expiring credentials (web identity,
// container and instance roles, SSO) expiryWindow early, one refresh at a
// time. A chain that cannot be loaded (a profile that does not exist) is
// tried again on the next use, so fixing the file needs no restart.
type credentials struct {
	load func(ctx context.Context) (aws.CredentialsProvider, error)

	mu   sync.Mutex // guards prov
	prov aws.CredentialsProvider
}

// defaultChain loads the default chain for region and profile ("" the
// chain's own choice). client is what the chain's own calls (STS, the
// metadata services) use; nil means the SDK's default.
func defaultChain(region, profile string, client aws.HTTPClient) func(ctx context.Context) (aws.CredentialsProvider, error) {
	return func(ctx context.Context) (aws.CredentialsProvider, error) {
		opts := []func(*config.LoadOptions) error{
			config.WithRegion(region),
			config.WithCredentialsCacheOptions(func(o *aws.CredentialsCacheOptions) {
				o.ExpiryWindow = expiryWindow
				o.ExpiryWindowJitterFrac = expiryWindowJitter
			}),
		}
		if profile != "" {
			opts = append(opts, config.WithSharedConfigProfile(profile))
		}
		if client != nil {
			opts = append(opts, config.WithHTTPClient(client))
		}
		cfg, err := config.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return nil, err
		}
		return cfg.Credentials, nil
	}
}

// provider returns the loaded chain, loading it if need be. Loading runs
// outside the lock; two first requests may both load, and one result is
// kept.
func (c *credentials) provider(ctx context.Context) (aws.CredentialsProvider, error) {
	c.mu.Lock()
	p := c.prov
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := c.load(ctx)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errNoCredentials
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prov == nil {
		c.prov = p
	}
	return c.prov, nil
}

// errNoCredentials is a chain that found no source at all.
var errNoCredentials = credentialsError("no AWS credentials found")

type credentialsError string

func (e credentialsError) Error() string { return string(e) }

// retrieve returns credentials fit to sign with, bounded by ctx. A failure
// is the auth kind (no role, a token that does not refresh, a profile that
// does not exist: the provider cannot work until that changes), except
// that a ctx that ended keeps its own kind (provider.TransportError).
func (c *credentials) retrieve(ctx context.Context, what string) (aws.Credentials, error) {
	p, err := c.provider(ctx)
	var creds aws.Credentials
	if err == nil {
		creds, err = p.Retrieve(ctx)
	}
	if err == nil && !creds.HasKeys() {
		err = errNoCredentials
	}
	if err == nil {
		return creds, nil
	}
	if ctx.Err() != nil {
		return aws.Credentials{}, provider.TransportError(ctx, what+": getting AWS credentials", err)
	}
	return aws.Credentials{}, &outcome.Error{Kind: outcome.Auth,
		Message: provider.Message(what + ": getting AWS credentials: " + err.Error()), Err: err}
}

// signer signs requests with SigV4 (aws/signer/v4).
type signer struct {
	creds  *credentials
	v4     *v4.Signer
	region string
	now    func() time.Time
}

// sign adds SigV4's headers (Authorization, X-Amz-Date and, for temporary
// credentials, X-Amz-Security-Token) to hr, whose body is body. Every
// header hr holds now is signed: set them all before.
func (s *signer) sign(ctx context.Context, hr *http.Request, body []byte, what string) error {
	creds, err := s.creds.retrieve(ctx, what)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	if err := s.v4.SignHTTP(ctx, creds, hr, hex.EncodeToString(sum[:]), signingName, s.region, s.now()); err != nil {
		return &outcome.Error{Kind: outcome.Auth, Message: what + ": signing: " + err.Error(), Err: err}
	}
	return nil
}

// apart runs f on a goroutine of its own and waits for it; a panic there
// is raised again on the caller (as openaiwire.Decode does). A stream's
// request is made with it: what its frames need (encoding/json's per
// nesting level, the SDK's signing with time.Format's) would grow the
// request's goroutine past 8 KiB, a stack it keeps for the stream's life
// (docs/BENCHMARKS.md, "Memory per stream").
func apart(f func()) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	if p := <-done; p != nil {
		panic(p)
	}
}

// FindCredentials gets the provider's credentials as its first request
// would and says where they came from, in the AWS SDKs' words, with the
// access key ID shortened (never the secret or the session token):
// "environment (EnvConfigCredentials), key AKIA…MPLE".
func (a *Adapter) FindCredentials(ctx context.Context) (string, error) {
	creds, err := a.signer.creds.retrieve(ctx, "finding bedrock credentials")
	if err != nil {
		return "", err
	}
	src := sourceWords(creds.Source) + " (" + creds.Source + "), key " + shortKey(creds.AccessKeyID)
	if creds.CanExpire {
		src += ", temporary until " + creds.Expires.UTC().Format(time.RFC3339)
	}
	return src, nil
}

// sourceWords names a credential source of the default chain as AWS's
// documentation does.
func sourceWords(source string) string {
	for _, s := range [...]struct{ prefix, words string }{
		{"EnvConfigCredentials", "environment variables"},
		{"SharedConfigCredentials", "shared credentials file"},
		{"WebIdentityCredentials", "web identity token file (IAM role for a service account)"},
		{"AssumeRoleProvider", "assumed role of a shared config profile"},
		{"SSOProvider", "IAM Identity Center (SSO) profile"},
		{"CredentialsEndpointProvider", "container credentials endpoint (ECS task role)"},
		{"EC2RoleProvider", "EC2 instance profile"},
		{"ProcessProvider", "credential_process of a shared config profile"},
	} {
		if strings.HasPrefix(source, s.prefix) {
			return s.words
		}
	}
	return "AWS credentials"
}

// shortKey is an access key ID with only its first and last four
// characters left: enough to tell keys apart in a report.
func shortKey(id string) string {
	if len(id) <= 8 {
		return strings.Repeat("*", len(id))
	}
	return id[:4] + "…" + id[len(id)-4:]
}
