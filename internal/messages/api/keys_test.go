package api

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// TestNamedKeyRefusals: a named key's refusals are Anthropic-shaped on
// /v1/messages: a model outside its allow-list is 403 permission_error,
// its own RPM spent is 429 rate_limit_error.
func TestNamedKeyRefusals(t *testing.T) {
	table, err := route.NewTable([]route.ModelConfig{{Name: "claude-*", Targets: []route.Target{{Provider: "p0", Model: "up"}}}})
	if err != nil {
		t.Fatal(err)
	}
	key := routing.ClientKey{Named: clientauth.Named{Name: "agent", Hash: sha256.Sum256([]byte("s"))},
		Limits: clientkeys.Limits{Models: []string{"claude-haiku-*"}, RPM: 1}}
	s, err := proxy.Open(routing.Options{Providers: []routing.Provider{{Name: "p0", Type: "sim", Adapter: sim(t)}}, Models: table,
		NamedKeys: []routing.ClientKey{key}, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h := s.Handler(New(nil).Dialect())
	body := func(model string) string {
		return `{"model":"` + model + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	}
	for _, tt := range []struct {
		name, model string
		status      int
		typ         string
	}{
		{"outside the allow-list", "claude-opus-4-1", 403, "permission_error"},
		{"allowed", "claude-haiku-4-5", 200, ""},
		{"over the key's rpm", "claude-haiku-4-5", 429, "rate_limit_error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := send(h, "POST", "/v1/messages", body(tt.model), "x-api-key", "s")
			if tt.status == 200 {
				if w.Code != 200 {
					t.Fatalf("got %d, want 200: %s", w.Code, w.Body)
				}
				return
			}
			typ, _ := anthropicError(t, w)
			if w.Code != tt.status || typ != tt.typ {
				t.Fatalf("got %d %s, want %d %s", w.Code, typ, tt.status, tt.typ)
			}
		})
	}
}
