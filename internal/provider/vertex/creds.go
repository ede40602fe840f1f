package vertex

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// FindCredentials gets an access token as the provider's first request
// would and says which source of Application Default Credentials gave it,
// in Google's words ("GOOGLE_APPLICATION_CREDENTIALS: /etc/sa.json,
// service_account llm-router@p.iam.gserviceaccount.com"): never a key or
// a token.
func (a *Adapter) FindCredentials(ctx context.Context) (string, error) {
	if _, err := a.tokens.token(ctx, "finding vertex credentials"); err != nil {
		return "", err
	}
	return adcSource(), nil
}

// adcSource says which source Application Default Credentials took,
// looking in the order the library does.
func adcSource() string {
	if f := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); f != "" {
		return "GOOGLE_APPLICATION_CREDENTIALS: " + f + fileKind(f)
	}
	dir := os.Getenv("CLOUDSDK_CONFIG")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config", "gcloud")
	}
	if f := filepath.Join(dir, "application_default_credentials.json"); fileExists(f) {
		return "gcloud application default credentials: " + f + fileKind(f)
	}
	return "the metadata server (attached service account)"
}

// fileKind is a credentials file's type and, for a service account, its
// e-mail: ", service_account x@p.iam.gserviceaccount.com".
func fileKind(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var f struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
	}
	if json.Unmarshal(b, &f) != nil || f.Type == "" {
		return ""
	}
	return ", " + strings.TrimSpace(f.Type+" "+f.ClientEmail)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
