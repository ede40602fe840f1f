package bedrock

import (
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

const (
	llama  = "meta.llama3-1-70b-instruct-v1:0"
	claude = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

// TestClassifyError: AWS's codes and words into the router's kinds.
func TestClassifyError(t *testing.T) {
	for _, tt := range []struct {
		status     int
		code, body string
		want       outcome.Kind
	}{
		{429, "ThrottlingException", `{"message":"Too many requests, please wait before trying again."}`, outcome.RateLimited},
		{429, "", `{}`, outcome.RateLimited},
		{429, "ModelNotReadyException", `{"message":"Model is not ready"}`, outcome.Overloaded},
		{503, "ServiceUnavailableException", `{"message":"Bedrock is unable to process your request."}`, outcome.Overloaded},
		{500, "InternalServerException", `{}`, outcome.ServerError},
		{424, "ModelErrorException", `{"message":"The model returned an error"}`, outcome.ServerError},
		{408, "ModelTimeoutException", `{}`, outcome.ServerError},
		{400, "ValidationException", `{"message":"messages.0.content: field required"}`, outcome.ClientError},
		{400, "ValidationException", `{"message":"The provided model identifier is invalid."}`, outcome.ClientError},
		{400, "ValidationException", `{"message":"Invocation of model ID anthropic.claude-3-7-sonnet-20250219-v1:0 with on-demand throughput isn’t supported."}`, outcome.ClientError},
		{404, "ResourceNotFoundException", `{"message":"Model not found."}`, outcome.ClientError},
		{400, "ValidationException", `{"message":"Input is too long for requested model."}`, outcome.ContextExceeded},
		{400, "ValidationException", `{"message":"The model returned the following errors: prompt is too long: 215000 tokens > 200000 maximum"}`, outcome.ContextExceeded},
		{400, "ValidationException", `{"message":"The model returned the following errors: messages.0: Input is too long for requested model."}`, outcome.ClientError},
		{403, "AccessDeniedException", `{"message":"You don't have access to the model with the specified model ID."}`, outcome.TargetMissing},
		{403, "AccessDeniedException", `{"message":"User: arn:aws:sts::1:assumed-role/r is not authorized to perform: bedrock:InvokeModel"}`, outcome.Auth},
		{403, "UnrecognizedClientException", `{"message":"The security token included in the request is invalid."}`, outcome.Auth},
		{403, "ExpiredTokenException", `{"message":"The security token included in the request is expired"}`, outcome.Auth},
		{403, "", `{"__type":"com.amazon.coral.service#InvalidSignatureException","message":"…"}`, outcome.Auth},
		{400, "ServiceQuotaExceededException", `{"message":"Your request exceeded the service quota for your account."}`, outcome.Quota},
		{404, "UnknownOperationException", ``, outcome.ServerError},
		{502, "", `<html>bad gateway</html>`, outcome.ServerError},
	} {
		h := make(map[string][]string)
		if tt.code != "" {
			h["X-Amzn-Errortype"] = []string{tt.code + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}
		}
		e := ClassifyError(tt.status, h, []byte(tt.body), testNow)
		if e.Kind != tt.want {
			t.Errorf("%d %s %s: got %s, want %s", tt.status, tt.code, tt.body, e.Kind, tt.want)
		}
		providertest.CheckClassified(t, tt.code, e, 24*time.Hour)
	}
}

// TestNew: Build's checks, and no I/O (a profile that does not exist is
// found out on first use, not here).
func TestNew(t *testing.T) {
	isolateAWS(t)
	if _, err := New(provider.Config{Name: "p"}, Config{Region: "eu-central-1", Profile: "nobody"}, nil); err != nil {
		t.Errorf("minimal: %v", err)
	}
	_, err := New(provider.Config{Name: "p", APIKeyEnv: "K", BaseURL: "https://vpce.example/v1"}, Config{Region: "Europe", ControlPlaneURL: "ftp://x"}, nil)
	for _, want := range []string{"api_key_env: bedrock takes no API key", "bedrock.region: \"Europe\"", "bedrock.control_plane_url:", "base_url: "} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to hold %q", err, want)
		}
	}
	if _, err := New(provider.Config{Name: "p"}, Config{}, nil); err == nil || !strings.Contains(err.Error(), "bedrock.region: required") {
		t.Errorf("no region: got %v", err)
	}
}

// TestSupportsModel: the Messages API natively for Anthropic models only.
func TestSupportsModel(t *testing.T) {
	a := &Adapter{}
	for _, tt := range []struct {
		op    provider.Op
		model string
		want  bool
	}{
		{provider.OpMessages, claude, true},
		{provider.OpMessages, "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0", true},
		{provider.OpMessages, llama, false},
		{provider.OpChat, llama, true},
		{provider.OpEmbeddings, llama, false},
	} {
		if got := provider.Serves(a, tt.op, tt.model); got != tt.want {
			t.Errorf("Serves(%s, %s): got %v", tt.op, tt.model, got)
		}
	}
	if got := modelPath("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.x-v1:0", "invoke"); got !=
		"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.anthropic.x-v1%3A0/invoke" {
		t.Errorf("modelPath: got %s", got)
	}
}
