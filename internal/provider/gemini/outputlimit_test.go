package gemini

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// TestDoCapsOutputLimit: generationConfig.maxOutputTokens carries the
// target's cap in place of a larger max_completion_tokens or max_tokens
// (docs/ARCHITECTURE.md, "Output limits"); no limit stays none.
func TestDoCapsOutputLimit(t *testing.T) {
	for _, field := range []string{"max_tokens", "max_completion_tokens"} {
		for _, tt := range providertest.OutputLimits {
			t.Run(field+"/"+tt.Name, func(t *testing.T) {
				a, up := newUpstream(t, Config{}, reply(http.StatusOK, okAnswer))
				body := `{"model":"alias","messages":[{"role":"user","content":"hi"}]`
				if tt.Limit != 0 {
					body += `,"` + field + `":` + strconv.FormatInt(tt.Limit, 10)
				}
				req := chatReq(body + `}`)
				req.MaxOutputTokens = tt.Cap
				if _, err := a.Do(context.Background(), req); err != nil {
					t.Fatalf("Do: %v", err)
				}
				providertest.CheckLimit(t, "sent", up.Only(t).Body, "generationConfig.maxOutputTokens", tt.Want)
			})
		}
	}
}
