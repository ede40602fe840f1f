package vertex

import (
	"context"
	"strconv"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// TestDoCapsOutputLimit: the target's cap lowers the limit in each body
// Vertex AI is sent (docs/ARCHITECTURE.md, "Output limits"): Gemini's
// generationConfig.maxOutputTokens, the Messages body's max_tokens passed
// through to rawPredict, and the one chat is translated into for Claude
// (its default when the client set none included).
func TestDoCapsOutputLimit(t *testing.T) {
	limit := func(n int64) string {
		if n == 0 {
			return ""
		}
		return `,"max_tokens":` + strconv.FormatInt(n, 10)
	}
	cases := []struct {
		name string
		req  func(tt providertest.OutputLimit) *provider.Request
		path string
		want func(tt providertest.OutputLimit) int64
	}{
		{"gemini", func(tt providertest.OutputLimit) *provider.Request {
			return chat(gem, `{"messages":[{"role":"user","content":"hi"}]`+limit(tt.Limit)+`}`, false)
		}, "generationConfig.maxOutputTokens", nil},
		{"claude messages", func(tt providertest.OutputLimit) *provider.Request {
			return &provider.Request{Op: provider.OpMessages, Model: claude,
				Body: []byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]` + limit(tt.Limit) + `}`)}
		}, "max_tokens", nil},
		{"claude chat", func(tt providertest.OutputLimit) *provider.Request {
			return chat(claude, `{"messages":[{"role":"user","content":"hi"}]`+limit(tt.Limit)+`}`, false)
		}, "max_tokens", func(tt providertest.OutputLimit) int64 {
			if tt.Limit == 0 {
				return provider.CapOutput(anthropic.DefaultMaxTokens, tt.Cap) // Anthropic requires one
			}
			return tt.Want
		}},
	}
	rows := append(append([]providertest.OutputLimit(nil), providertest.OutputLimits...),
		providertest.OutputLimit{Name: "no limit, a cap under the default", Cap: 2048})
	a, fake := newFake(t)
	for _, c := range cases {
		for _, tt := range rows {
			t.Run(c.name+"/"+tt.Name, func(t *testing.T) {
				req := c.req(tt)
				req.MaxOutputTokens = tt.Cap
				n := len(fake.Requests())
				if _, err := a.Do(context.Background(), req); err != nil {
					t.Fatalf("Do: %v", err)
				}
				want := tt.Want
				if c.want != nil {
					want = c.want(tt)
				}
				providertest.CheckLimit(t, "sent", fake.Requests()[n].Body, c.path, want)
			})
		}
	}
}
