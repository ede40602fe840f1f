package proxy

import (
	"bytes"
	"crypto/sha256"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// keysServer is the router with one provider answering a, the models m
// and other, the anonymous key "anon" and the named keys given; its log
// lines go to log.
func keysServer(t testing.TB, a *fake, log *bytes.Buffer, keys ...routing.ClientKey) *Server {
	t.Helper()
	table, err := route.NewTable([]route.ModelConfig{
		{Name: "m", Targets: []route.Target{{Provider: "p", Model: "p-model"}}},
		{Name: "other", Targets: []route.Target{{Provider: "p", Model: "p-other"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := routing.Options{Providers: []routing.Provider{{Name: "p", Type: "fake", Adapter: a}}, Models: table,
		Limits: routing.LimitsConfig{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}, Retry: fastRetry,
		ClientKeys: []string{"anon"}, NamedKeys: keys}
	if log != nil {
		opts.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func namedKey(name, secret string, l clientkeys.Limits) routing.ClientKey {
	return routing.ClientKey{Named: clientauth.Named{Name: name, Hash: sha256.Sum256([]byte(secret))}, Limits: l}
}

// TestNamedKeys: the front door identifies named and anonymous keys,
// refuses a model outside a key's allow-list (403 model_not_allowed,
// nothing sent) and a request over the key's own RPM (429
// rate_limit_exceeded with Retry-After), and names the key in the log
// line, never its secret.
func TestNamedKeys(t *testing.T) {
	a := &fake{do: ok(`{"ok":true}`)}
	var log bytes.Buffer
	s := keysServer(t, a, &log,
		namedKey("team-a", "secret-a", clientkeys.Limits{Models: []string{"m"}, RPM: 2}),
		namedKey("team-b", "secret-b", clientkeys.Limits{}))
	h := s.Handler()
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	}
	tests := []struct {
		name, auth, model string
		status            int
		code              string
	}{
		{"unknown key", "Bearer nope", "m", 401, "invalid_api_key"},
		{"anonymous", "Bearer anon", "other", 200, ""},
		{"named, allowed", "Bearer secret-a", "m", 200, ""},
		{"named, outside its models", "Bearer secret-a", "other", 403, "model_not_allowed"},
		{"named, second in the minute", "Bearer secret-a", "m", 200, ""},
		{"named, over its rpm", "Bearer secret-a", "m", 429, "rate_limit_exceeded"},
		{"another key unaffected", "Bearer secret-b", "other", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.calls.Load()
			w := do(h, "POST", "/v1/chat/completions", "application/json", body(tt.model), "Authorization", tt.auth)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if tt.code == "" {
				return
			}
			if e := decodeErr(t, w.Body.Bytes()); e.Error.Code == nil || *e.Error.Code != tt.code {
				t.Errorf("code %v, want %s", e.Error.Code, tt.code)
			}
			if a.calls.Load() != before {
				t.Error("a refused request reached the provider")
			}
			if tt.status == 429 {
				ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
				if err != nil || ra < 1 || ra > 30 {
					t.Errorf("Retry-After %q, want 1 to 30 seconds", w.Header().Get("Retry-After"))
				}
			}
		})
	}
	out := log.String()
	for _, want := range []string{"key=team-a", "key=team-b", `key=""`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret-") {
		t.Errorf("log shows a secret:\n%s", out)
	}
}

// TestModelNotAllowedBeforeAnything: a key's allow-list is checked on the
// requested name (patterns as the model table reads them) for every
// operation.
func TestModelNotAllowedOnEveryOperation(t *testing.T) {
	a := &fake{do: ok(`{"ok":true}`), ops: map[provider.Op]bool{provider.OpChat: true, provider.OpEmbeddings: true}}
	s := keysServer(t, a, nil, namedKey("k", "s", clientkeys.Limits{Models: []string{"o*"}}))
	h := s.Handler()
	if w := do(h, "POST", "/v1/embeddings", "application/json", `{"model":"m","input":"x"}`, "x-api-key", "s"); w.Code != 403 {
		t.Errorf("embeddings outside the allow-list: %d, want 403", w.Code)
	}
	if w := do(h, "POST", "/v1/embeddings", "application/json", `{"model":"other","input":"x"}`, "x-api-key", "s"); w.Code != 200 {
		t.Errorf("embeddings inside the allow-list (pattern): %d, want 200: %s", w.Code, w.Body)
	}
}
