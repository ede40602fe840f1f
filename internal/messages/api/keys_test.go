package api

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/provider"

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
	s, err := proxy.Open(routing.Options{Providers: []provider.Descriptor{{Name: "p0", Type: "sim", Adapter: sim(t)}}, Models: table,
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

// TestCountTokensWithinLimits (issue 31, finding 7): count_tokens takes
// one of the key's RPM and a bulkhead permit of the provider that counts;
// when either is refused the router answers its own estimate at once (a
// 200, no provider call), never a 429 an SDK would retry. Before, after
// rpm 2 was spent six more counts each reached the provider.
func TestCountTokensWithinLimits(t *testing.T) {
	table, err := route.NewTable([]route.ModelConfig{{Name: "claude-*", Targets: []route.Target{{Provider: "p0", Model: "up"}}}})
	if err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	n := &native{do: func(ctx context.Context, req *provider.Request) (*provider.Response, error) {
		if strings.Contains(string(req.Body), "hold") {
			close(held)
			<-release
		}
		return &provider.Response{Body: []byte(nativeAnswer)}, nil
	}}
	key := routing.ClientKey{Named: clientauth.Named{Name: "agent", Hash: sha256.Sum256([]byte("s"))}, Limits: clientkeys.Limits{RPM: 2}}
	free := routing.ClientKey{Named: clientauth.Named{Name: "free", Hash: sha256.Sum256([]byte("f"))}}
	s, err := proxy.Open(routing.Options{
		Providers: []provider.Descriptor{{Name: "p0", Type: "fake", Adapter: n, Config: provider.Config{MaxConcurrency: 1}}},
		Models:    table, NamedKeys: []routing.ClientKey{key, free},
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h := s.Handler(New(nil).Dialect())
	count := `{"model":"claude-x","messages":[{"role":"user","content":"` + strings.Repeat("word ", 100) + `"}]}`
	estimated := func(t *testing.T, secret string) {
		t.Helper()
		before := n.counts.Load()
		w := send(h, "POST", "/v1/messages/count_tokens", count, "x-api-key", secret)
		var c struct {
			InputTokens int64 `json:"input_tokens"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || w.Code != 200 || c.InputTokens == 42 || c.InputTokens < 100 {
			t.Fatalf("got %d %s, want 200 and the router's estimate", w.Code, w.Body)
		}
		if got := n.counts.Load() - before; got != 0 {
			t.Fatalf("the provider counted %d times, want 0", got)
		}
	}
	t.Run("the key's rpm", func(t *testing.T) {
		w := send(h, "POST", "/v1/messages/count_tokens", count, "x-api-key", "s")
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"input_tokens":42}` || n.counts.Load() != 1 {
			t.Fatalf("first count: %d %s (%d counts), want the provider's", w.Code, w.Body, n.counts.Load())
		}
		msg := `{"model":"claude-x","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
		if w := send(h, "POST", "/v1/messages", msg, "x-api-key", "s"); w.Code != 200 {
			t.Fatalf("message: %d %s", w.Code, w.Body)
		}
		// rpm 2 is spent: a message is refused, a count is estimated.
		if w := send(h, "POST", "/v1/messages", msg, "x-api-key", "s"); w.Code != 429 {
			t.Fatalf("message over rpm: %d, want 429", w.Code)
		}
		for range 6 {
			estimated(t, "s")
		}
	})
	t.Run("the provider's bulkhead", func(t *testing.T) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			send(h, "POST", "/v1/messages", `{"model":"claude-x","max_tokens":8,"messages":[{"role":"user","content":"hold"}]}`, "x-api-key", "f")
		}()
		<-held // the held request holds the provider's one permit
		estimated(t, "f")
		close(release)
		<-done
		if w := send(h, "POST", "/v1/messages/count_tokens", count, "x-api-key", "f"); strings.TrimSpace(w.Body.String()) != `{"input_tokens":42}` {
			t.Fatalf("after the permit's release: %d %s, want the provider's count", w.Code, w.Body)
		}
	})
}

// TestModelListFollowsTheKey (issue 31, finding 10): GET /v1/models lists
// only what the key may call, in both list shapes (OpenAI's, and
// Anthropic's with anthropic-version): a pattern when it intersects the
// key's allow-list. Before, every configured model was listed, and
// GET /v1/models/{id} answered 403 for some of them.
func TestModelListFollowsTheKey(t *testing.T) {
	var cfgs []route.ModelConfig
	for _, n := range []string{"claude-*", "gemini-*", "gpt-4o", "gpt-4o-mini", "o3", "mistral-*"} {
		cfgs = append(cfgs, route.ModelConfig{Name: n, Targets: []route.Target{{Provider: "p0", Model: "up"}}})
	}
	table, err := route.NewTable(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	keys := []routing.ClientKey{
		{Named: clientauth.Named{Name: "narrow", Hash: sha256.Sum256([]byte("n"))},
			Limits: clientkeys.Limits{Models: []string{"claude-haiku-*", "gpt-4o*", "gemini-2.5-pro", "mis"}}},
		{Named: clientauth.Named{Name: "one", Hash: sha256.Sum256([]byte("o"))}, Limits: clientkeys.Limits{Models: []string{"o3"}}},
		{Named: clientauth.Named{Name: "broad", Hash: sha256.Sum256([]byte("b"))}, Limits: clientkeys.Limits{Models: []string{"*"}}},
		{Named: clientauth.Named{Name: "any", Hash: sha256.Sum256([]byte("a"))}},
		{Named: clientauth.Named{Name: "wide", Hash: sha256.Sum256([]byte("w"))}, Limits: clientkeys.Limits{Models: []string{"g*"}}},
	}
	s, err := proxy.Open(routing.Options{Providers: []provider.Descriptor{{Name: "p0", Type: "sim", Adapter: sim(t)}}, Models: table,
		NamedKeys: keys, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h := s.Handler(New(nil).Dialect())
	all := "claude-* gemini-* gpt-4o gpt-4o-mini mistral-* o3"
	for _, tt := range []struct{ secret, want string }{
		{"n", "claude-* gemini-* gpt-4o gpt-4o-mini"},
		{"o", "o3"},
		{"b", all},
		{"a", all},
		{"w", "gemini-* gpt-4o gpt-4o-mini"},
	} {
		for _, anthropic := range []bool{false, true} {
			hdr := []string{"x-api-key", tt.secret}
			if anthropic {
				hdr = append(hdr, "anthropic-version", "2023-06-01")
			}
			w := send(h, "GET", "/v1/models", "", hdr...)
			var list struct {
				Object string `json:"object"`
				Data   []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || w.Code != 200 || (list.Object == "list") == anthropic {
				t.Fatalf("key %s, anthropic %v: %d %s", tt.secret, anthropic, w.Code, w.Body)
			}
			var got []string
			for _, m := range list.Data {
				got = append(got, m.ID)
				// Every model listed can be asked about (a pattern by a
				// name it serves that the key allows).
				if !strings.HasSuffix(m.ID, "*") {
					if w := send(h, "GET", "/v1/models/"+m.ID, "", hdr...); w.Code != 200 {
						t.Errorf("key %s: %s listed, but GET /v1/models/%s is %d", tt.secret, m.ID, m.ID, w.Code)
					}
				}
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("key %s, anthropic %v: listed %q, want %q", tt.secret, anthropic, g, tt.want)
			}
		}
	}
}
