package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// openAIResponse is the part of a chat.completion the tests check.
type openAIResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func TestDoNonStream(t *testing.T) {
	type call struct{ id, name, args string }
	tests := []struct {
		name        string
		answer      string
		wantContent *string
		wantCalls   []call
		wantFinish  string
		wantUsage   [4]int64 // prompt, completion, total, cached
		wantWrite   int64    // cache_creation_input_tokens: outcome.Usage.CacheWrite
	}{
		{
			name: "text with cache usage",
			answer: `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001",
				"content":[{"type":"text","text":"Hello \"there\"\n世界"}],"stop_reason":"end_turn","stop_sequence":null,
				"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":30,"output_tokens":6}}`,
			wantContent: ptr("Hello \"there\"\n世界"),
			wantFinish:  "stop",
			wantUsage:   [4]int64{142, 6, 148, 30},
			wantWrite:   100,
		},
		{
			name: "thinking skipped, text blocks joined, max_tokens is length",
			answer: `{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5",
				"content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Part one, "},{"type":"text","text":"part \"two\"."}],
				"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":9,"cache_creation_input_tokens":null}}`,
			wantContent: ptr("Part one, part \"two\"."),
			wantFinish:  "length",
			wantUsage:   [4]int64{5, 9, 14, 0},
		},
		{
			name: "tool calls with text",
			answer: `{"id":"msg_03","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001",
				"content":[{"type":"text","text":"Let me check."},
					{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Oslo","units":["c"]}},
					{"type":"tool_use","id":"toolu_02","name":"now","input":{}}],
				"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":41}}`,
			wantContent: ptr("Let me check."),
			wantCalls: []call{
				{"toolu_01", "get_weather", `{"city":"Oslo","units":["c"]}`},
				{"toolu_02", "now", `{}`},
			},
			wantFinish: "tool_calls",
			wantUsage:  [4]int64{20, 41, 61, 0},
		},
		{
			name: "tool call only: content null",
			answer: `{"id":"msg_04","type":"message","role":"assistant","model":"m",
				"content":[{"type":"tool_use","id":"toolu_09","name":"f","input":{"a":1}}],
				"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
			wantCalls:  []call{{"toolu_09", "f", `{"a":1}`}},
			wantFinish: "tool_calls",
			wantUsage:  [4]int64{1, 2, 3, 0},
		},
		{
			name: "refusal",
			answer: `{"id":"msg_05","type":"message","role":"assistant","model":"m","content":[],
				"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}`,
			wantFinish: "content_filter",
			wantUsage:  [4]int64{1, 0, 1, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Request-Id", "req_011CTest")
				w.Header().Set("Anthropic-Ratelimit-Requests-Limit", "1000")
				w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "999")
				w.Header().Set("Anthropic-Ratelimit-Requests-Reset", testNow.Add(30*time.Second).Format(time.RFC3339))
				w.Header().Set("Anthropic-Ratelimit-Tokens-Limit", "96000")
				w.Header().Set("Anthropic-Ratelimit-Tokens-Remaining", "95000")
				_, _ = io.WriteString(w, tt.answer)
			})
			resp, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if resp.Stream != nil {
				t.Fatal("got a stream, want a body")
			}
			var got openAIResponse
			if err := json.Unmarshal(resp.Body, &got); err != nil {
				t.Fatalf("body %s is not JSON: %v", resp.Body, err)
			}
			var anth struct{ ID, Model string }
			_ = json.Unmarshal([]byte(tt.answer), &anth)
			if got.ID != anth.ID || got.Object != "chat.completion" || got.Created != testNow.Unix() || got.Model != anth.Model {
				t.Errorf("got id %q object %q created %d model %q, want %q chat.completion %d %q",
					got.ID, got.Object, got.Created, got.Model, anth.ID, testNow.Unix(), anth.Model)
			}
			if len(got.Choices) != 1 {
				t.Fatalf("got %d choices, want 1", len(got.Choices))
			}
			c := got.Choices[0]
			if c.Index != 0 || c.Message.Role != "assistant" || c.FinishReason != tt.wantFinish {
				t.Errorf("got index %d role %q finish %q, want 0 assistant %q", c.Index, c.Message.Role, c.FinishReason, tt.wantFinish)
			}
			switch {
			case tt.wantContent == nil && c.Message.Content != nil:
				t.Errorf("got content %q, want null", *c.Message.Content)
			case tt.wantContent != nil && (c.Message.Content == nil || *c.Message.Content != *tt.wantContent):
				t.Errorf("got content %v, want %q", c.Message.Content, *tt.wantContent)
			}
			if len(c.Message.ToolCalls) != len(tt.wantCalls) {
				t.Fatalf("got %d tool calls, want %d", len(c.Message.ToolCalls), len(tt.wantCalls))
			}
			for i, w := range tt.wantCalls {
				g := c.Message.ToolCalls[i]
				if g.ID != w.id || g.Type != "function" || g.Function.Name != w.name {
					t.Errorf("tool call %d: got %q %q %q, want %q function %q", i, g.ID, g.Type, g.Function.Name, w.id, w.name)
				}
				providertest.SameJSON(t, "arguments", []byte(g.Function.Arguments), w.args)
			}
			u := got.Usage
			if gotU := [4]int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.PromptTokensDetails.CachedTokens}; gotU != tt.wantUsage {
				t.Errorf("got usage %v, want %v", gotU, tt.wantUsage)
			}
			if want := (outcome.Usage{PromptTokens: tt.wantUsage[0], CompletionTokens: tt.wantUsage[1],
				CachedInput: tt.wantUsage[3], CacheWrite: tt.wantWrite, Model: anth.Model}); resp.Usage != want {
				t.Errorf("got Response.Usage %+v, want %+v", resp.Usage, want)
			}
			wantRL := outcome.RateLimit{LimitRequests: 1000, RemainingRequests: 999, ResetRequests: 30 * time.Second,
				LimitTokens: 96000, RemainingTokens: 95000}
			if resp.RateLimit != wantRL {
				t.Errorf("got RateLimit %+v, want %+v", resp.RateLimit, wantRL)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestDoInvalidAnswer(t *testing.T) {
	for _, body := range []string{`{"id":"msg_01","content":`, `{"id":"msg_01"}`, `<html>ok</html>`} {
		t.Run(body, func(t *testing.T) {
			a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, body)
			})
			_, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`))
			if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.ServerError {
				t.Errorf("got kind %v, want server_error", oe.Kind)
			}
		})
	}
}

func TestDoErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		headers    map[string]string
		body       string
		wantKind   outcome.Kind
		wantType   string
		wantMsg    string
		wantRetry  time.Duration
		wantStatus int
	}{
		{"529 overloaded", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
			outcome.Overloaded, "overloaded_error", "Overloaded", 0, 529},
		{"429 with retry-after", 429, map[string]string{"Retry-After": "7"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			outcome.RateLimited, "rate_limit_error", "per-minute rate limit", 7 * time.Second, 429},
		{"429 spend limit", 429, nil,
			`{"type":"error","error":{"type":"rate_limit_error","message":"spend limit reached","details":{"error_code":"enforced_spend_limit_reached"}}}`,
			outcome.Quota, "rate_limit_error", "spend limit reached", 0, 429},
		{"401 bad key", 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			outcome.Auth, "authentication_error", "invalid x-api-key", 0, 401},
		{"403 permission", 403, nil, `{"type":"error","error":{"type":"permission_error","message":"no access"}}`,
			outcome.Auth, "permission_error", "no access", 0, 403},
		{"402 billing", 402, nil, `{"type":"error","error":{"type":"billing_error","message":"pay up"}}`,
			outcome.Quota, "billing_error", "pay up", 0, 402},
		{"400 credit balance", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`,
			outcome.ClientError, "invalid_request_error", "credit balance", 0, 400},
		{"400 credit balance, full message", 400, map[string]string{"Request-Id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
			`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
			outcome.ClientError, "invalid_request_error", "Plans & Billing", 0, 400},
		{"400 usage limits", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits."}}`,
			outcome.ClientError, "invalid_request_error", "usage limits", 0, 400},
		{"400 invalid request", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`,
			outcome.ContextExceeded, "invalid_request_error", "prompt is too long", 0, 400},
		{"413 from cloudflare", 413, nil, "\n<html><body>413 Request Entity Too Large</body></html>\n",
			outcome.ClientError, "", "<html><body>413 Request Entity Too Large</body></html>", 0, 413},
		{"413 request_too_large", 413, nil, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`,
			outcome.ClientError, "request_too_large", "maximum size", 0, 413},
		{"404 unknown model", 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
			outcome.ClientError, "not_found_error", "model: claude-nope", 0, 404},
		{"404 retired model", 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-3-sonnet-20240229"}}`,
			outcome.ClientError, "not_found_error", "model: claude-3-sonnet-20240229", 0, 404},
		{"404 other", 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"file not found"}}`,
			outcome.ClientError, "not_found_error", "file not found", 0, 404},
		{"500 api error", 500, nil, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			outcome.ServerError, "api_error", "Internal server error", 0, 500},
		{"504 timeout", 504, nil, `{"type":"error","error":{"type":"timeout_error","message":"Request timed out"}}`,
			outcome.ServerError, "timeout_error", "timed out", 0, 504},
		{"504 gateway page", 504, nil, "<html><body>504 Gateway Time-out</body></html>",
			outcome.ServerError, "", "504 Gateway Time-out", 0, 504},
		{"502 garbage", 502, nil, "upstream connect error or disconnect/reset before headers",
			outcome.ServerError, "", "upstream connect error", 0, 502},
		{"503 empty with retry-after", 503, map[string]string{"Retry-After": "2"}, "",
			outcome.Overloaded, "", "Service Unavailable", 2 * time.Second, 503},
		{"unknown type by status", 409, nil, `{"type":"error","error":{"type":"brand_new_error","message":"new"}}`,
			outcome.Overloaded, "brand_new_error", "new", 0, 409},
		{"redirect", 307, map[string]string{"Location": "https://elsewhere.example/"}, "",
			outcome.ServerError, "", "Temporary Redirect", 0, 307},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTestAdapter(t, providertest.Reply(tt.status, tt.headers, tt.body))
			a.client = provider.NewHTTPClient(provider.Config{}) // no redirects, like production
			t.Cleanup(a.client.CloseIdleConnections)
			_, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`))
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.wantKind || oe.Status != tt.wantStatus || oe.Type != tt.wantType || oe.RetryAfter != tt.wantRetry {
				t.Errorf("got kind %v status %d type %q retry %v, want %v %d %q %v",
					oe.Kind, oe.Status, oe.Type, oe.RetryAfter, tt.wantKind, tt.wantStatus, tt.wantType, tt.wantRetry)
			}
			if !strings.Contains(oe.Message, tt.wantMsg) {
				t.Errorf("got message %q, want it to contain %q", oe.Message, tt.wantMsg)
			}
		})
	}
}

func TestClassifyErrorBoundsText(t *testing.T) {
	long := make([]byte, 3000)
	for i := range long {
		long[i] = "é"[i%2]
	}
	e := ClassifyError(500, http.Header{}, long, testNow)
	if len(e.Message) > maxMessage+len("…") {
		t.Errorf("got message of %d bytes, want at most %d and the cut mark", len(e.Message), maxMessage)
	}
	if !json.Valid([]byte(`"` + e.Message + `"`)) {
		t.Errorf("got message cut inside a rune: %q", e.Message[len(e.Message)-4:])
	}
	if e.Kind != outcome.ServerError {
		t.Errorf("got kind %v, want server_error", e.Kind)
	}
}

func TestParseRateLimit(t *testing.T) {
	future := testNow.Add(90 * time.Second).Format(time.RFC3339)
	past := testNow.Add(-time.Minute).Format(time.RFC3339)
	tests := []struct {
		name string
		h    map[string]string
		want outcome.RateLimit
	}{
		{"missing", nil, outcome.UnknownRateLimit},
		{"full, combined tokens axis wins", map[string]string{
			"anthropic-ratelimit-requests-limit": "1000", "anthropic-ratelimit-requests-remaining": "999",
			"anthropic-ratelimit-requests-reset": future,
			"anthropic-ratelimit-tokens-limit":   "96000", "anthropic-ratelimit-tokens-remaining": "95000",
			"anthropic-ratelimit-tokens-reset":       testNow.Add(2 * time.Second).Format(time.RFC3339Nano),
			"anthropic-ratelimit-input-tokens-limit": "80000", "anthropic-ratelimit-input-tokens-remaining": "1",
		}, outcome.RateLimit{LimitRequests: 1000, RemainingRequests: 999, ResetRequests: 90 * time.Second,
			LimitTokens: 96000, RemainingTokens: 95000, ResetTokens: 2 * time.Second}},
		{"input tokens fallback", map[string]string{
			"anthropic-ratelimit-input-tokens-limit": "80000", "anthropic-ratelimit-input-tokens-remaining": "0",
			"anthropic-ratelimit-input-tokens-reset":  "2026-08-21T12:40:30.5Z",
			"anthropic-ratelimit-output-tokens-limit": "16000",
		}, outcome.RateLimit{LimitRequests: -1, RemainingRequests: -1, LimitTokens: 80000, RemainingTokens: 0,
			ResetTokens: 30500 * time.Millisecond}},
		{"malformed", map[string]string{
			"anthropic-ratelimit-requests-limit": "lots", "anthropic-ratelimit-requests-remaining": "",
			"anthropic-ratelimit-requests-reset": "in a minute", "anthropic-ratelimit-tokens-limit": "1e",
			"anthropic-ratelimit-tokens-reset": "2026-08-21 12:41:00",
		}, outcome.UnknownRateLimit},
		{"negative and zero limit", map[string]string{
			"anthropic-ratelimit-requests-limit": "-1", "anthropic-ratelimit-requests-remaining": "-5",
			"anthropic-ratelimit-tokens-limit": "0", "anthropic-ratelimit-tokens-remaining": "0",
		}, outcome.RateLimit{LimitRequests: -1, RemainingRequests: -1, LimitTokens: -1, RemainingTokens: 0}},
		{"past reset", map[string]string{
			"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-reset": past,
			"anthropic-ratelimit-tokens-reset": past,
		}, outcome.RateLimit{LimitRequests: 50, RemainingRequests: -1, LimitTokens: -1, RemainingTokens: -1}},
		{"retry-after", map[string]string{"retry-after": "12"},
			outcome.RateLimit{LimitRequests: -1, RemainingRequests: -1, LimitTokens: -1, RemainingTokens: -1, RetryAfter: 12 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.h {
				h.Set(k, v)
			}
			if got := ParseRateLimit(h, testNow); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDoCanceled(t *testing.T) {
	arrived := make(chan struct{})
	a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
		// Reading the whole body lets the server notice the client leaving.
		_, _ = io.Copy(io.Discard, r.Body)
		close(arrived)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Do(ctx, chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`))
		done <- err
	}()
	<-arrived
	cancel()
	err := <-done
	if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.Canceled {
		t.Errorf("got kind %v, want canceled", oe.Kind)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want it to wrap context.Canceled", err)
	}
}

func TestDoUnsupportedOp(t *testing.T) {
	a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("upstream called")
	})
	for _, op := range []provider.Op{provider.OpEmbeddings, provider.OpCompletions} {
		if a.Supports(op) {
			t.Errorf("Supports(%v) = true, want false", op)
		}
		_, err := a.Do(context.Background(), &provider.Request{Op: op, Body: []byte(`{}`)})
		if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.ClientError {
			t.Errorf("%v: got kind %v, want client_error", op, oe.Kind)
		}
	}
	if !a.Supports(provider.OpChat) {
		t.Error("Supports(chat) = false, want true")
	}
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantKind outcome.Kind
	}{
		{"healthy", 200, `{"data":[{"type":"model","id":"claude-haiku-4-5","display_name":"Claude Haiku 4.5"}],"has_more":true}`, outcome.OK},
		{"bad key", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, outcome.Auth},
		{"overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, outcome.Overloaded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/v1/models" || r.URL.Query().Get("limit") != "1" {
					t.Errorf("got %s %s, want GET /v1/models?limit=1", r.Method, r.URL)
				}
				if r.Header.Get("X-Api-Key") != "sk-ant-test" || r.Header.Get("Anthropic-Version") != DefaultVersion {
					t.Errorf("got headers %v, want x-api-key and anthropic-version", r.Header)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			if got := outcome.KindOf(a.Probe(context.Background())); got != tt.wantKind {
				t.Errorf("got %v, want %v", got, tt.wantKind)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		a, srv := newTestAdapter(t, func(http.ResponseWriter, *http.Request) {})
		srv.Close()
		if got := outcome.KindOf(a.Probe(context.Background())); got != outcome.Network {
			t.Errorf("got %v, want network", got)
		}
	})
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		p       provider.Config
		c       Config
		wantErr string // substring naming the key; "" means valid
		wantURL string
	}{
		{"defaults", provider.Config{}, Config{}, "", "https://api.anthropic.com/v1/messages"},
		{"host with slash", provider.Config{BaseURL: "https://gw.example:8443/"}, Config{Version: "2023-06-01", DefaultMaxTokens: 10},
			"", "https://gw.example:8443/v1/messages"},
		{"path", provider.Config{BaseURL: "https://api.anthropic.com/v1"}, Config{}, "base_url", ""},
		{"scheme", provider.Config{BaseURL: "ftp://api.anthropic.com"}, Config{}, "base_url", ""},
		{"no host", provider.Config{BaseURL: "https://"}, Config{}, "base_url", ""},
		{"unparseable", provider.Config{BaseURL: "http://[::1"}, Config{}, "base_url", ""},
		{"query", provider.Config{BaseURL: "https://a.example?x=1"}, Config{}, "base_url", ""},
		{"user info", provider.Config{BaseURL: "https://u:p@a.example"}, Config{}, "base_url", ""},
		{"bad version", provider.Config{}, Config{Version: "latest"}, "version", ""},
		{"negative max tokens", provider.Config{}, Config{DefaultMaxTokens: -1}, "default_max_tokens", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.p, "k", tt.c, &http.Client{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("got error %v, want one naming %q", err, tt.wantErr)
				}
				if verr := tt.c.Validate(); tt.wantErr != "base_url" && (verr == nil || !strings.Contains(verr.Error(), tt.wantErr)) {
					t.Errorf("Validate: got %v, want an error naming %q", verr, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if a.messagesURL != tt.wantURL {
				t.Errorf("got messages URL %q, want %q", a.messagesURL, tt.wantURL)
			}
		})
	}
	a, err := New(provider.Config{}, "", Config{DefaultMaxTokens: 123}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.client == nil || a.maxTokens != 123 || a.version != DefaultVersion {
		t.Errorf("got client %v maxTokens %d version %q, want a client, 123, %s", a.client, a.maxTokens, a.version, DefaultVersion)
	}
}

// TestNewReportsEveryProblem: one call names every fault, one per line,
// the block's under anthropic.
func TestNewReportsEveryProblem(t *testing.T) {
	_, err := Type.Build(provider.Config{BaseURL: "https://api.anthropic.com/v1"}, "k", &Config{Version: "latest", DefaultMaxTokens: -1})
	want := `anthropic.version: "latest" is not a date like 2023-06-01` + "\n" +
		"anthropic.default_max_tokens: must not be negative, got -1\n" +
		`base_url: "https://api.anthropic.com/v1": give scheme://host only; the adapter appends /v1/messages`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want\n%s", err, want)
	}
}

func TestDefaultMaxTokensConfigured(t *testing.T) {
	var got []byte
	a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		_, _ = io.WriteString(w, okMessage)
	})
	a.maxTokens = 777 // what New sets from Config.DefaultMaxTokens (TestConfig)
	if _, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"x"}]}`)); err != nil {
		t.Fatal(err)
	}
	var body struct {
		MaxTokens int64 `json:"max_tokens"`
	}
	if err := json.Unmarshal(got, &body); err != nil || body.MaxTokens != 777 {
		t.Errorf("got max_tokens %d (%v), want 777", body.MaxTokens, err)
	}
}

// TestDoErrorRateLimit checks an error answer's anthropic-ratelimit-*
// headers reach the outcome.Error, read as on a successful answer.
func TestDoErrorRateLimit(t *testing.T) {
	reset := testNow.Add(30 * time.Second).Format(time.RFC3339)
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		kind   outcome.Kind
		want   outcome.RateLimit
	}{
		{"429", 429, map[string]string{
			"Retry-After":                            "30",
			"Anthropic-Ratelimit-Requests-Limit":     "50",
			"Anthropic-Ratelimit-Requests-Remaining": "0",
			"Anthropic-Ratelimit-Requests-Reset":     reset,
			"Anthropic-Ratelimit-Tokens-Limit":       "96000",
			"Anthropic-Ratelimit-Tokens-Remaining":   "12000",
			"Anthropic-Ratelimit-Tokens-Reset":       reset,
		}, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute."}}`,
			outcome.RateLimited, outcome.RateLimit{LimitRequests: 50, RemainingRequests: 0, ResetRequests: 30 * time.Second,
				LimitTokens: 96000, RemainingTokens: 12000, ResetTokens: 30 * time.Second, RetryAfter: 30 * time.Second}},
		{"529 input tokens axis", 529, map[string]string{
			"Anthropic-Ratelimit-Input-Tokens-Limit":     "80000",
			"Anthropic-Ratelimit-Input-Tokens-Remaining": "0",
			"Anthropic-Ratelimit-Input-Tokens-Reset":     reset,
		}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			outcome.Overloaded, outcome.RateLimit{LimitRequests: -1, RemainingRequests: -1,
				LimitTokens: 80000, RemainingTokens: 0, ResetTokens: 30 * time.Second}},
		{"no headers", 503, nil, "", outcome.Overloaded, outcome.UnknownRateLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTestAdapter(t, providertest.Reply(tt.status, tt.header, tt.body))
			_, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`))
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.kind || oe.RateLimit != tt.want {
				t.Errorf("got %v with RateLimit %+v, want %v with %+v", oe.Kind, oe.RateLimit, tt.kind, tt.want)
			}
		})
	}
}
