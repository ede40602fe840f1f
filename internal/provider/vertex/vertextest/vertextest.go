// Package vertextest is a fake Google Vertex AI, with the OAuth2 token
// endpoint that serves it, for tests on net/http/httptest. It checks what
// Google checks: the token endpoint mints an access token only for a JWT
// assertion signed (RS256) by the test service account's private key,
// verified with its public part, issued by that account, for the token
// endpoint's audience and the cloud-platform scope, and not expired; the
// API answers only requests bearing a token it minted and that has not
// expired, and refuses any other with Google's 401 UNAUTHENTICATED.
package vertextest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The test service account.
const (
	ClientEmail  = "llm-router@test-project.iam.gserviceaccount.com"
	PrivateKeyID = "test-key-1"
	scope        = "https://www.googleapis.com/auth/cloud-platform"
)

var (
	keyOnce sync.Once
	key     *rsa.PrivateKey
)

// testKey is the service account's key, made once per process (RSA key
// generation is slow under the race detector).
func testKey() *rsa.PrivateKey {
	keyOnce.Do(func() {
		var err error
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return key
}

// Request is one API request the fake accepted (its token was good).
type Request struct {
	Path   string // below the location: publishers/google/models/m:generateContent, endpoints
	Model  string
	Method string // generateContent, streamGenerateContent, rawPredict, streamRawPredict; "" for the probe
	Body   []byte
	Header http.Header
	Token  string
}

// Reply is what the fake answers one API request. The zero Reply is the
// fake's own well-formed answer (Default).
type Reply struct {
	// Status, when not 0 or 200, answers Body with that status.
	Status int
	// Body is a non-stream answer's, or an error's, body.
	Body string
	// Events are a stream's SSE data payloads (each sent as "data: …";
	// an Anthropic event also gets its event: line).
	Events []string
}

// Server is the fake. Set its fields before the first request.
type Server struct {
	*httptest.Server
	// Project and Region are the location whose API it serves.
	Project, Region string
	// TokenLifetime is how long a minted token is valid (1 h when 0).
	TokenLifetime time.Duration
	// Reply, when set, answers each accepted request; nil, or a zero
	// Reply, means Default.
	Reply func(r Request) Reply

	mu       sync.Mutex // guards the fields below
	tokens   map[string]time.Time
	minted   int
	requests []Request
	refused  int
}

// New starts a fake for project test-project in us-east5. Close it when
// done.
func New() *Server {
	s := &Server{Project: "test-project", Region: "us-east5", tokens: map[string]time.Time{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// WriteKeyFile writes the test service account's key file, whose token_uri
// is the fake's token endpoint, into dir and returns its path (for
// GOOGLE_APPLICATION_CREDENTIALS).
func (s *Server) WriteKeyFile(dir string) (string, error) {
	der, err := x509.MarshalPKCS8PrivateKey(testKey())
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": s.Project, "private_key_id": PrivateKeyID,
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": ClientEmail, "client_id": "100000000000000000001",
		"auth_uri": s.URL + "/auth", "token_uri": s.URL + "/token",
	})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "service-account.json")
	return path, os.WriteFile(path, b, 0o600)
}

// Minted is how many access tokens the token endpoint handed out.
func (s *Server) Minted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minted
}

// Refused is how many API requests were refused for their token.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Requests returns the API requests accepted so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if r.URL.Path == "/token" {
		s.serveToken(w, r, body)
		return
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	exp, ok := s.tokens[tok]
	good := ok && time.Now().Before(exp)
	if !good {
		s.refused++
	}
	s.mu.Unlock()
	if !good {
		writeJSON(w, http.StatusUnauthorized, `{"error":{"code":401,"message":"Request had invalid authentication credentials. `+
			`Expected OAuth 2 access token, login cookie or other valid authentication credential.","status":"UNAUTHENTICATED"}}`)
		return
	}
	prefix := "/v1/projects/" + s.Project + "/locations/" + s.Region + "/"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		writeJSON(w, http.StatusNotFound, `{"error":{"code":404,"message":"The requested URL was not found on this server.","status":"NOT_FOUND"}}`)
		return
	}
	req := Request{Path: rest, Body: body, Header: r.Header.Clone(), Token: tok}
	if pm, ok := strings.CutPrefix(rest, "publishers/"); ok {
		_, m, _ := strings.Cut(pm, "/models/")
		req.Model, req.Method, _ = strings.Cut(m, ":")
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	reply := s.Reply
	s.mu.Unlock()
	var rp Reply
	if reply != nil {
		rp = reply(req)
	}
	if rp.Status == 0 && rp.Body == "" && rp.Events == nil {
		rp = Default(req)
	}
	if rp.Status != 0 && rp.Status != http.StatusOK {
		writeJSON(w, rp.Status, rp.Body)
		return
	}
	if rp.Events == nil {
		writeJSON(w, http.StatusOK, rp.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, ev := range rp.Events {
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(ev), &head)
		if head.Type != "" {
			fmt.Fprintf(w, "event: %s\n", head.Type)
		}
		fmt.Fprintf(w, "data: %s\n\n", ev)
		w.(http.Flusher).Flush()
	}
}

// Default is the fake's own answer to r: text naming the model, with
// usage, in the shape its method answers.
func Default(r Request) Reply {
	text := "hello from " + r.Model
	q, _ := json.Marshal(text)
	switch r.Method {
	case "generateContent":
		return Reply{Body: `{"candidates":[{"content":{"role":"model","parts":[{"text":` + string(q) + `}]},"finishReason":"STOP"}],` +
			`"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4,"totalTokenCount":13},"modelVersion":"` + r.Model + `","responseId":"vtx-1"}`}
	case "streamGenerateContent":
		return Reply{Events: []string{
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"hello from "}]}}],"modelVersion":"` + r.Model + `","responseId":"vtx-1"}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"` + r.Model + `"}]},"finishReason":"STOP"}],` +
				`"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4,"totalTokenCount":13},"modelVersion":"` + r.Model + `","responseId":"vtx-1"}`,
		}}
	case "rawPredict":
		return Reply{Body: `{"id":"msg_vrtx_1","type":"message","role":"assistant","model":"` + r.Model + `","content":[{"type":"text","text":` + string(q) + `}],` +
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":4}}`}
	case "streamRawPredict":
		return Reply{Events: []string{
			`{"type":"message_start","message":{"id":"msg_vrtx_1","type":"message","role":"assistant","model":"` + r.Model + `","content":[],"stop_reason":null,"usage":{"input_tokens":9,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(q) + `}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`,
			`{"type":"message_stop"}`,
		}}
	}
	return Reply{Body: `{"endpoints":[]}`}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// serveToken is Google's OAuth2 token endpoint for a service account's
// JWT bearer grant (RFC 7523): it verifies the assertion and mints a
// token.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request, body []byte) {
	form, _ := url.ParseQuery(string(body))
	if form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		writeJSON(w, http.StatusBadRequest, `{"error":"unsupported_grant_type","error_description":"Invalid grant_type"}`)
		return
	}
	if why := s.verifyAssertion(form.Get("assertion")); why != "" {
		writeJSON(w, http.StatusBadRequest, `{"error":"invalid_grant","error_description":`+quote(why)+`}`)
		return
	}
	life := s.TokenLifetime
	if life == 0 {
		life = time.Hour
	}
	s.mu.Lock()
	s.minted++
	tok := fmt.Sprintf("ya29.test-access-token-%d", s.minted)
	s.tokens[tok] = time.Now().Add(life)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, fmt.Sprintf(`{"access_token":%q,"expires_in":%d,"token_type":"Bearer"}`, tok, int(life.Seconds())))
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// verifyAssertion checks a JWT bearer assertion as Google does: RS256 by
// the test key, the test account as issuer, the token endpoint as
// audience, the cloud-platform scope, issued now and not expired. It
// returns why not, in Google's words where it has them; "" means good.
func (s *Server) verifyAssertion(jwt string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "not a JWT"
	}
	var head struct{ Alg, Typ, Kid string }
	var claims struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	for i, dst := range []any{&head, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return fmt.Sprintf("JWT part %d is not base64url: %v", i, err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			return fmt.Sprintf("JWT part %d is not JSON: %v", i, err)
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "JWT signature is not base64url"
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	now := time.Now().Unix()
	switch {
	case head.Alg != "RS256":
		return fmt.Sprintf("alg %q, want RS256", head.Alg)
	case rsa.VerifyPKCS1v15(&testKey().PublicKey, crypto.SHA256, sum[:], sig) != nil:
		return "Invalid JWT Signature."
	case claims.Iss != ClientEmail:
		return fmt.Sprintf("iss %q is not the service account", claims.Iss)
	case claims.Aud != s.URL+"/token":
		return fmt.Sprintf("aud %q is not the token endpoint", claims.Aud)
	case !strings.Contains(" "+claims.Scope+" ", " "+scope+" "):
		return fmt.Sprintf("scope %q lacks cloud-platform", claims.Scope)
	case claims.Iat > now+60 || claims.Exp <= now || claims.Exp-claims.Iat > 3600:
		return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
	}
	return ""
}
