package vertex

import (
	"context"
	"net/http"
	"sync"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// scope is the OAuth2 scope of Vertex AI's API.
const scope = "https://www.googleapis.com/auth/cloud-platform"

// tokens finds the provider's credentials on first use, never in Build
// (which does no I/O): Google's Application Default Credentials as
// cloud.google.com/go/auth/credentials reads them (GOOGLE_APPLICATION_
// CREDENTIALS naming a service-account key or a workload identity
// federation config, gcloud's application default file, the metadata
// server on GKE, Cloud Run and Compute Engine). The library caches the
// access token and fetches a new one when it comes within 3 min 45 s of
// its expiry. The refresh blocks the request that finds the token stale,
// bounded by its context, instead of running in a goroutine of the
// library's own: no I/O outlives the attempt that needs it, and a refresh
// that fails is that attempt's auth error, not a failure kept silent
// until the token dies. Credentials that cannot be found are looked for
// again on the next request.
type tokens struct {
	load func() (*auth.Credentials, error)

	mu    sync.Mutex // guards creds
	creds *auth.Credentials
}

// defaultCredentials detects Application Default Credentials. client is
// what the token calls use; nil means the library's default.
func defaultCredentials(client *http.Client) func() (*auth.Credentials, error) {
	return func() (*auth.Credentials, error) {
		return credentials.DetectDefault(&credentials.DetectOptions{
			Scopes:              []string{scope},
			DisableAsyncRefresh: true,
			Client:              client,
		})
	}
}

// token returns an access token fit to send, bounded by ctx. A failure is
// the auth kind (no credentials, a key the token endpoint refuses, a
// metadata server that has no token for us), except that a ctx that ended
// keeps its own kind (provider.TransportError).
func (t *tokens) token(ctx context.Context, what string) (string, error) {
	t.mu.Lock()
	c := t.creds
	t.mu.Unlock()
	var err error
	if c == nil {
		if c, err = t.load(); err == nil {
			t.mu.Lock()
			if t.creds == nil {
				t.creds = c
			}
			c = t.creds
			t.mu.Unlock()
		}
	}
	var tok *auth.Token
	if err == nil {
		tok, err = c.Token(ctx)
	}
	if err == nil && tok.Value != "" {
		return tok.Value, nil
	}
	if err == nil {
		err = errEmptyToken
	}
	if ctx.Err() != nil {
		return "", provider.TransportError(ctx, what+": getting a Google access token", err)
	}
	return "", &outcome.Error{Kind: outcome.Auth,
		Message: provider.Message(what + ": getting a Google access token: " + err.Error()), Err: err}
}

var errEmptyToken = tokenError("the credentials gave an empty access token")

type tokenError string

func (e tokenError) Error() string { return string(e) }
