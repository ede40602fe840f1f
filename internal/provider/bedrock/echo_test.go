package bedrock

import (
	"net/http"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// echoes is the classification step table (docs/ARCHITECTURE.md,
// "Classification"): Bedrock's error answers, with providertest.Mark where
// they quote the client's input.
var echoes = []providertest.Echo{
	// Quoted input: whatever it says, a client error.
	{Name: "extraneous key", Status: 400, Header: map[string]string{"X-Amzn-Errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"},
		Body: `{"message":"Malformed input request: #: extraneous key [` + providertest.Mark + `] is not permitted, please reformat your input and try again."}`,
		Kind: outcome.ClientError},
	{Name: "model's own 400", Status: 400, Header: map[string]string{"X-Amzn-Errortype": "ValidationException"},
		Body: `{"message":"The model returned the following errors: messages.0.content.0: Input tag '` + providertest.Mark +
			`' found using 'type' does not match any of the expected tags: 'document', 'image', 'text', 'tool_result', 'tool_use'"}`,
		Kind: outcome.ClientError},
	{Name: "body code", Status: 400, Body: `{"__type":"com.amazon.coral.validate#ValidationException","message":"1 validation error detected: Value '` +
		providertest.Mark + `' at 'messages.1.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]"}`,
		Kind: outcome.ClientError},

	// Bedrock's words about the target's model: suspected.
	{Name: "invalid model id", Status: 400, Header: map[string]string{"X-Amzn-Errortype": "ValidationException"},
		Body: `{"message":"The provided model identifier is invalid."}`, Kind: outcome.ClientError, Suspect: outcome.TargetMissing},
	{Name: "needs a profile", Status: 400, Header: map[string]string{"X-Amzn-Errortype": "ValidationException"},
		Body: `{"message":"Invocation of model ID anthropic.claude-3-7-sonnet-20250219-v1:0 with on-demand throughput isn’t supported. Retry your request with the ID or ARN of an inference profile that contains this model."}`,
		Kind: outcome.ClientError, Suspect: outcome.TargetMissing},
	{Name: "model not found", Status: 404, Header: map[string]string{"X-Amzn-Errortype": "ResourceNotFoundException"},
		Body: `{"message":"Model not found."}`, Kind: outcome.ClientError, Suspect: outcome.TargetMissing},

	// The code decides.
	{Name: "no model access", Status: 403, Header: map[string]string{"X-Amzn-Errortype": "AccessDeniedException"},
		Body: `{"message":"You don't have access to the model with the specified model ID."}`, Kind: outcome.TargetMissing},
	{Name: "iam denied", Status: 403, Header: map[string]string{"X-Amzn-Errortype": "AccessDeniedException"},
		Body: `{"message":"User: arn:aws:sts::1:assumed-role/r is not authorized to perform: bedrock:InvokeModel"}`, Kind: outcome.Auth},
	{Name: "quota", Status: 400, Header: map[string]string{"X-Amzn-Errortype": "ServiceQuotaExceededException"},
		Body: `{"message":"Your request exceeded the service quota for your account."}`, Kind: outcome.Quota},
	{Name: "throttled", Status: 429, Header: map[string]string{"X-Amzn-Errortype": "ThrottlingException"},
		Body: `{"message":"Too many requests, please wait before trying again."}`, Kind: outcome.RateLimited},
	{Name: "bad token", Status: 403, Body: `{"__type":"com.amazon.coral.service#UnrecognizedClientException","Message":"The security token included in the request is invalid."}`,
		Kind: outcome.Auth},
	{Name: "unavailable", Status: 503, Header: map[string]string{"X-Amzn-Errortype": "ServiceUnavailableException"},
		Body: `{"message":"Bedrock is unable to process your request."}`, Kind: outcome.Overloaded},
}

func classifyAt(status int, h http.Header, body []byte) *outcome.Error {
	return ClassifyError(status, h, body, testNow)
}

func TestClassifyEchoes(t *testing.T) { providertest.CheckEchoes(t, echoes, classifyAt) }
