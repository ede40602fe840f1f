package openai

import (
	"net/http"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// echoes is the classification step table (docs/ARCHITECTURE.md,
// "Classification"): OpenAI's, Azure's and the OpenAI-compatible
// servers' error answers, with providertest.Mark where they quote the
// client's input.
var echoes = []providertest.Echo{
	// Quoted input: whatever it says, a client error.
	{Name: "unrecognized argument", Status: 400, Body: `{"error":{"message":"Unrecognized request argument supplied: ` + providertest.Mark +
		`","type":"invalid_request_error","param":null,"code":null}}`, Kind: outcome.ClientError},
	{Name: "invalid role", Status: 400, Body: `{"error":{"message":"Invalid value: '` + providertest.Mark +
		`'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.","type":"invalid_request_error","param":"messages[0].role","code":"invalid_value"}}`,
		Kind: outcome.ClientError},
	{Name: "previous response not found", Status: 404, Body: `{"error":{"message":"Previous response with id '` + providertest.Mark +
		`' not found.","type":"invalid_request_error","param":"previous_response_id","code":"previous_response_not_found"}}`,
		Kind: outcome.ClientError},
	{Name: "no such file", Status: 404, Body: `{"error":{"message":"No such File object: ` + providertest.Mark +
		`","type":"invalid_request_error","param":"id","code":null}}`, Kind: outcome.ClientError},
	{Name: "vllm extra field", Status: 400, Body: `{"object":"error","message":"[{'type': 'extra_forbidden', 'loc': ('body', '` + providertest.Mark +
		`'), 'msg': 'Extra inputs are not permitted'}]","type":"BadRequestError","param":null,"code":400}`, Kind: outcome.ClientError},
	{Name: "stream error event", Status: 0, Body: `{"error":{"message":"Invalid 'tools[0].function.name': string does not match pattern. Received '` +
		providertest.Mark + `'.","type":"invalid_request_error","param":"tools[0].function.name","code":"invalid_value"}}`, Kind: outcome.ClientError},

	// Words only about the target's model: suspected.
	{Name: "ollama model missing", Status: 404, Body: `{"error":{"message":"model \"llama3\" not found, try pulling it first","type":"not_found_error","param":null,"code":null}}`,
		Kind: outcome.ClientError, Suspect: outcome.TargetMissing},
	{Name: "vllm model missing", Status: 404, Body: `{"object":"error","message":"The model ` + "`llama-3-8b`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
		Kind: outcome.ClientError, Suspect: outcome.TargetMissing},

	// Codes decide.
	{Name: "model_not_found", Status: 404, Body: `{"error":{"message":"The model 'gpt-5x' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
		Kind: outcome.TargetMissing},
	{Name: "azure deployment", Status: 404, Body: `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`,
		Kind: outcome.TargetMissing},
	{Name: "insufficient quota", Status: 429, Body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		Kind: outcome.Quota},
	{Name: "azure day-long wait", Status: 429, Body: `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 86400 seconds."}}`,
		Kind: outcome.Quota},
	{Name: "rate limited", Status: 429, Body: `{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 6.596s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
		Kind: outcome.RateLimited},
	{Name: "bad key", Status: 401, Body: `{"error":{"message":"Incorrect API key provided: sk-****. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
		Kind: outcome.Auth},
	{Name: "overloaded", Status: 503, Body: `{"error":{"message":"That model is currently overloaded with other requests.","type":"server_error","param":null,"code":"server_is_overloaded"}}`,
		Kind: outcome.Overloaded},
	{Name: "wrong endpoint", Status: 404, Body: "404 page not found\n", Kind: outcome.ServerError},
}

func classifyAt(status int, h http.Header, body []byte) *outcome.Error {
	return ClassifyError(status, h, body, testNow)
}

func TestClassifyEchoes(t *testing.T) { providertest.CheckEchoes(t, echoes, classifyAt) }
