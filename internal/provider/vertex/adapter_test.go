package vertex

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
	"github.com/llmrouter/llmrouter/internal/provider/vertex/vertextest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	gem    = "gemini-2.5-flash"
	claude = "claude-sonnet-4-5@20250929"
)

// isolateGoogle empties Application Default Credentials for one test: no
// variable or gcloud file from the machine, and the metadata server at a
// loopback port that refuses (a test must never reach 169.254.169.254).
func isolateGoogle(t testing.TB) {
	t.Helper()
	for _, v := range []string{"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "GOOGLE_CLOUD_PROJECT", "GOOGLE_API_USE_CLIENT_CERTIFICATE"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("CLOUDSDK_CONFIG", dir)
	t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1")
	t.Setenv("GCE_METADATA_IP", "127.0.0.1:1")
}

// newFake starts the fake Vertex AI and returns an adapter for its
// location, with the test service account's key file as
// GOOGLE_APPLICATION_CREDENTIALS.
func newFake(t testing.TB) (*Adapter, *vertextest.Server) {
	t.Helper()
	isolateGoogle(t)
	fake := vertextest.New()
	t.Cleanup(fake.Close)
	path, err := fake.WriteKeyFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	// The token calls go through the fake's client, whose idle
	// connections its Close ends.
	a, err := newAdapter(provider.Config{Name: "vertex", BaseURL: fake.URL},
		Config{Project: fake.Project, Region: fake.Region}, fake.Client(), defaultCredentials(fake.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return a, fake
}

func chat(model, body string, stream bool) *provider.Request {
	return &provider.Request{Op: provider.OpChat, Model: model, Body: []byte(body), Stream: stream, IncludeUsage: stream}
}

func drain(t testing.TB, s provider.Stream) ([]string, error) {
	t.Helper()
	defer s.Close()
	var out []string
	for {
		c, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(c))
		if len(out) > 1000 {
			t.Fatal("stream does not end")
		}
	}
}

// TestGemini: chat for a Gemini model goes to generateContent (and its
// stream) of the provider's location, with a token the fake minted from a
// verified service-account assertion.
func TestGemini(t *testing.T) {
	a, fake := newFake(t)
	resp, err := a.Do(context.Background(), chat(gem, `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":20}`, false))
	if err != nil {
		t.Fatal(err)
	}
	// The fake's modelVersion is the model asked for.
	if !strings.Contains(string(resp.Body), `"content":"hello from `+gem+`"`) || resp.Usage != (outcome.Usage{PromptTokens: 9, CompletionTokens: 4, Model: gem}) {
		t.Errorf("answer %s, usage %+v", resp.Body, resp.Usage)
	}
	r := fake.Requests()[0]
	if r.Path != "publishers/google/models/"+gem+":generateContent" || !strings.Contains(string(r.Body), `"systemInstruction"`) {
		t.Errorf("fake got %s %s", r.Path, r.Body)
	}
	resp, err = a.Do(context.Background(), chat(gem, `{"messages":[{"role":"user","content":"hi"}]}`, true))
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := drain(t, resp.Stream)
	if err != io.EOF || !strings.Contains(strings.Join(chunks, ""), `"finish_reason":"stop"`) || resp.Stream.Usage().Model != gem {
		t.Errorf("stream: %v, model %q\n%s", err, resp.Stream.Usage().Model, strings.Join(chunks, "\n"))
	}
	if fake.Minted() != 1 || fake.Refused() != 0 {
		t.Errorf("tokens minted %d, refused %d; want one, reused", fake.Minted(), fake.Refused())
	}
}

// TestClaudeNative: a Messages request for Claude goes to rawPredict (and
// streamRawPredict) with the client's body less its model, plus
// anthropic_version, and its betas as the anthropic-beta header; the
// answer comes back as it came; chat for Claude is translated onto the
// same calls.
func TestClaudeNative(t *testing.T) {
	a, fake := newFake(t)
	const body = `{"model":"claude-sonnet-4-5","max_tokens":99,"stream":%s,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	req := &provider.Request{Op: provider.OpMessages, Model: claude, Body: []byte(strings.Replace(body, "%s", "false", 1)),
		Native: []provider.Header{{Name: anthropic.HeaderBeta, Value: "context-1m-2025-08-07"}}}
	resp, err := a.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := fake.Requests()[0]
	want := `{"anthropic_version":"vertex-2023-10-16","max_tokens":99,"stream":false,` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	if got.Method != "rawPredict" || got.Model != claude || string(got.Body) != want || got.Header.Get("Anthropic-Beta") != "context-1m-2025-08-07" {
		t.Errorf("rawPredict: got %s %s, anthropic-beta %q\n%s\nwant\n%s", got.Method, got.Model, got.Header.Get("Anthropic-Beta"), got.Body, want)
	}
	if !strings.Contains(string(resp.Body), `"id":"msg_vrtx_1"`) || resp.Usage.PromptTokens != 9 || resp.Usage.Model != claude {
		t.Errorf("answer %s usage %+v", resp.Body, resp.Usage)
	}
	req.Body, req.Stream = []byte(strings.Replace(body, "%s", "true", 1)), true
	resp, err = a.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	events, err := drain(t, resp.Stream)
	if err != io.EOF || len(events) != 6 || !strings.Contains(events[5], "message_stop") || resp.Stream.Usage().Model != claude {
		t.Errorf("stream: %v, model %q\n%s", err, resp.Stream.Usage().Model, strings.Join(events, "\n"))
	}
	if got := fake.Requests()[1]; got.Method != "streamRawPredict" || !strings.Contains(string(got.Body), `"stream":true`) {
		t.Errorf("streamRawPredict: got %s %s", got.Method, got.Body)
	}

	resp, err = a.Do(context.Background(), chat(claude, `{"messages":[{"role":"user","content":"hi"}]}`, false))
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests()[2]; got.Method != "rawPredict" || strings.Contains(string(got.Body), `"model"`) ||
		!strings.Contains(string(got.Body), `"anthropic_version":"vertex-2023-10-16"`) || !strings.Contains(string(resp.Body), `"object":"chat.completion"`) ||
		resp.Usage.Model != claude {
		t.Errorf("chat for claude: sent %s, answered %s, model %q", got.Body, resp.Body, resp.Usage.Model)
	}
}

// TestTokenRefresh: a token that comes within the refresh window of its
// expiry is replaced before the next request (the fake's tokens live one
// minute, inside the library's 3 min 45 s window); a token the API did
// not mint is the auth kind.
func TestTokenRefresh(t *testing.T) {
	a, fake := newFake(t)
	fake.TokenLifetime = time.Minute
	for range 3 {
		if _, err := a.Do(context.Background(), chat(gem, `{"messages":[{"role":"user","content":"hi"}]}`, false)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, r := range fake.Requests() {
		seen[r.Token] = true
	}
	if fake.Minted() != 3 || len(seen) != 3 || fake.Refused() != 0 {
		t.Errorf("minted %d, distinct tokens used %d, refused %d; want 3, 3, 0", fake.Minted(), len(seen), fake.Refused())
	}
	if err := a.Probe(context.Background()); err != nil {
		t.Errorf("probe: %v", err)
	}
	src, err := a.FindCredentials(context.Background())
	if want := ", service_account " + vertextest.ClientEmail; err != nil || !strings.HasPrefix(src, "GOOGLE_APPLICATION_CREDENTIALS: ") ||
		!strings.HasSuffix(src, want) {
		t.Errorf("FindCredentials: %q, %v", src, err)
	}

	// Another Vertex accepts only the tokens it minted: one from this
	// key's token endpoint is refused, with Google's 401 (auth).
	other := vertextest.New()
	t.Cleanup(other.Close)
	b, err := newAdapter(provider.Config{Name: "v", BaseURL: other.URL}, Config{Project: other.Project, Region: other.Region},
		other.Client(), defaultCredentials(other.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Do(context.Background(), chat(gem, `{"messages":[{"role":"user","content":"hi"}]}`, false)); outcome.KindOf(err) != outcome.Auth {
		t.Errorf("a token from another endpoint: got %v", err)
	}
	if other.Refused() != 1 {
		t.Errorf("the other fake refused %d requests, want 1 (a token it did not mint)", other.Refused())
	}
}

// TestForeignKey: a key file whose private key is not the service
// account's: the token endpoint refuses the assertion (its signature does
// not verify), and the request is the auth kind; nothing reached the API.
func TestForeignKey(t *testing.T) {
	a, fake := newFake(t)
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": fake.Project, "private_key_id": "other",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "client_email": vertextest.ClientEmail,
		"token_uri": fake.URL + "/token"})
	path := filepath.Join(t.TempDir(), "foreign.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	_, err = a.Do(context.Background(), chat(gem, `{"messages":[{"role":"user","content":"hi"}]}`, false))
	if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.Auth || !strings.Contains(oe.Message, "Invalid JWT Signature") {
		t.Errorf("got %+v", oe)
	}
	if fake.Minted() != 0 || len(fake.Requests())+fake.Refused() != 0 {
		t.Errorf("minted %d, API calls %d", fake.Minted(), len(fake.Requests())+fake.Refused())
	}
}

// TestNoCredentials: no key file, no gcloud file, no metadata server: auth,
// at once.
func TestNoCredentials(t *testing.T) {
	isolateGoogle(t)
	a, err := newAdapter(provider.Config{Name: "v", BaseURL: "http://127.0.0.1:1"}, Config{Project: "test-project", Region: "global"}, nil,
		defaultCredentials(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = a.Do(ctx, chat(gem, `{"messages":[{"role":"user","content":"hi"}]}`, false))
	if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.Auth || !strings.Contains(oe.Message, "access token") {
		t.Errorf("got %+v", oe)
	}
}

// TestClassifyError: Google's error shape as the gemini adapter reads it,
// Anthropic's (passed on by rawPredict) as the anthropic adapter does.
func TestClassifyError(t *testing.T) {
	for _, tt := range []struct {
		status   int
		body     string
		want     outcome.Kind
		keepBody bool
	}{
		{429, `{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model with base model: gemini-2.5-flash.","status":"RESOURCE_EXHAUSTED"}}`, outcome.RateLimited, false},
		{429, `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel"}]}]}}`, outcome.Quota, false},
		{503, `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`, outcome.Overloaded, false},
		{403, `{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}`, outcome.Auth, false},
		{401, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`, outcome.Auth, false},
		{404, `{"error":{"code":404,"message":"Publisher Model ` + "`projects/p/locations/us-east5/publishers/google/models/gemini-9`" + ` was not found or your project does not have access to it.","status":"NOT_FOUND"}}`, outcome.ClientError, false},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, outcome.ClientError, true},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, outcome.Overloaded, true},
	} {
		e := ClassifyError(tt.status, nil, []byte(tt.body), time.Now())
		if e.Kind != tt.want || (e.Body != nil) != tt.keepBody {
			t.Errorf("%d %s: got %s (body kept %v), want %s", tt.status, tt.body, e.Kind, e.Body != nil, tt.want)
		}
	}
}

// TestNew: Build's checks; no I/O (credentials are not looked for).
func TestNew(t *testing.T) {
	isolateGoogle(t)
	for _, c := range []Config{{Project: "my-project", Region: "global"}, {Project: "example.com:my-project", Region: "europe-west4", APIVersion: "v1beta1"}} {
		if _, err := New(provider.Config{Name: "v"}, c, nil); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	_, err := New(provider.Config{Name: "v", APIKeyEnv: "K", BaseURL: "https://x/v1"}, Config{Project: "P!", Region: "Europe", APIVersion: "v2"}, nil)
	for _, want := range []string{"api_key_env: vertex takes no API key", `vertex.project: "P!"`, `vertex.region: "Europe"`, "vertex.api_version", "base_url:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to hold %q", err, want)
		}
	}
	a, _ := New(provider.Config{Name: "v"}, Config{Project: "my-project", Region: "global"}, nil)
	if a.location != "https://aiplatform.googleapis.com/v1/projects/my-project/locations/global" {
		t.Errorf("global: %s", a.location)
	}
	a, _ = New(provider.Config{Name: "v"}, Config{Project: "my-project", Region: "us-east5"}, nil)
	if a.location != "https://us-east5-aiplatform.googleapis.com/v1/projects/my-project/locations/us-east5" {
		t.Errorf("regional: %s", a.location)
	}
	if !provider.Serves(a, provider.OpMessages, claude) || provider.Serves(a, provider.OpMessages, gem) || !provider.Serves(a, provider.OpChat, gem) {
		t.Error("Serves: Messages natively for Claude only, chat for all")
	}
}
