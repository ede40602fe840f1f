package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		version string
		wantErr bool
	}{
		{"", false},
		{"v1", false},
		{"2024-10-21", false},
		{"2025-04-01-preview", false},
		{"2024-13-01", true},
		{"2024-10-21-beta", true},
		{"latest", true},
		{"V1", true},
		{"2024-10-21&x=1", true},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			err := Config{APIVersion: tt.version}.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate(%q) = %v, want error %v", tt.version, err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "api_version: ") {
				t.Errorf("error %q does not name api_version", err)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		flavor  Flavor
		base    string
		key     string
		cfg     Config
		wantKey string // prefix of the error; "" means no error
	}{
		{"openai default base", OpenAI, "", "sk", Config{}, ""},
		{"openai needs key", OpenAI, "", "", Config{}, "api_key_env: "},
		{"azure needs key", Azure, "https://r.openai.azure.com", "", Config{}, "api_key_env: "},
		{"compatible without key", Compatible, "http://localhost:11434/v1", "", Config{}, ""},
		{"azure needs base", Azure, "", "k", Config{}, "base_url: "},
		{"compatible needs base", Compatible, "", "", Config{}, "base_url: "},
		{"bad scheme", Compatible, "ftp://host/v1", "", Config{}, "base_url: "},
		{"no scheme", Compatible, "localhost:11434/v1", "", Config{}, "base_url: "},
		{"no host", OpenAI, "https:///v1", "sk", Config{}, "base_url: "},
		{"query", OpenAI, "https://api.openai.com/v1?x=1", "sk", Config{}, "base_url: "},
		{"unparsable", OpenAI, "http://[::1", "sk", Config{}, "base_url: "},
		{"azure with api path", Azure, "https://r.openai.azure.com/openai", "k", Config{}, "base_url: "},
		{"azure gateway prefix", Azure, "https://apim.example.com/team-a/", "k", Config{}, ""},
		{"azure bad version", Azure, "https://r.openai.azure.com", "k", Config{APIVersion: "soon"}, "azure.api_version: "},
		{"azure block on openai", OpenAI, "", "sk", Config{APIVersion: "v1"}, "azure: "},
		{"unknown flavor", Flavor(9), "http://h/v1", "k", Config{}, "type: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.flavor, provider.Config{BaseURL: tt.base}, tt.key, tt.cfg, http.DefaultClient)
			if tt.wantKey == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if a == nil {
					t.Fatal("New returned nil adapter")
				}
				return
			}
			if err == nil {
				t.Fatalf("New succeeded, want error naming %q", tt.wantKey)
			}
			if !strings.HasPrefix(err.Error(), tt.wantKey) {
				t.Errorf("error %q, want prefix %q", err, tt.wantKey)
			}
		})
	}
}

// TestNewReportsEveryProblem: one call names every fault, one per line.
func TestNewReportsEveryProblem(t *testing.T) {
	_, err := AzureType.Build(provider.Config{BaseURL: "https://r.openai.azure.com/openai"}, "", &Config{APIVersion: "soon"})
	want := `azure.api_version: "soon" is neither "v1" nor a date like "2024-10-21" (optionally with -preview)` + "\n" +
		`base_url: "https://r.openai.azure.com/openai": give scheme://host only for azure, the adapter appends the /openai path` + "\n" +
		"api_key_env: azure needs an API key (set api_key_env or api_key_file)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want\n%s", err, want)
	}
}

// chatBody is a client body with awkward spacing, escapes and non-ASCII,
// so that byte identity of the pass-through is meaningful.
const chatBody = `{"messages":[{"role":"user","content":"h\u00e9llo \"w\u00f6rld\" 世界"}], "model" :  "alias-model" ,"temperature":0.2,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"stream_options":null}`

const chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1767225600,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"Hi  there \u263a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

const embedBody = `{"model":"alias","input":["a","b"],"encoding_format":"float"}`

const embedAnswer = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]},{"object":"embedding","index":1,"embedding":[0.3,0.4]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":2,"total_tokens":2}}`

const completionBody = `{"model":"alias","prompt":"Say this is a test","max_tokens":7}`

const completionAnswer = `{"id":"cmpl-1","object":"text_completion","created":1767225600,"model":"gpt-3.5-turbo-instruct","choices":[{"text":"This is a test","index":0,"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`

func TestDoNonStream(t *testing.T) {
	ops := []struct {
		op               provider.Op
		body, answer     string
		path             string
		prompt, complete int64
		model            string // the model the answer names
	}{
		{provider.OpChat, chatBody, chatAnswer, "/chat/completions", 12, 3, "gpt-4o-mini-2024-07-18"},
		{provider.OpEmbeddings, embedBody, embedAnswer, "/embeddings", 2, 0, "text-embedding-3-small"},
		{provider.OpCompletions, completionBody, completionAnswer, "/completions", 5, 7, "gpt-3.5-turbo-instruct"},
	}
	flavors := []struct {
		name       string
		flavor     Flavor
		basePath   string // appended to the server URL to form base_url
		key        string
		cfg        Config
		pathPrefix string // before the op path; {model} is replaced
		query      string
		authKey    string
		authValue  string
	}{
		{"openai", OpenAI, "/v1", "sk-test", Config{}, "/v1", "", "Authorization", "Bearer sk-test"},
		{"compatible with key", Compatible, "/v1/", "vllm-key", Config{}, "/v1", "", "Authorization", "Bearer vllm-key"},
		{"compatible without key", Compatible, "/v1", "", Config{}, "/v1", "", "", ""},
		{"azure classic", Azure, "", "az-key", Config{}, "/openai/deployments/{model}", "api-version=2024-10-21", "Api-Key", "az-key"},
		{"azure preview", Azure, "/", "az-key", Config{APIVersion: "2025-04-01-preview"}, "/openai/deployments/{model}", "api-version=2025-04-01-preview", "Api-Key", "az-key"},
		{"azure v1", Azure, "", "az-key", Config{APIVersion: "v1"}, "/openai/v1", "", "Api-Key", "az-key"},
	}
	const model = "my-dep.v2"
	for _, fl := range flavors {
		for _, o := range ops {
			t.Run(fl.name+"/"+o.op.String(), func(t *testing.T) {
				up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
					h := w.Header()
					h.Set("Content-Type", "application/json")
					h.Set("X-Request-Id", "req-123")
					h.Set("X-Ratelimit-Limit-Requests", "5000")
					h.Set("X-Ratelimit-Remaining-Requests", "4998")
					h.Set("X-Ratelimit-Reset-Requests", "24ms")
					_, _ = w.Write([]byte(o.answer))
				})
				a := newTestAdapter(t, fl.flavor, up.Server.URL+fl.basePath, fl.key, fl.cfg)
				req := request(o.op, o.body, model, false)
				orig := string(req.Body)

				resp, err := a.Do(context.Background(), req)
				if err != nil {
					t.Fatalf("Do: %v", err)
				}
				if got := string(resp.Body); got != o.answer {
					t.Errorf("body = %s, want the provider's bytes %s", got, o.answer)
				}
				if resp.Stream != nil {
					t.Error("non-stream answer has a Stream")
				}
				// The model that answered, not the one asked for.
				if want := (outcome.Usage{PromptTokens: o.prompt, CompletionTokens: o.complete, Model: o.model}); resp.Usage != want {
					t.Errorf("usage = %+v, want %+v", resp.Usage, want)
				}
				if resp.RateLimit.LimitRequests != 5000 || resp.RateLimit.RemainingRequests != 4998 || resp.RateLimit.ResetRequests != 24*time.Millisecond {
					t.Errorf("rate limit = %+v, want limit 5000, remaining 4998, reset 24ms", resp.RateLimit)
				}
				if string(req.Body) != orig {
					t.Error("Do modified req.Body")
				}

				s := up.Last(t)
				wantPath := strings.ReplaceAll(fl.pathPrefix, "{model}", model) + o.path
				if s.Method != http.MethodPost || s.Path != wantPath || s.Query != fl.query {
					t.Errorf("got %s %s?%s, want POST %s?%s", s.Method, s.Path, s.Query, wantPath, fl.query)
				}
				if want := withModel(o.body, model); string(s.Body) != want {
					t.Errorf("forwarded body\n got %s\nwant %s", s.Body, want)
				}
				if got := s.Header.Get("Content-Type"); got != "application/json" {
					t.Errorf("content-type = %q, want application/json", got)
				}
				if got := s.Header.Get("Accept"); got != "application/json" {
					t.Errorf("accept = %q, want application/json", got)
				}
				for _, k := range []string{"Authorization", "Api-Key"} {
					want := ""
					if k == fl.authKey {
						want = fl.authValue
					}
					if got := s.Header.Get(k); got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
			})
		}
	}
}

func TestDoDefaultBaseURL(t *testing.T) {
	a, err := New(OpenAI, provider.Config{}, "sk", Config{}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.urls[provider.OpChat], "https://api.openai.com/v1/chat/completions"; got != want {
		t.Errorf("chat URL = %q, want %q", got, want)
	}
	if got, want := a.probeURL, "https://api.openai.com/v1/models"; got != want {
		t.Errorf("probe URL = %q, want %q", got, want)
	}
}

func TestSupports(t *testing.T) {
	a := newTestAdapter(t, Compatible, "http://127.0.0.1:1/v1", "", Config{})
	for _, op := range []provider.Op{provider.OpChat, provider.OpCompletions, provider.OpEmbeddings} {
		if !a.Supports(op) {
			t.Errorf("Supports(%v) = false, want true", op)
		}
	}
	if a.Supports(provider.Op(42)) {
		t.Error("Supports(42) = true, want false")
	}
}

// TestDoErrors drives ClassifyError through Do: the status, headers and
// body of a real answer reach the caller as one classified error.
func TestDoErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		wantKind   outcome.Kind
		wantStatus int
		wantCode   string
		wantMsg    string // substring
		wantWait   time.Duration
	}{
		{"rate limited", 429, map[string]string{"Retry-After": "2", "X-Ratelimit-Remaining-Tokens": "0"},
			`{"error":{"message":"Rate limit reached for gpt-4o-mini on tokens per min (TPM): Limit 200000, Used 199000, Requested 1500. Please try again in 450ms.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			outcome.RateLimited, 429, "rate_limit_exceeded", "Rate limit reached", 2 * time.Second},
		{"retry-after http date", 429, map[string]string{"Retry-After": "Wed, 21 Oct 2026 07:28:30 GMT"},
			`{"error":{"message":"slow down","type":"rate_limit_error","code":"slow_down"}}`,
			outcome.RateLimited, 429, "slow_down", "slow down", 30 * time.Second},
		{"quota", 429, nil,
			`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			outcome.Quota, 429, "insufficient_quota", "exceeded your current quota", 0},
		{"azure day block", 429, nil,
			`{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 86400 seconds."}}`,
			outcome.Quota, 429, "429", "Please retry after 86400 seconds", 24 * time.Hour},
		{"model not found", 404, nil,
			`{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			outcome.TargetMissing, 404, "model_not_found", "The model `gpt-9` does not exist", 0},
		{"azure deployment not found", 404, map[string]string{"Apim-Request-Id": "x"},
			`{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`,
			outcome.TargetMissing, 404, "DeploymentNotFound", "deployment for this resource does not exist", 0},
		{"context length", 400, nil,
			`{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			outcome.ContextExceeded, 400, "context_length_exceeded", "maximum context length", 0},
		{"bad key", 401, nil,
			`{"error":{"message":"Incorrect API key provided: sk-****.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			outcome.Auth, 401, "invalid_api_key", "Incorrect API key", 0},
		{"llama.cpp loading", 503, nil,
			`{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`,
			outcome.Overloaded, 503, "503", "Loading model", 0},
		{"html 502", 502, nil, "<html><body>Bad Gateway</body></html>\n",
			outcome.ServerError, 502, "", "<html><body>Bad Gateway</body></html>", 0},
		{"empty 500", 500, nil, "", outcome.ServerError, 500, "", "", 0},
		{"gateway timeout", 504, nil, "upstream timed out", outcome.ServerError, 504, "", "upstream timed out", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, providertest.Reply(tt.status, tt.header, tt.body))
			a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk", Config{})
			resp, err := a.Do(context.Background(), request(provider.OpChat, chatBody, "gpt-4o-mini", false))
			if resp != nil {
				t.Errorf("resp = %+v, want nil", resp)
			}
			oe := providertest.As[*outcome.Error](t, err)
			if !strings.HasPrefix(err.Error(), "calling openai chat completions: ") {
				t.Errorf("err = %q, want it to say what was being done", err)
			}
			if oe.Kind != tt.wantKind || oe.Status != tt.wantStatus || oe.Code != tt.wantCode || oe.RetryAfter != tt.wantWait {
				t.Errorf("got kind %v status %d code %q wait %v, want %v %d %q %v",
					oe.Kind, oe.Status, oe.Code, oe.RetryAfter, tt.wantKind, tt.wantStatus, tt.wantCode, tt.wantWait)
			}
			if !strings.Contains(oe.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", oe.Message, tt.wantMsg)
			}
		})
	}
}

func TestDoAnswerProblems(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		wantKind   outcome.Kind
		wantStatus int
		wantMsg    string
	}{
		{"invalid JSON on 200", 200, map[string]string{"Content-Type": "application/json"}, `{"id":"x","choices":[`,
			outcome.ServerError, 200, "invalid JSON from provider"},
		{"html on 200", 200, nil, "<html>captive portal</html>", outcome.ServerError, 200, "invalid JSON from provider"},
		// A broken or hostile local server cannot take the router down
		// with nesting: validation is bounded (internal/jsoncheck).
		{"deep nesting on 200", 200, map[string]string{"Content-Type": "application/json"}, strings.Repeat("[", 2_000_000),
			outcome.ServerError, 200, "invalid JSON from provider"},
		{"error document on 200", 200, map[string]string{"Content-Type": "application/json"},
			`{"error":{"message":"upstream overloaded","type":"server_error","code":"server_is_overloaded"}}`,
			outcome.Overloaded, 0, "upstream overloaded"},
		{"redirect", 302, map[string]string{"Location": "https://login.example.com/"}, "",
			outcome.ServerError, 302, "check base_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, providertest.Reply(tt.status, tt.header, tt.body))
			a := newTestAdapter(t, Compatible, up.Server.URL+"/v1", "", Config{})
			_, err := a.Do(context.Background(), request(provider.OpChat, chatBody, "m", false))
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.wantKind || oe.Status != tt.wantStatus || !strings.Contains(oe.Message, tt.wantMsg) {
				t.Errorf("got kind %v status %d message %q, want %v %d containing %q",
					oe.Kind, oe.Status, oe.Message, tt.wantKind, tt.wantStatus, tt.wantMsg)
			}
		})
	}
}

func TestDoTransportErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL + "/v1"
		srv.Close()
		a := newTestAdapter(t, Compatible, base, "", Config{})
		_, err := a.Do(context.Background(), request(provider.OpChat, chatBody, "m", false))
		if got := outcome.KindOf(err); got != outcome.Network {
			t.Errorf("kind = %v, want network (%v)", got, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		release := make(chan struct{})
		up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer close(release)
		a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk", Config{})
		ctx, cancel := context.WithDeadline(context.Background(), time.Now()) // already past: no waiting
		defer cancel()
		_, err := a.Do(ctx, request(provider.OpChat, chatBody, "m", false))
		if got := outcome.KindOf(err); got != outcome.Timeout {
			t.Errorf("kind = %v, want timeout (%v)", got, err)
		}
	})
	t.Run("cut body", func(t *testing.T) {
		up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte(`{"id":`))
			panic(http.ErrAbortHandler) // drop the connection mid-body
		})
		a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk", Config{})
		_, err := a.Do(context.Background(), request(provider.OpChat, chatBody, "m", false))
		if got := outcome.KindOf(err); got != outcome.Network {
			t.Errorf("kind = %v, want network (%v)", got, err)
		}
	})
	t.Run("azure without deployment", func(t *testing.T) {
		a := newTestAdapter(t, Azure, "http://127.0.0.1:1", "k", Config{})
		_, err := a.Do(context.Background(), request(provider.OpChat, chatBody, "", false))
		if got := outcome.KindOf(err); got != outcome.ServerError {
			t.Errorf("kind = %v, want server_error (%v)", got, err)
		}
	})
}

func TestProbe(t *testing.T) {
	flavors := []struct {
		name            string
		flavor          Flavor
		basePath        string
		key             string
		cfg             Config
		path, query     string
		authKey, authOK string
	}{
		{"openai", OpenAI, "/v1", "sk", Config{}, "/v1/models", "", "Authorization", "Bearer sk"},
		{"compatible", Compatible, "/v1", "", Config{}, "/v1/models", "", "", ""},
		{"azure classic", Azure, "", "ak", Config{}, "/openai/models", "api-version=2024-10-21", "Api-Key", "ak"},
		{"azure v1", Azure, "", "ak", Config{APIVersion: "v1"}, "/openai/v1/models", "", "Api-Key", "ak"},
	}
	answers := []struct {
		name     string
		status   int
		body     string
		wantKind outcome.Kind // OK means a nil error
	}{
		{"healthy", 200, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"system"}]}`, outcome.OK},
		{"bad key", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, outcome.Auth},
		{"loading", 503, `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`, outcome.Overloaded},
		{"broken", 500, "internal error", outcome.ServerError},
	}
	for _, fl := range flavors {
		for _, ans := range answers {
			t.Run(fl.name+"/"+ans.name, func(t *testing.T) {
				up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
					w.WriteHeader(ans.status)
					_, _ = w.Write([]byte(ans.body))
				})
				a := newTestAdapter(t, fl.flavor, up.Server.URL+fl.basePath, fl.key, fl.cfg)
				err := a.Probe(context.Background())
				if got := outcome.KindOf(err); got != ans.wantKind {
					t.Fatalf("Probe kind = %v, want %v (%v)", got, ans.wantKind, err)
				}
				var oe *outcome.Error
				if err != nil && (!errors.As(err, &oe) || oe.Status != ans.status) {
					t.Errorf("Probe error = %v, want an *outcome.Error with status %d", err, ans.status)
				}
				s := up.Last(t)
				if s.Method != http.MethodGet || s.Path != fl.path || s.Query != fl.query {
					t.Errorf("probe sent %s %s?%s, want GET %s?%s", s.Method, s.Path, s.Query, fl.path, fl.query)
				}
				if fl.authKey != "" && s.Header.Get(fl.authKey) != fl.authOK {
					t.Errorf("%s = %q, want %q", fl.authKey, s.Header.Get(fl.authKey), fl.authOK)
				}
				if fl.authKey == "" && s.Header.Get("Authorization") != "" {
					t.Errorf("Authorization = %q, want none", s.Header.Get("Authorization"))
				}
			})
		}
	}
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL + "/v1"
		srv.Close()
		a := newTestAdapter(t, Compatible, base, "", Config{})
		if got := outcome.KindOf(a.Probe(context.Background())); got != outcome.Network {
			t.Errorf("Probe kind = %v, want network", got)
		}
	})
}

// TestDoErrorRateLimit checks every flavor, stream or not, hands a 429's
// rate-limit headers to the caller on the outcome.Error.
func TestDoErrorRateLimit(t *testing.T) {
	header := map[string]string{
		"X-Ratelimit-Limit-Requests": "60", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "1s",
		"X-Ratelimit-Limit-Tokens": "150000", "X-Ratelimit-Remaining-Tokens": "149984", "X-Ratelimit-Reset-Tokens": "6m0s",
	}
	body := `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	want := outcome.RateLimit{LimitRequests: 60, RemainingRequests: 0, ResetRequests: time.Second,
		LimitTokens: 150000, RemainingTokens: 149984, ResetTokens: 6 * time.Minute}
	for _, f := range []Flavor{OpenAI, Azure, Compatible} {
		for _, stream := range []bool{false, true} {
			name := f.String()
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				up := providertest.NewUpstream(t, providertest.Reply(429, header, body))
				base, c := up.Server.URL+"/v1", Config{}
				if f == Azure {
					base, c = up.Server.URL, Config{APIVersion: "2024-10-21"}
				}
				a := newTestAdapter(t, f, base, "sk", c)
				_, err := a.Do(context.Background(), request(provider.OpChat, chatBody, "gpt-4o-mini", stream))
				oe := providertest.As[*outcome.Error](t, err)
				if oe.Kind != outcome.RateLimited || oe.RateLimit != want {
					t.Errorf("stream %v: got %v with RateLimit %+v, want rate_limited with %+v", stream, oe.Kind, oe.RateLimit, want)
				}
			})
		}
	}
}

// TestDoTargetMissing checks the OpenAI-compatible servers' model-missing
// 404s are client errors suspecting target_missing (words only: the
// router confirms them) with the provider's message, while a wrong
// endpoint stays server_error.
func TestDoTargetMissing(t *testing.T) {
	tests := []struct {
		name string
		body string
		want outcome.Kind
		msg  string
	}{
		{"ollama", `{"error":{"message":"model \"llama3.9\" not found, try pulling it first","type":"not_found_error","param":null,"code":null}}`,
			outcome.ClientError, `model "llama3.9" not found, try pulling it first`},
		{"vllm", `{"error":{"message":"The model ` + "`llama3.9`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}}`,
			outcome.ClientError, "The model `llama3.9` does not exist."},
		{"unknown route", "404 page not found", outcome.ServerError, "check base_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, providertest.Reply(404, nil, tt.body))
			a := newTestAdapter(t, Compatible, up.Server.URL+"/v1", "", Config{})
			_, err := a.Do(context.Background(), request(provider.OpChat, chatBody, "llama3.9", false))
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.want || oe.Status != 404 || !strings.Contains(oe.Message, tt.msg) ||
				(oe.Suspect == outcome.TargetMissing) != (tt.want == outcome.ClientError) {
				t.Errorf("got %v (suspect %v) status %d message %q, want %v 404 containing %q", oe.Kind, oe.Suspect, oe.Status, oe.Message, tt.want, tt.msg)
			}
		})
	}
}
