package bedrock

import (
	"context"
	"strconv"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// TestDoCapsOutputLimit: the target's cap lowers the limit in each body
// Bedrock is sent (docs/ARCHITECTURE.md, "Output limits"): Converse's
// inferenceConfig.maxTokens, the Messages body's max_tokens passed through
// to InvokeModel, and the one chat is translated into for Claude (its
// default when the client set none included).
func TestDoCapsOutputLimit(t *testing.T) {
	envCredentials(t)
	limit := func(field string, n int64) string {
		if n == 0 {
			return ""
		}
		return `,"` + field + `":` + strconv.FormatInt(n, 10)
	}
	cases := []struct {
		name string
		req  func(tt providertest.OutputLimit) *provider.Request
		path string
		want func(tt providertest.OutputLimit) int64
	}{
		{"converse max_tokens", func(tt providertest.OutputLimit) *provider.Request {
			return chat(llama, `{"messages":[{"role":"user","content":"hi"}]`+limit("max_tokens", tt.Limit)+`}`, false)
		}, "inferenceConfig.maxTokens", nil},
		{"converse max_completion_tokens", func(tt providertest.OutputLimit) *provider.Request {
			return chat(llama, `{"messages":[{"role":"user","content":"hi"}]`+limit("max_completion_tokens", tt.Limit)+`}`, false)
		}, "inferenceConfig.maxTokens", nil},
		{"invoke messages", func(tt providertest.OutputLimit) *provider.Request {
			return &provider.Request{Op: provider.OpMessages, Model: claude,
				Body: []byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]` + limit("max_tokens", tt.Limit) + `}`)}
		}, "max_tokens", nil},
		{"invoke chat", func(tt providertest.OutputLimit) *provider.Request {
			return chat(claude, `{"messages":[{"role":"user","content":"hi"}]`+limit("max_tokens", tt.Limit)+`}`, false)
		}, "max_tokens", func(tt providertest.OutputLimit) int64 {
			if tt.Limit == 0 {
				return provider.CapOutput(anthropic.DefaultMaxTokens, tt.Cap) // Anthropic requires one
			}
			return tt.Want
		}},
	}
	rows := append(append([]providertest.OutputLimit(nil), providertest.OutputLimits...),
		providertest.OutputLimit{Name: "no limit, a cap under the default", Cap: 2048})
	for _, c := range cases {
		for _, tt := range rows {
			t.Run(c.name+"/"+tt.Name, func(t *testing.T) {
				a, fake := newFake(t)
				req := c.req(tt)
				req.MaxOutputTokens = tt.Cap
				if _, err := a.Do(context.Background(), req); err != nil {
					t.Fatalf("Do: %v", err)
				}
				want := tt.Want
				if c.want != nil {
					want = c.want(tt)
				}
				providertest.CheckLimit(t, "sent", fake.Requests()[0].Body, c.path, want)
			})
		}
	}
}
