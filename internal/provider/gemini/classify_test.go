package gemini

import (
	"net/http"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// echoes is the classification step table (docs/ARCHITECTURE.md,
// "Classification"): Google's error answers as the Gemini API sends
// them, with providertest.Mark where it quotes the client's input.
var echoes = []providertest.Echo{
	// Quoted input: whatever it says, a client error.
	{Name: "unknown field", Status: 400, Body: `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"` + providertest.Mark +
		`\" at 'generation_config': Cannot find field.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"generation_config","description":"Invalid JSON payload received. Unknown name \"` +
		providertest.Mark + `\" at 'generation_config': Cannot find field."}]}]}}`, Kind: outcome.ClientError},
	{Name: "invalid enum value", Status: 400, Body: `{"error":{"code":400,"message":"Invalid value at 'contents[0].role' (TYPE_STRING), \"` + providertest.Mark +
		`\"","status":"INVALID_ARGUMENT"}}`, Kind: outcome.ClientError},
	{Name: "missing file", Status: 404, Body: `{"error":{"code":404,"message":"File ` + providertest.Mark +
		` does not exist or you do not have permission to access it.","status":"NOT_FOUND"}}`, Kind: outcome.ClientError},
	{Name: "array-wrapped", Status: 400, Body: `[{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"` + providertest.Mark +
		`\": Cannot find field.","status":"INVALID_ARGUMENT"}}]`, Kind: outcome.ClientError},

	// Google's own words about the target's model: suspected.
	{Name: "unknown model", Status: 404, Body: `{"error":{"code":404,"message":"models/gemini-1.0-pro is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.","status":"NOT_FOUND"}}`,
		Kind: outcome.ClientError, Suspect: outcome.TargetMissing},

	// Structured or anchored: believed at once.
	{Name: "bad key", Status: 400, Body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
		Kind: outcome.Auth},
	{Name: "bad key, no details", Status: 400, Body: `{"error":{"code":400,"message":"API key expired. Please renew the API key.","status":"INVALID_ARGUMENT"}}`,
		Kind: outcome.Auth},
	{Name: "per-day quota", Status: 429, Body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`,
		Kind: outcome.Quota},
	{Name: "per-minute quota", Status: 429, Body: `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}}`,
		Kind: outcome.RateLimited},
	{Name: "permission denied", Status: 403, Body: `{"error":{"code":403,"message":"Permission denied on resource project p.","status":"PERMISSION_DENIED"}}`, Kind: outcome.Auth},
	{Name: "overloaded", Status: 503, Body: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`, Kind: outcome.Overloaded},
	{Name: "internal", Status: 500, Body: `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`, Kind: outcome.ServerError},
}

func classifyAt(status int, h http.Header, body []byte) *outcome.Error {
	return ClassifyError(status, h, body, fuzzTime(1784140200))
}

func TestClassifyEchoes(t *testing.T) { providertest.CheckEchoes(t, echoes, classifyAt) }
