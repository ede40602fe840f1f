package anthropic

import (
	"strconv"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

func TestInvokeBody(t *testing.T) {
	tests := []struct {
		name, body, version, beta string
		keepStream                bool
		want                      string
	}{
		{"model and stream out, version in", `{"model":"claude-x","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			"bedrock-2023-05-31", "", false,
			`{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{"betas split, values byte for byte", `{"model":"m", "system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}] ,"x":1.50}`,
			"bedrock-2023-05-31", "context-1m-2025-08-07, interleaved-thinking-2025-05-14,", false,
			`{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["context-1m-2025-08-07","interleaved-thinking-2025-05-14"],"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"x":1.50}`},
		{"stream kept for vertex", `{"model":"m","stream":true}`, "vertex-2023-10-16", "", true,
			`{"anthropic_version":"vertex-2023-10-16","stream":true}`},
		{"the client's own fields win", `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["a"],"model":"m"}`, "other", "b", false,
			`{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["a"]}`},
		{"only a model", `{"model":"m"}`, "v", "", false, `{"anthropic_version":"v"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InvokeBody([]byte(tt.body), tt.version, tt.beta, tt.keepStream, 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if _, err := InvokeBody([]byte(`[1]`), "v", "", false, 0); outcome.KindOf(err) != outcome.ClientError {
		t.Errorf("an array: got %v, want a client error", err)
	}
}

// TestInvokeBodyCapsMaxTokens: a max_tokens above the cap is written as
// the cap, in its place; at or under it, or without a cap, byte for byte.
func TestInvokeBodyCapsMaxTokens(t *testing.T) {
	for _, tt := range providertest.OutputLimits {
		t.Run(tt.Name, func(t *testing.T) {
			limit := func(n int64) string {
				if n == 0 {
					return ""
				}
				return `"max_tokens":` + strconv.FormatInt(n, 10) + `,`
			}
			got, err := InvokeBody([]byte(`{"model":"m",`+limit(tt.Limit)+`"messages":[]}`), "v", "", false, tt.Cap)
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"anthropic_version":"v",` + limit(tt.Want) + `"messages":[]}`; string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
