package anthropic

import (
	"net/http"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// echoes is the classification step table (docs/ARCHITECTURE.md,
// "Classification"): Anthropic's error answers as it sends them, with
// providertest.Mark where it quotes the client's input. The vertex
// adapter reads Claude's errors with the same table.
var echoes = []providertest.Echo{
	// Quoted input: whatever it says, a client error.
	{Name: "unknown beta", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"Unexpected value(s) ` +
		"`" + providertest.Mark + "`" + ` for the ` + "`anthropic-beta`" + ` header. Please consult our documentation at docs.anthropic.com or try again without the header."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
		Kind: outcome.ClientError},
	{Name: "unknown block tag", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.0: Input tag '` +
		providertest.Mark + `' found using 'type' does not match any of the expected tags: 'document', 'image', 'redacted_thinking', 'search_result', 'server_tool_use', 'text', 'thinking', 'tool_result', 'tool_use', 'web_search_tool_result'"}}`,
		Kind: outcome.ClientError},
	{Name: "extra field", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"` + providertest.Mark + `: Extra inputs are not permitted"}}`,
		Kind: outcome.ClientError},
	{Name: "unknown tool reference", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: unexpected ` +
		"`tool_use_id`" + ` found in ` + "`tool_result`" + ` blocks: ` + providertest.Mark + `. Each ` + "`tool_result`" + ` block must have a corresponding ` + "`tool_use`" + ` block in the previous message."}}`,
		Kind: outcome.ClientError},
	{Name: "file not found", Status: 404, Body: `{"type":"error","error":{"type":"not_found_error","message":"File not found: ` + providertest.Mark + `"}}`,
		Kind: outcome.ClientError},

	// Anthropic's own words, suspected until the router's own request
	// says the same.
	{Name: "credit balance", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
		Kind: outcome.ClientError, Suspect: outcome.Quota},
	{Name: "usage limits", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-09-01 at 00:00 UTC."}}`,
		Kind: outcome.ClientError, Suspect: outcome.Quota},
	{Name: "unknown model", Status: 404, Body: `{"type":"error","error":{"type":"not_found_error","message":"model: claude-3-sonnet-20240229"}}`,
		Kind: outcome.ClientError, Suspect: outcome.TargetMissing},

	// Structured: believed at once.
	{Name: "billing error", Status: 402, Body: `{"type":"error","error":{"type":"billing_error","message":"` + providertest.Mark + `"}}`, Kind: outcome.Quota},
	{Name: "spend limit code", Status: 429, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your spend limit.","details":{"error_code":"enforced_spend_limit_reached"}}}`,
		Kind: outcome.Quota},
	{Name: "rate limited", Status: 429, Header: map[string]string{"Retry-After": "7"},
		Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, Kind: outcome.RateLimited},
	{Name: "bad key", Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, Kind: outcome.Auth},
	{Name: "permission", Status: 403, Body: `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`, Kind: outcome.Auth},
	{Name: "overloaded", Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Kind: outcome.Overloaded},
	{Name: "api error", Status: 500, Body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, Kind: outcome.ServerError},
	{Name: "too large page", Status: 413, Body: "<html><body><h1>413 Request Entity Too Large</h1></body></html>", Kind: outcome.ClientError},
}

func classifyAt(status int, h http.Header, body []byte) *outcome.Error {
	return ClassifyError(status, h, body, fuzzNow)
}

func TestClassifyEchoes(t *testing.T) { providertest.CheckEchoes(t, echoes, classifyAt) }

// TestEventErrorSuspects: an error event in a stream quoting input is a
// client error too, and Anthropic's own quota words only a suspicion.
func TestEventErrorSuspects(t *testing.T) {
	for _, tt := range []struct {
		body          string
		kind, suspect outcome.Kind
	}{
		{`{"type":"invalid_request_error","message":"Unexpected value(s) ` + "`credit balance`" + ` for the ` + "`anthropic-beta`" + ` header."}`,
			outcome.ClientError, outcome.Quota},
		{`{"type":"billing_error","message":"pay up"}`, outcome.Quota, outcome.OK},
		{`{"type":"not_found_error","message":"model: claude-x"}`, outcome.ClientError, outcome.TargetMissing},
	} {
		e := eventError(gjson.Parse(tt.body))
		if e.Kind != tt.kind || e.Suspect != tt.suspect {
			t.Errorf("eventError(%s) = %v suspect %v, want %v %v", tt.body, e.Kind, e.Suspect, tt.kind, tt.suspect)
		}
	}
}
