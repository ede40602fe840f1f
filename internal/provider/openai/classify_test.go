package openai

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

func TestClassifyError(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes of two-byte runes
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		wantKind   outcome.Kind
		wantSusp   outcome.Kind // Suspect
		wantStatus int
		wantType   string
		wantCode   string
		wantParam  string
		wantMsg    string // exact unless wantPrefix
		wantPrefix bool
		wantWait   time.Duration
	}{
		// 429: rate limits and quotas.
		{name: "openai tpm, wait from message", status: 429,
			body:     `{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 6.596s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			wantKind: outcome.RateLimited, wantStatus: 429, wantType: "tokens", wantCode: "rate_limit_exceeded",
			wantMsg: "Rate limit reached for gpt-4o", wantPrefix: true, wantWait: 6596 * time.Millisecond},
		{name: "header beats message", status: 429, header: map[string]string{"Retry-After": "2"},
			body:     `{"error":{"message":"Please try again in 20s.","type":"requests","code":"rate_limit_exceeded"}}`,
			wantKind: outcome.RateLimited, wantStatus: 429, wantType: "requests", wantCode: "rate_limit_exceeded",
			wantMsg: "Please try again in 20s.", wantWait: 2 * time.Second},
		{name: "retry-after-ms", status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"},
			body:     `{"error":{"message":"busy","type":"rate_limit_error","code":"slow_down"}}`,
			wantKind: outcome.RateLimited, wantStatus: 429, wantType: "rate_limit_error", wantCode: "slow_down",
			wantMsg: "busy", wantWait: 1500 * time.Millisecond},
		{name: "retry-after http date", status: 429, header: map[string]string{"Retry-After": "Wed, 21 Oct 2026 07:29:00 GMT"},
			body:     "",
			wantKind: outcome.RateLimited, wantStatus: 429, wantWait: time.Minute},
		{name: "insufficient_quota", status: 429,
			body:     `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			wantKind: outcome.Quota, wantStatus: 429, wantType: "insufficient_quota", wantCode: "insufficient_quota",
			wantMsg: "You exceeded your current quota, please check your plan and billing details."},
		{name: "quota type, null code", status: 429,
			body:     `{"error":{"message":"quota","type":"insufficient_quota","param":null,"code":null}}`,
			wantKind: outcome.Quota, wantStatus: 429, wantType: "insufficient_quota", wantMsg: "quota"},
		{name: "billing code", status: 429,
			body:     `{"error":{"message":"Your credit balance is exhausted.","type":"insufficient_quota","code":"credit_balance_exhausted"}}`,
			wantKind: outcome.Quota, wantStatus: 429, wantType: "insufficient_quota", wantCode: "credit_balance_exhausted",
			wantMsg: "Your credit balance is exhausted."},
		{name: "spend limit", status: 429,
			body:     `{"error":{"message":"Project spend limit reached.","type":"requests","code":"project_spend_limit_exceeded"}}`,
			wantKind: outcome.Quota, wantStatus: 429, wantType: "requests", wantCode: "project_spend_limit_exceeded",
			wantMsg: "Project spend limit reached."},
		{name: "billing hard limit on 400", status: 400,
			body:     `{"error":{"message":"Billing hard limit has been reached","type":"invalid_request_error","code":"billing_hard_limit_reached"}}`,
			wantKind: outcome.Quota, wantStatus: 400, wantType: "invalid_request_error", wantCode: "billing_hard_limit_reached",
			wantMsg: "Billing hard limit has been reached"},
		{name: "azure short wait", status: 429,
			body:     `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`,
			wantKind: outcome.RateLimited, wantStatus: 429, wantCode: "429",
			wantMsg: "Requests to the ChatCompletions_Create", wantPrefix: true, wantWait: 6 * time.Second},
		{name: "azure day block is quota", status: 429,
			body:     `{"error":{"code":"429","message":"... Please retry after 86400 seconds."}}`,
			wantKind: outcome.Quota, wantStatus: 429, wantCode: "429", wantMsg: "... Please retry after 86400 seconds.",
			wantWait: 24 * time.Hour},
		{name: "long retry-after header is quota", status: 429, header: map[string]string{"Retry-After": "7200"},
			body:     `{"error":{"code":"429","message":"Rate limit is exceeded."}}`,
			wantKind: outcome.Quota, wantStatus: 429, wantCode: "429", wantMsg: "Rate limit is exceeded.", wantWait: 2 * time.Hour},
		{name: "one hour exactly stays rate limited", status: 429, header: map[string]string{"Retry-After": "3600"},
			body:     "",
			wantKind: outcome.RateLimited, wantStatus: 429, wantWait: time.Hour},
		{name: "azure reset-tokens only", status: 429,
			header:   map[string]string{"X-Rate-Limit-Reset-Tokens": "55", "Policy-Id": "DeploymentRatelimit-Token"},
			body:     `{"error":{"code":"429","message":"Rate limit is exceeded."}}`,
			wantKind: outcome.RateLimited, wantStatus: 429, wantCode: "429", wantMsg: "Rate limit is exceeded.", wantWait: 55 * time.Second},
		{name: "request too large stays rate limited", status: 429,
			body:     `{"error":{"message":"Request too large for gpt-4 in organization org-x on tokens per min (TPM): Limit 30000, Requested 61337. The input or output tokens must be reduced in order to run successfully.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			wantKind: outcome.RateLimited, wantStatus: 429, wantType: "tokens", wantCode: "rate_limit_exceeded",
			wantMsg: "Request too large for gpt-4", wantPrefix: true},
		{name: "wrapped in an array", status: 429,
			body:     `[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`,
			wantKind: outcome.RateLimited, wantStatus: 429, wantType: "RESOURCE_EXHAUSTED", wantCode: "429",
			wantMsg: "Resource has been exhausted (e.g. check quota)."},

		// 404: a missing target versus a wrong endpoint versus the client's request.
		{name: "model_not_found", status: 404,
			body:     `{"error":{"message":"The model 'gpt-5x' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			wantKind: outcome.TargetMissing, wantStatus: 404, wantType: "invalid_request_error", wantCode: "model_not_found",
			wantMsg: "The model 'gpt-5x' does not exist or you do not have access to it."},
		{name: "openai model missing by message only", status: 404,
			body:     `{"error":{"message":"The model ` + "`gpt-4o-mini-2099`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":null}}`,
			wantKind: outcome.ClientError, wantSusp: outcome.TargetMissing, wantStatus: 404, wantType: "invalid_request_error",
			wantMsg: "The model `gpt-4o-mini-2099` does not exist or you do not have access to it."},
		{name: "azure DeploymentNotFound", status: 404,
			body:     `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`,
			wantKind: outcome.TargetMissing, wantStatus: 404, wantCode: "DeploymentNotFound",
			wantMsg: "The API deployment for this resource does not exist.", wantPrefix: true},
		{name: "azure model_not_found", status: 404,
			body:     `{"error":{"code":"model_not_found","message":"The model ` + "`gpt-4o`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null}}`,
			wantKind: outcome.TargetMissing, wantStatus: 404, wantType: "invalid_request_error", wantCode: "model_not_found",
			wantMsg: "The model `gpt-4o` does not exist or you do not have access to it."},
		{name: "ollama model missing", status: 404,
			body:     `{"error":{"message":"model \"llama3\" not found, try pulling it first","type":"not_found_error","param":null,"code":null}}`,
			wantKind: outcome.ClientError, wantSusp: outcome.TargetMissing, wantStatus: 404, wantType: "not_found_error",
			wantMsg: `model "llama3" not found, try pulling it first`},
		{name: "ollama native model missing", status: 404, body: `{"error":"model 'llama3' not found"}`,
			wantKind: outcome.ClientError, wantSusp: outcome.TargetMissing, wantStatus: 404, wantMsg: "model 'llama3' not found"},
		{name: "vllm model missing", status: 404,
			body:     `{"error":{"message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}}`,
			wantKind: outcome.ClientError, wantSusp: outcome.TargetMissing, wantStatus: 404, wantType: "NotFoundError", wantCode: "404",
			wantMsg: "The model `x` does not exist."},
		{name: "vllm flat model missing", status: 404,
			body:     `{"object":"error","message":"The model ` + "`llama-3-8b`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
			wantKind: outcome.ClientError, wantSusp: outcome.TargetMissing, wantStatus: 404, wantType: "NotFoundError", wantCode: "404",
			wantMsg: "The model `llama-3-8b` does not exist."},
		{name: "llama.cpp unknown route", status: 404,
			body:     `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`,
			wantKind: outcome.ServerError, wantStatus: 404, wantType: "not_found_error", wantCode: "404",
			wantMsg: "provider endpoint not found (check base_url): File Not Found"},
		{name: "model missing without an error status", status: 0,
			body:     `{"error":{"message":"The model 'gpt-5x' does not exist","type":"invalid_request_error","code":"model_not_found"}}`,
			wantKind: outcome.TargetMissing, wantType: "invalid_request_error", wantCode: "model_not_found",
			wantMsg: "The model 'gpt-5x' does not exist"},
		{name: "plain 404 is a wrong base_url", status: 404, body: "404 page not found\n",
			wantKind: outcome.ServerError, wantStatus: 404,
			wantMsg: "provider endpoint not found (check base_url): 404 page not found"},
		{name: "fastapi 404", status: 404, body: `{"detail":"Not Found"}`,
			wantKind: outcome.ServerError, wantStatus: 404,
			wantMsg: "provider endpoint not found (check base_url): Not Found"},
		{name: "openai invalid url", status: 404,
			body:     `{"error":{"message":"Invalid URL (POST /chat/completions)","type":"invalid_request_error","param":null,"code":null}}`,
			wantKind: outcome.ServerError, wantStatus: 404, wantType: "invalid_request_error",
			wantMsg: "provider endpoint not found (check base_url): Invalid URL (POST /chat/completions)"},
		{name: "other structured 404 is the client's", status: 404,
			body:     `{"error":{"message":"No file with id file-abc","type":"invalid_request_error","param":"file_id","code":"file_not_found"}}`,
			wantKind: outcome.ClientError, wantStatus: 404, wantType: "invalid_request_error", wantCode: "file_not_found",
			wantParam: "file_id", wantMsg: "No file with id file-abc"},

		// Other 4xx.
		{name: "context length", status: 400,
			body:     `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			wantKind: outcome.ContextExceeded, wantStatus: 400, wantType: "invalid_request_error", wantCode: "context_length_exceeded",
			wantParam: "messages", wantMsg: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens."},
		{name: "vllm context length (no code)", status: 400,
			body:     `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
			wantKind: outcome.ContextExceeded, wantStatus: 400, wantType: "BadRequestError", wantCode: "400",
			wantMsg: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."},
		{name: "llama.cpp context size", status: 400,
			body:     `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`,
			wantKind: outcome.ContextExceeded, wantStatus: 400, wantType: "exceed_context_size_error", wantCode: "400",
			wantMsg: "the request exceeds the available context size, try increasing it"},
		{name: "azure content filter", status: 400,
			body:     `{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}`,
			wantKind: outcome.ClientError, wantStatus: 400, wantCode: "content_filter", wantParam: "prompt",
			wantMsg: "The response was filtered"},
		{name: "vllm flat", status: 400,
			body:     `{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","param":null,"code":400}`,
			wantKind: outcome.ClientError, wantStatus: 400, wantType: "BadRequestError", wantCode: "400",
			wantMsg: "max_tokens must be at least 1"},
		{name: "vllm nested integer code", status: 400,
			body:     `{"error":{"message":"bad","type":"BadRequestError","param":null,"code":400}}`,
			wantKind: outcome.ClientError, wantStatus: 400, wantType: "BadRequestError", wantCode: "400", wantMsg: "bad"},
		{name: "413 html", status: 413, body: "\n<html><head><title>413 Request Entity Too Large</title></head></html>\n",
			wantKind: outcome.ClientError, wantStatus: 413, wantMsg: "<html><head><title>413 Request Entity Too Large</title></head></html>"},
		{name: "422", status: 422, body: `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`,
			wantKind: outcome.ClientError, wantStatus: 422,
			wantMsg: `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`},
		{name: "401", status: 401,
			body:     `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			wantKind: outcome.Auth, wantStatus: 401, wantType: "invalid_request_error", wantCode: "invalid_api_key",
			wantMsg: "Incorrect API key provided."},
		{name: "403 geo", status: 403,
			body:     `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`,
			wantKind: outcome.Auth, wantStatus: 403, wantType: "request_forbidden", wantCode: "unsupported_country_region_territory",
			wantMsg: "Country, region, or territory not supported"},
		{name: "408", status: 408, body: "", wantKind: outcome.Timeout, wantStatus: 408},
		{name: "409", status: 409, body: "", wantKind: outcome.Overloaded, wantStatus: 409},

		// 5xx.
		{name: "500", status: 500,
			body:     `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			wantKind: outcome.ServerError, wantStatus: 500, wantType: "server_error",
			wantMsg: "The server had an error while processing your request. Sorry about that!"},
		{name: "empty 502", status: 502, body: "", wantKind: outcome.ServerError, wantStatus: 502},
		{name: "openai overloaded", status: 503, header: map[string]string{"Retry-After": "1"},
			body:     `{"error":{"message":"The engine is currently overloaded, please try again later","type":"service_unavailable_error","param":null,"code":"server_is_overloaded"}}`,
			wantKind: outcome.Overloaded, wantStatus: 503, wantType: "service_unavailable_error", wantCode: "server_is_overloaded",
			wantMsg: "The engine is currently overloaded, please try again later", wantWait: time.Second},
		{name: "llama.cpp loading", status: 503,
			body:     `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`,
			wantKind: outcome.Overloaded, wantStatus: 503, wantType: "unavailable_error", wantCode: "503", wantMsg: "Loading model"},
		{name: "ollama busy on 500", status: 500,
			body:     `{"error":"server busy, please try again.  maximum pending requests exceeded"}`,
			wantKind: outcome.Overloaded, wantStatus: 500, wantMsg: "server busy, please try again.  maximum pending requests exceeded"},
		{name: "504 is the provider's gateway", status: 504, body: "upstream request timeout", wantKind: outcome.ServerError,
			wantStatus: 504, wantMsg: "upstream request timeout"},
		{name: "504 busy body stays server error", status: 504,
			body:     `{"error":{"message":"server busy","type":"unavailable_error","code":504}}`,
			wantKind: outcome.ServerError, wantStatus: 504, wantType: "unavailable_error", wantCode: "504", wantMsg: "server busy"},
		{name: "long plain text is bounded", status: 500, body: "  " + long + "  ",
			wantKind: outcome.ServerError, wantStatus: 500, wantMsg: long[:512] + "…"},
		{name: "invalid utf-8", status: 500, body: "bad \xff byte",
			wantKind: outcome.ServerError, wantStatus: 500, wantMsg: "bad \uFFFD byte"},

		// No HTTP error status: error events inside a 200 stream.
		{name: "event server_error", status: 0,
			body:     `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`,
			wantKind: outcome.ServerError, wantType: "server_error", wantMsg: "The server had an error"},
		{name: "event numeric code", status: 0,
			body:     `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`,
			wantKind: outcome.Overloaded, wantStatus: 503, wantType: "unavailable_error", wantCode: "503", wantMsg: "Loading model"},
		{name: "event azure string code", status: 0,
			body:     `{"error":{"code":"429","message":"Please retry after 3 seconds."}}`,
			wantKind: outcome.RateLimited, wantStatus: 429, wantCode: "429", wantMsg: "Please retry after 3 seconds.", wantWait: 3 * time.Second},
		{name: "event rate limit by code", status: 0,
			body:     `{"error":{"message":"Please try again in 644ms.","type":"tokens","code":"rate_limit_exceeded"}}`,
			wantKind: outcome.RateLimited, wantType: "tokens", wantCode: "rate_limit_exceeded",
			wantMsg: "Please try again in 644ms.", wantWait: 644 * time.Millisecond},
		{name: "event quota", status: 0,
			body:     `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`,
			wantKind: outcome.Quota, wantType: "insufficient_quota", wantCode: "insufficient_quota", wantMsg: "quota"},
		{name: "event invalid request", status: 0,
			body:     `{"error":{"message":"Invalid schema for function","type":"invalid_request_error","code":null}}`,
			wantKind: outcome.ClientError, wantType: "invalid_request_error", wantMsg: "Invalid schema for function"},
		{name: "event overloaded", status: 0,
			body:     `{"error":{"message":"Overloaded","type":"overloaded_error"}}`,
			wantKind: outcome.Overloaded, wantType: "overloaded_error", wantMsg: "Overloaded"},
		{name: "event unknown type", status: 0,
			body:     `{"error":{"message":"something odd"}}`,
			wantKind: outcome.ServerError, wantMsg: "something odd"},
		{name: "event plain string", status: 0, body: `{"error":"boom"}`,
			wantKind: outcome.ServerError, wantMsg: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			e := ClassifyError(tt.status, h, []byte(tt.body), testNow)
			if e.Kind != tt.wantKind || e.Suspect != tt.wantSusp {
				t.Errorf("kind = %v suspect %v, want %v %v", e.Kind, e.Suspect, tt.wantKind, tt.wantSusp)
			}
			if e.Status != tt.wantStatus {
				t.Errorf("status = %d, want %d", e.Status, tt.wantStatus)
			}
			if e.Type != tt.wantType || e.Code != tt.wantCode || e.Param != tt.wantParam {
				t.Errorf("type/code/param = %q/%q/%q, want %q/%q/%q", e.Type, e.Code, e.Param, tt.wantType, tt.wantCode, tt.wantParam)
			}
			if tt.wantPrefix && !strings.HasPrefix(e.Message, tt.wantMsg) || !tt.wantPrefix && e.Message != tt.wantMsg {
				t.Errorf("message = %q, want %q (prefix %v)", e.Message, tt.wantMsg, tt.wantPrefix)
			}
			if e.RetryAfter != tt.wantWait {
				t.Errorf("retry after = %v, want %v", e.RetryAfter, tt.wantWait)
			}
		})
	}
}

func TestClassifyErrorNilHeader(t *testing.T) {
	e := ClassifyError(429, nil, nil, time.Time{})
	if e.Kind != outcome.RateLimited || e.RetryAfter != 0 || e.Message != "" {
		t.Errorf("got %+v, want a bare rate_limited error", e)
	}
}

func TestWaitFromMessage(t *testing.T) {
	tests := []struct {
		msg  string
		want time.Duration
	}{
		{"Please try again in 6.596s. Visit https://x", 6596 * time.Millisecond},
		{"Please try again in 644ms.", 644 * time.Millisecond},
		{"Please try again in 1m30.5s", 90*time.Second + 500*time.Millisecond},
		{"please TRY AGAIN IN 2s", 2 * time.Second},
		{"Please try again in 20 seconds.", 20 * time.Second},
		{"Please retry after 6 seconds.", 6 * time.Second},
		{"Please retry after 1 second", time.Second},
		{"retry after 0.5 seconds", 500 * time.Millisecond},
		{"retry after 2 minutes", 2 * time.Minute},
		{"retry after 250 milliseconds", 250 * time.Millisecond},
		{"Please retry after 86400 seconds", 24 * time.Hour},
		{"Please retry after 999999999 seconds", 24 * time.Hour},
		{"Please try again in 100000h", 24 * time.Hour},
		{"Please try again later.", 0},
		{"try again in 5 fortnights", 0},
		{"try again in 5x", 0},
		{"", 0},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			if got := waitFromMessage(tt.msg); got != tt.want {
				t.Errorf("waitFromMessage(%q) = %v, want %v", tt.msg, got, tt.want)
			}
		})
	}
}

// TestClassifyErrorRateLimit checks that an error answer's rate-limit
// headers reach the outcome.Error, read as on a successful answer.
func TestClassifyErrorRateLimit(t *testing.T) {
	full := map[string]string{
		"X-Ratelimit-Limit-Requests": "5000", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "24ms",
		"X-Ratelimit-Limit-Tokens": "800000", "X-Ratelimit-Remaining-Tokens": "1200", "X-Ratelimit-Reset-Tokens": "6m0s",
		"Retry-After": "3",
	}
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   outcome.RateLimit
	}{
		{"openai 429", 429, full,
			`{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 5000, Used 5000, Requested 1. Please try again in 24ms.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			outcome.RateLimit{LimitRequests: 5000, RemainingRequests: 0, ResetRequests: 24 * time.Millisecond,
				LimitTokens: 800000, RemainingTokens: 1200, ResetTokens: 6 * time.Minute, RetryAfter: 3 * time.Second}},
		{"openai 503", 503, full,
			`{"error":{"message":"The engine is currently overloaded, please try again later","type":"service_unavailable_error","param":null,"code":"server_is_overloaded"}}`,
			outcome.RateLimit{LimitRequests: 5000, RemainingRequests: 0, ResetRequests: 24 * time.Millisecond,
				LimitTokens: 800000, RemainingTokens: 1200, ResetTokens: 6 * time.Minute, RetryAfter: 3 * time.Second}},
		{"azure 429, remaining only and its reset spelling", 429,
			map[string]string{"X-Ratelimit-Remaining-Requests": "79", "X-Ratelimit-Remaining-Tokens": "0", "X-Rate-Limit-Reset-Tokens": "55",
				"X-Ratelimit-Limit-Tokens": "-1", "Retry-After-Ms": "1500"},
			`{"error":{"code":"429","message":"Rate limit is exceeded."}}`,
			outcome.RateLimit{LimitRequests: -1, RemainingRequests: 79, LimitTokens: -1, RemainingTokens: -1,
				ResetTokens: 55 * time.Second, RetryAfter: 1500 * time.Millisecond}},
		{"no headers", 429, nil, `{"error":{"code":"429","message":"Rate limit is exceeded."}}`, outcome.UnknownRateLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			e := ClassifyError(tt.status, h, []byte(tt.body), testNow)
			if e.RateLimit != tt.want {
				t.Errorf("RateLimit = %+v, want %+v", e.RateLimit, tt.want)
			}
			if want := ParseRateLimit(h, testNow); e.RateLimit != want {
				t.Errorf("RateLimit = %+v, want what ParseRateLimit reads on a success: %+v", e.RateLimit, want)
			}
		})
	}
	if e := ClassifyError(429, nil, nil, testNow); e.RateLimit != (outcome.RateLimit{}) {
		t.Errorf("nil header: RateLimit = %+v, want the zero value (nothing announced)", e.RateLimit)
	}
}
