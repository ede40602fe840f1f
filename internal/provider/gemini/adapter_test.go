package gemini

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		baseURL string
		c       Config
		prefix  string // want Adapter.prefix; "" means New must fail
		errKey  string
	}{
		{"defaults", "", Config{}, "https://generativelanguage.googleapis.com/v1beta/", ""},
		{"host", "https://gemini.internal", Config{}, "https://gemini.internal/v1beta/", ""},
		{"trailing slash", "http://127.0.0.1:8080/", Config{}, "http://127.0.0.1:8080/v1beta/", ""},
		{"gateway prefix", "https://gw.example.com/acct/google-ai-studio/", Config{}, "https://gw.example.com/acct/google-ai-studio/v1beta/", ""},
		{"api version", "", Config{APIVersion: "v1alpha"}, "https://generativelanguage.googleapis.com/v1alpha/", ""},
		{"bad api version", "", Config{APIVersion: "v1beta/../x"}, "", "gemini.api_version"},
		{"api version without v", "", Config{APIVersion: "beta"}, "", "gemini.api_version"},
		{"no scheme", "generativelanguage.googleapis.com", Config{}, "", "base_url"},
		{"ftp", "ftp://example.com", Config{}, "", "base_url"},
		{"version in base", "https://generativelanguage.googleapis.com/v1beta", Config{}, "", "base_url"},
		{"models in base", "https://x.example.com/v1beta/models/gemini", Config{}, "", "base_url"},
		{"credentials", "https://user:pw@x.example.com", Config{}, "", "base_url"},
		{"query", "https://x.example.com?key=abc", Config{}, "", "base_url"},
		{"unparseable", "https://x.example.com/%zz", Config{}, "", "base_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(provider.Config{BaseURL: tt.baseURL}, "k", tt.c, nil)
			if tt.prefix == "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.errKey+":") {
					t.Fatalf("got error %v, want one naming %s", err, tt.errKey)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if a.prefix != tt.prefix {
				t.Errorf("got prefix %q, want %q", a.prefix, tt.prefix)
			}
			if a.client == nil {
				t.Error("got nil client, want provider.NewHTTPClient's")
			}
		})
	}
}

func TestSupports(t *testing.T) {
	a, err := New(provider.Config{}, "", Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for op, want := range map[provider.Op]bool{provider.OpChat: true, provider.OpEmbeddings: true, provider.OpCompletions: false} {
		if got := a.Supports(op); got != want {
			t.Errorf("Supports(%s) = %v, want %v", op, got, want)
		}
	}
}

// TestChatNonStream checks the chat.completion documents built from real
// (pretty-printed) Gemini answers.
func TestChatNonStream(t *testing.T) {
	created := `,"created":1784140200`
	tests := []struct {
		name      string
		answer    string
		model     string
		want      string
		wantUsage outcome.Usage
	}{
		{
			name: "text",
			answer: `{
  "candidates": [
    {
      "content": {
        "parts": [
          {
            "text": "Hello"
          },
          {
            "text": ", \"world\"\n"
          }
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "avgLogprobs": -0.12
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 8,
    "candidatesTokenCount": 4,
    "totalTokenCount": 40,
    "thoughtsTokenCount": 28,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}]
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "eXy7aKOzBo"
}`,
			want: `{"id":"chatcmpl-eXy7aKOzBo","object":"chat.completion"` + created + `,"model":"gemini-2.5-flash",
				"choices":[{"index":0,"message":{"role":"assistant","content":"Hello, \"world\"\n"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":8,"completion_tokens":32,"total_tokens":40,"completion_tokens_details":{"reasoning_tokens":28}}}`,
			wantUsage: outcome.Usage{PromptTokens: 8, CompletionTokens: 32, Model: "gemini-2.5-flash"},
		},
		{
			name: "function calls with a thought part",
			answer: `{"candidates":[{"content":{"parts":[
				{"text":"I should call tools.","thought":true},
				{"functionCall":{"name":"get_weather","args":{
					"city": "Oslo",
					"units": ["c"]
				}},"thoughtSignature":"CiQB0e2Kb"},
				{"functionCall":{"name":"get_time","args":{}}}],"role":"model"},
				"finishReason":"STOP","index":0}],
				"usageMetadata":{"promptTokenCount":50,"candidatesTokenCount":12,"cachedContentTokenCount":20,"totalTokenCount":62},
				"modelVersion":"gemini-2.5-pro","responseId":"r2"}`,
			want: `{"id":"chatcmpl-r2","object":"chat.completion"` + created + `,"model":"gemini-2.5-pro",
				"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
					{"id":"call_X","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\",\"units\":[\"c\"]}"}},
					{"id":"call_X","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
					"finish_reason":"tool_calls"}],
				"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62,"prompt_tokens_details":{"cached_tokens":20}}}`,
			// The model version that answered, not gemini-2.5-flash asked for.
			wantUsage: outcome.Usage{PromptTokens: 50, CompletionTokens: 12, CachedInput: 20, Model: "gemini-2.5-pro"},
		},
		{
			name: "text then a function call keeps both",
			answer: `{"candidates":[{"content":{"parts":[{"text":"Let me check."},{"functionCall":{"id":"fc-9","name":"f","args":{"a":1}}}],"role":"model"},
				"finishReason":"STOP"}],"modelVersion":"gemini-3-flash","responseId":"r3"}`,
			want: `{"id":"chatcmpl-r3","object":"chat.completion"` + created + `,"model":"gemini-3-flash",
				"choices":[{"index":0,"message":{"role":"assistant","content":"Let me check.","tool_calls":[
					{"id":"fc-9","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],
				"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			wantUsage: outcome.Usage{Model: "gemini-3-flash"},
		},
		{
			name: "max tokens, two candidates",
			answer: `{"candidates":[{"content":{"parts":[{"text":"A"}],"role":"model"},"finishReason":"MAX_TOKENS"},
				{"content":{"parts":[{"text":"B"}],"role":"model"},"finishReason":"STOP","index":1}],
				"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":2,"totalTokenCount":4},"responseId":"r4"}`,
			model: "gemini-2.5-flash",
			want: `{"id":"chatcmpl-r4","object":"chat.completion"` + created + `,"model":"gemini-2.5-flash",
				"choices":[{"index":0,"message":{"role":"assistant","content":"A"},"finish_reason":"length"},
					{"index":1,"message":{"role":"assistant","content":"B"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}`,
			wantUsage: outcome.Usage{PromptTokens: 2, CompletionTokens: 2}, // no modelVersion: no model
		},
		{
			name:   "candidate stopped for safety",
			answer: `{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}],"modelVersion":"gemini-2.5-flash","responseId":"r5"}`,
			want: `{"id":"chatcmpl-r5","object":"chat.completion"` + created + `,"model":"gemini-2.5-flash",
				"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}],
				"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			wantUsage: outcome.Usage{Model: "gemini-2.5-flash"},
		},
		{
			name:   "prompt blocked",
			answer: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r6"}`,
			want: `{"id":"chatcmpl-r6","object":"chat.completion"` + created + `,"model":"gemini-2.5-flash",
				"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}],
				"usage":{"prompt_tokens":9,"completion_tokens":0,"total_tokens":9}}`,
			wantUsage: outcome.Usage{PromptTokens: 9, Model: "gemini-2.5-flash"},
		},
		{
			name:   "recitation and other reasons",
			answer: `{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"RECITATION"},{"content":{"parts":[{"text":"y"}]},"finishReason":"MALFORMED_FUNCTION_CALL","index":1}],"modelVersion":"m","responseId":"r7"}`,
			want: `{"id":"chatcmpl-r7","object":"chat.completion"` + created + `,"model":"m",
				"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"content_filter"},
					{"index":1,"message":{"role":"assistant","content":"y"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
			wantUsage: outcome.Usage{Model: "m"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newUpstream(t, Config{}, reply(http.StatusOK, tt.answer))
			resp, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if resp.Stream != nil {
				t.Error("got a stream for a non-stream request")
			}
			providertest.SameJSON(t, "chat.completion", normalizeCallIDs(t, resp.Body), tt.want)
			if resp.Usage != tt.wantUsage {
				t.Errorf("got usage %+v, want %+v", resp.Usage, tt.wantUsage)
			}
			if resp.RateLimit != outcome.UnknownRateLimit {
				t.Errorf("got rate limit %+v, want outcome.UnknownRateLimit", resp.RateLimit)
			}
		})
	}
}

func TestChatGeneratesIDs(t *testing.T) {
	a, _ := newUpstream(t, Config{}, reply(http.StatusOK,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}]}`))
	resp, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	doc := providertest.DecodeJSON(t, resp.Body).(map[string]any)
	id, _ := doc["id"].(string)
	if !strings.HasPrefix(id, "chatcmpl-") || len(id) != len("chatcmpl-")+32 {
		t.Errorf("got id %q, want chatcmpl- and 32 hex digits", id)
	}
	if doc["model"] != "gemini-2.5-flash" {
		t.Errorf("got model %v, want the request's gemini-2.5-flash", doc["model"])
	}
	calls := doc["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)
	id0, id1 := calls[0].(map[string]any)["id"], calls[1].(map[string]any)["id"]
	if id0 == id1 {
		t.Errorf("got tool call ids %v and %v, want distinct ids", id0, id1)
	}
	normalizeCallIDs(t, resp.Body)
}

func TestModelAndVersionInPath(t *testing.T) {
	a, up := newUpstream(t, Config{APIVersion: "v1alpha"}, reply(http.StatusOK, okAnswer))
	req := chatReq(`{"messages":[{"role":"user","content":"hi"}]}`)
	req.Model = "models/gemini-2.5-pro"
	if _, err := a.Do(context.Background(), req); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if got, want := up.Only(t).Path, "/v1alpha/models/gemini-2.5-pro:generateContent"; got != want {
		t.Errorf("got path %q, want %q", got, want)
	}
}

// errorCase is one Gemini error answer and the outcome it must give.
type errorCase struct {
	name       string
	status     int
	header     map[string]string
	body       string
	kind       outcome.Kind
	retryAfter time.Duration
	code       string
}

// errorCases are real-shaped Gemini error bodies (google.rpc.Status).
var errorCases = []errorCase{
	{
		name: "429 per-minute with RetryInfo", status: 429,
		body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED",
			"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests",
			"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"10"}]},
			{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},
			{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}}`,
		kind: outcome.RateLimited, retryAfter: 47 * time.Second, code: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
	},
	{
		name: "429 fractional RetryInfo", status: 429,
		body: `{"error":{"code":429,"message":"Resource exhausted.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.5s"}]}}`,
		kind: outcome.RateLimited, retryAfter: 500 * time.Millisecond,
	},
	{
		name: "429 without RetryInfo uses Retry-After", status: 429, header: map[string]string{"Retry-After": "12"},
		body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`,
		kind: outcome.RateLimited, retryAfter: 12 * time.Second,
	},
	{
		name: "429 per-day quota waits for midnight Pacific", status: 429,
		body: `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[
			{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"},
			{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`,
		// 2026-07-15 11:30 PDT -> midnight PDT is 12h30m away.
		kind: outcome.Quota, retryAfter: 12*time.Hour + 30*time.Minute, code: "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
	},
	{
		name: "429 model with no quota on the tier", status: 429,
		body: `{"error":{"code":429,"message":"Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, model: gemini-2.5-pro","status":"RESOURCE_EXHAUSTED"}}`,
		kind: outcome.Quota,
	},
	{
		name: "400 API_KEY_INVALID", status: 400,
		body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[
			{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}},
			{"@type":"type.googleapis.com/google.rpc.LocalizedMessage","locale":"en-US","message":"API key not valid. Please pass a valid API key."}]}}`,
		kind: outcome.Auth, code: "API_KEY_INVALID",
	},
	{
		name: "400 key rejected by message only", status: 400,
		body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}`,
		kind: outcome.Auth,
	},
	{
		name: "400 context length", status: 400,
		body: `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
		kind: outcome.ContextExceeded,
	},
	{
		name: "400 invalid argument", status: 400,
		body: `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"x\": Cannot find field.","status":"INVALID_ARGUMENT"}}`,
		kind: outcome.ClientError,
	},
	{
		name: "400 failed precondition", status: 400,
		body: `{"error":{"code":400,"message":"User location is not supported for the API use.","status":"FAILED_PRECONDITION"}}`,
		kind: outcome.ClientError,
	},
	{
		name: "403 permission denied", status: 403,
		body: `{"error":{"code":403,"message":"Method doesn't allow unregistered callers.","status":"PERMISSION_DENIED"}}`,
		kind: outcome.Auth,
	},
	{
		name: "401 unauthenticated", status: 401,
		body: `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`,
		kind: outcome.Auth,
	},
	{
		name: "404 unknown model", status: 404,
		body: `{"error":{"code":404,"message":"models/gemini-9-ultra is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.","status":"NOT_FOUND"}}`,
		kind: outcome.ClientError, // suspected target_missing (the step table),
	},
	{
		name: "404 missing file", status: 404,
		body: `{"error":{"code":404,"message":"File abc123 does not exist or you do not have permission to access it.","status":"NOT_FOUND"}}`,
		kind: outcome.ClientError,
	},
	{
		name: "500 internal", status: 500,
		body: `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`,
		kind: outcome.ServerError,
	},
	{
		name: "503 unavailable", status: 503,
		body: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
		kind: outcome.Overloaded,
	},
	{
		name: "504 deadline exceeded", status: 504,
		body: `{"error":{"code":504,"message":"Deadline expired before operation could complete.","status":"DEADLINE_EXCEEDED"}}`,
		kind: outcome.ServerError,
	},
	{
		name: "504 gateway page", status: 504, body: `<html><body>504 Gateway Timeout</body></html>`,
		kind: outcome.ServerError,
	},
	{
		name: "array-wrapped 400", status: 400,
		body: `[{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"foo\": Cannot find field.","status":"INVALID_ARGUMENT",
			"details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"description":"Invalid JSON payload received."}]}]}}]`,
		kind: outcome.ClientError,
	},
	{
		name: "array-wrapped 429", status: 429,
		body: `[{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}]`,
		kind: outcome.RateLimited, retryAfter: 3 * time.Second,
	},
	{name: "garbage 502", status: 502, body: `<html><body>Bad Gateway</body></html>`, kind: outcome.ServerError},
	{name: "garbage 429 uses Retry-After", status: 429, header: map[string]string{"Retry-After": "2"}, body: `Too Many Requests`, kind: outcome.RateLimited, retryAfter: 2 * time.Second},
	{name: "empty 503", status: 503, body: ``, kind: outcome.Overloaded},
}

// TestErrorMapping classifies each Gemini error answer through Do.
func TestErrorMapping(t *testing.T) {
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newUpstream(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				reply(tt.status, tt.body)(w, r)
			})
			resp, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"hi"}]}`))
			if err == nil {
				t.Fatalf("Do succeeded with %+v, want an error", resp)
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.kind {
				t.Errorf("got kind %s, want %s (%v)", oe.Kind, tt.kind, err)
			}
			if oe.Status != tt.status {
				t.Errorf("got status %d, want %d", oe.Status, tt.status)
			}
			if oe.RetryAfter != tt.retryAfter {
				t.Errorf("got RetryAfter %v, want %v", oe.RetryAfter, tt.retryAfter)
			}
			if tt.code != "" && oe.Code != tt.code {
				t.Errorf("got code %q, want %q", oe.Code, tt.code)
			}
			if oe.Message == "" || len(oe.Message) > maxMessage+len("…") {
				t.Errorf("got message %q, want a non-empty one of at most %d bytes", oe.Message, maxMessage)
			}
			if !strings.HasPrefix(err.Error(), "calling gemini generateContent: ") {
				t.Errorf("got error %q, want it to say what was being done", err)
			}
		})
	}
}

func TestEmbeddings(t *testing.T) {
	answer := `{
  "embeddings": [
    {
      "values": [
        0.25,
        -1.5,
        3e-2
      ]
    },
    {
      "values": [1, 0, -0.125]
    }
  ]
}`
	f32 := func(vs ...float32) string {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	tests := []struct {
		name    string
		in      string
		answer  string
		wantReq string
		want    string
	}{
		{
			name:   "list of strings, floats",
			in:     `{"model":"text-embedding-3-small","input":["first","second"],"dimensions":3}`,
			answer: answer,
			wantReq: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"first"}]},"outputDimensionality":3},
				{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"second"}]},"outputDimensionality":3}]}`,
			want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,-1.5,0.03]},
				{"object":"embedding","index":1,"embedding":[1,0,-0.125]}],
				"model":"gemini-embedding-001","usage":{"prompt_tokens":0,"total_tokens":0}}`,
		},
		{
			name:    "one string, base64",
			in:      `{"model":"m","input":"only","encoding_format":"base64"}`,
			answer:  `{"embeddings":[{"values":[0.25,-1.5,0.03]}]}`,
			wantReq: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"only"}]}}]}`,
			want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"` + f32(0.25, -1.5, 0.03) + `"}],
				"model":"gemini-embedding-001","usage":{"prompt_tokens":0,"total_tokens":0}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, up := newUpstream(t, Config{}, reply(http.StatusOK, tt.answer))
			resp, err := a.Do(context.Background(), &provider.Request{Op: provider.OpEmbeddings, Model: "models/gemini-embedding-001", Body: []byte(tt.in)})
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			got := up.Only(t)
			if got.Path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" {
				t.Errorf("got path %q, want /v1beta/models/gemini-embedding-001:batchEmbedContents", got.Path)
			}
			providertest.SameJSON(t, "gemini request", got.Body, tt.wantReq)
			providertest.SameJSON(t, "embeddings answer", resp.Body, tt.want)
			if strings.ContainsAny(string(resp.Body), "\n ") {
				t.Errorf("got body %q, want compact JSON", resp.Body)
			}
		})
	}

	t.Run("count mismatch is a server error", func(t *testing.T) {
		a, _ := newUpstream(t, Config{}, reply(http.StatusOK, `{"embeddings":[{"values":[1]}]}`))
		_, err := a.Do(context.Background(), &provider.Request{Op: provider.OpEmbeddings, Model: "e", Body: []byte(`{"input":["a","b"]}`)})
		if k := outcome.KindOf(err); k != outcome.ServerError {
			t.Errorf("got kind %s, want server_error (%v)", k, err)
		}
	})
	t.Run("error answer is classified", func(t *testing.T) {
		a, _ := newUpstream(t, Config{}, reply(http.StatusBadRequest, `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`))
		_, err := a.Do(context.Background(), &provider.Request{Op: provider.OpEmbeddings, Model: "e", Body: []byte(`{"input":"a"}`)})
		if k := outcome.KindOf(err); k != outcome.Auth {
			t.Errorf("got kind %s, want auth (%v)", k, err)
		}
	})
}

func TestMalformedAnswer(t *testing.T) {
	a, _ := newUpstream(t, Config{}, reply(http.StatusOK, `{"candidates":[`))
	_, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"hi"}]}`))
	if k := outcome.KindOf(err); k != outcome.ServerError {
		t.Errorf("got kind %s, want server_error (%v)", k, err)
	}
}

// TestChatCancel cancels the attempt while Gemini is still thinking: the
// context's cause decides the kind.
func TestChatCancel(t *testing.T) {
	tests := []struct {
		name  string
		cause error
		want  outcome.Kind
	}{
		{"client went away", context.Canceled, outcome.Canceled},
		{"proxy's first-token timer", &outcome.Error{Kind: outcome.Timeout, Message: "first token timeout"}, outcome.Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			a, _ := newUpstream(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
				cancel(tt.cause) // the request is in flight: cancel it
				<-r.Context().Done()
			})
			_, err := a.Do(ctx, chatReq(`{"messages":[{"role":"user","content":"hi"}]}`))
			if k := outcome.KindOf(err); k != tt.want {
				t.Errorf("got kind %s, want %s (%v)", k, tt.want, err)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	t.Run("healthy", func(t *testing.T) {
		a, up := newUpstream(t, Config{}, reply(http.StatusOK, `{"models":[{"name":"models/embedding-gecko-001","version":"001"}],"nextPageToken":"x"}`))
		if err := a.Probe(context.Background()); err != nil {
			t.Fatalf("Probe: %v", err)
		}
		got := up.Only(t)
		if got.Method != http.MethodGet || got.Path != "/v1beta/models" || got.Query != "pageSize=1" {
			t.Errorf("got %s %s?%s, want GET /v1beta/models?pageSize=1", got.Method, got.Path, got.Query)
		}
		if k := got.Header.Get("X-Goog-Api-Key"); k != "test-key" {
			t.Errorf("got x-goog-api-key %q, want test-key", k)
		}
	})
	t.Run("invalid key", func(t *testing.T) {
		a, _ := newUpstream(t, Config{}, reply(http.StatusBadRequest, errorCases[5].body))
		err := a.Probe(context.Background())
		if k := outcome.KindOf(err); k != outcome.Auth {
			t.Errorf("got kind %s, want auth (%v)", k, err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		a, up := newUpstream(t, Config{}, reply(http.StatusOK, `{}`))
		up.Server.Close()
		err := a.Probe(context.Background())
		if k := outcome.KindOf(err); k != outcome.Network {
			t.Errorf("got kind %s, want network (%v)", k, err)
		}
	})
}
