package anthropic

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// TestDoCapsOutputLimit: the target's cap lowers max_tokens in the
// Messages body a chat request is translated into, the default the
// adapter sends when the client set none included, and in the Messages
// body passed through natively, where every other byte is the client's
// (docs/ARCHITECTURE.md, "Output limits").
func TestDoCapsOutputLimit(t *testing.T) {
	rows := append([]providertest.OutputLimit(nil), providertest.OutputLimits...)
	for i := range rows {
		if rows[i].Limit == 0 {
			rows[i].Want = DefaultMaxTokens // Anthropic requires one: the default, under the cap
		}
	}
	rows = append(rows,
		providertest.OutputLimit{Name: "the default above the cap", Limit: 0, Cap: 2048, Want: 2048},
		providertest.OutputLimit{Name: "the default at the cap", Limit: 0, Cap: DefaultMaxTokens, Want: DefaultMaxTokens})
	for _, field := range []string{"max_tokens", "max_completion_tokens"} {
		for _, tt := range rows {
			t.Run("chat "+field+"/"+tt.Name, func(t *testing.T) {
				a, up := newNativeAdapter(t, "sk-ant-test", answer(okMessage))
				body := `{"model":"alias","messages":[{"role":"user","content":"hi"}]`
				if tt.Limit != 0 {
					body += `,"` + field + `":` + strconv.FormatInt(tt.Limit, 10)
				}
				req := chatReq(body + `}`)
				req.MaxOutputTokens = tt.Cap
				if _, err := a.Do(context.Background(), req); err != nil {
					t.Fatalf("Do: %v", err)
				}
				providertest.CheckLimit(t, "translated", up.Only(t).Body, "max_tokens", tt.Want)
			})
		}
	}
	for _, tt := range providertest.OutputLimits {
		t.Run("messages/"+tt.Name, func(t *testing.T) {
			a, up := newNativeAdapter(t, "sk-ant-test", answer(nativeAnswer))
			limit := func(n int64) string {
				if n == 0 {
					return ""
				}
				return `"max_tokens":` + strconv.FormatInt(n, 10) + `,`
			}
			const head, tail = `{"model":"claude-sonnet-4-5",`, `"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}`
			req := messagesReq(t, head+limit(tt.Limit)+tail)
			req.MaxOutputTokens = tt.Cap
			if _, err := a.Do(context.Background(), req); err != nil {
				t.Fatalf("Do: %v", err)
			}
			if got, want := string(up.Only(t).Body), swapped(head+limit(tt.Want)+tail); got != want {
				t.Errorf("sent %s\nwant %s", got, want)
			}
		})
	}
}

// TestDoCapsConfiguredDefault: a configured default_max_tokens above the
// cap is lowered like the client's limit.
func TestDoCapsConfiguredDefault(t *testing.T) {
	up := providertest.NewUpstream(t, answer(okMessage))
	p := provider.Config{Name: "anthropic", BaseURL: up.Server.URL}
	a, err := New(p, "sk-ant-test", Config{DefaultMaxTokens: 32000}, provider.NewHTTPClient(p))
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return testNow }
	t.Cleanup(a.client.CloseIdleConnections)
	for _, tt := range []struct{ cap, want int64 }{{0, 32000}, {8192, 8192}, {64000, 32000}} {
		req := chatReq(`{"model":"alias","messages":[{"role":"user","content":"hi"}]}`)
		req.MaxOutputTokens = tt.cap
		if _, err := a.Do(context.Background(), req); err != nil {
			t.Fatalf("Do: %v", err)
		}
		providertest.CheckLimit(t, "cap "+strconv.FormatInt(tt.cap, 10), up.Last(t).Body, "max_tokens", tt.want)
	}
}

// answer answers every request 200 with the JSON body.
func answer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}
