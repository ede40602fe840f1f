package openai

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// TestDoCapsOutputLimit: the body passed through carries the target's cap
// in place of a larger limit, in whichever field the op's client used
// (docs/ARCHITECTURE.md, "Output limits"); every other byte is the
// client's.
func TestDoCapsOutputLimit(t *testing.T) {
	ops := []struct {
		name   string
		op     provider.Op
		prefix string // the body up to the limit
		field  string
		answer string
	}{
		{"chat max_tokens", provider.OpChat, `{"model":"alias","messages":[{"role":"user","content":"hi"}]`, "max_tokens", chatAnswer},
		{"chat max_completion_tokens", provider.OpChat, `{"model":"alias","messages":[{"role":"user","content":"hi"}]`, "max_completion_tokens", chatAnswer},
		{"completions", provider.OpCompletions, `{"model":"alias","prompt":"p"`, "max_tokens", completionAnswer},
		{"responses", provider.OpResponses, `{"model":"alias","input":"hi"`, "max_output_tokens", responsesAnswer},
	}
	for _, o := range ops {
		for _, tt := range providertest.OutputLimits {
			t.Run(o.name+"/"+tt.Name, func(t *testing.T) {
				up := providertest.NewUpstream(t, providertest.Reply(http.StatusOK, map[string]string{"Content-Type": "application/json"}, o.answer))
				a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk-test", Config{})
				body := o.prefix
				if tt.Limit != 0 {
					body += `,"` + o.field + `":` + strconv.FormatInt(tt.Limit, 10)
				}
				body += `,"temperature":0.5}`
				req := request(o.op, body, "gpt-4o", false)
				req.MaxOutputTokens = tt.Cap
				if _, err := a.Do(context.Background(), req); err != nil {
					t.Fatalf("Do: %v", err)
				}
				sent := up.Only(t).Body
				providertest.CheckLimit(t, "sent", sent, o.field, tt.Want)
				want := withModel(body, "gpt-4o")
				if tt.Want != tt.Limit {
					want = withModel(o.prefix+`,"`+o.field+`":`+strconv.FormatInt(tt.Want, 10)+`,"temperature":0.5}`, "gpt-4o")
				}
				if string(sent) != want {
					t.Errorf("sent  %s\nwant %s", sent, want)
				}
			})
		}
	}
}
