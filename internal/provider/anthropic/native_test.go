package anthropic

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// nativeBody is a Messages request as Claude Code sends one, with what a
// translation would lose: unknown top-level fields, cache_control, a
// thinking block with its signature, a redacted_thinking block, a block
// type from the future, odd spacing and escapes. Only the model may change
// on its way upstream.
const nativeBody = `{"model" : "claude-opus-5-5", "max_tokens":128000,"stream":false,
 "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328","cache_control":{"type":"ephemeral","ttl":"1h"}}],
 "messages":[{"role":"user","content":[{"type":"text","text":"say hi \u00e9\n","cache_control":{"type":"ephemeral"}}]},
  {"role":"assistant","content":[{"type":"thinking","thinking":"The user wants a greeting.","signature":"EqQBCkgIARABGAIiQL+9fP/7Q=="},
   {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
   {"type":"brand_new_block","payload":{"x":[1,2.50,null]}},{"type":"text","text":"hi"}]},
  {"role":"user","content":"again"}],
 "thinking":{"type":"adaptive","display":"omitted"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
 "output_config":{"effort":"medium"},"metadata":{"user_id":"{\"device\":\"d1\",\"session\":\"s1\"}"},
 "future_field":{"nested":true}}`

// messagesReq is body as an OpMessages request whose model value the
// front door located, for the target's model testModel.
func messagesReq(tb testing.TB, body string) *provider.Request {
	tb.Helper()
	m := gjson.Get(body, "model")
	if !m.Exists() {
		tb.Fatalf("test body has no model: %s", body)
	}
	return &provider.Request{Op: provider.OpMessages, Model: testModel, Body: []byte(body),
		ModelStart: m.Index, ModelEnd: m.Index + len(m.Raw), Stream: gjson.Get(body, "stream").Bool()}
}

// swapped is body with the model value replaced by testModel's, as the
// upstream must receive it.
func swapped(body string) string {
	m := gjson.Get(body, "model")
	return body[:m.Index] + `"` + testModel + `"` + body[m.Index+len(m.Raw):]
}

// newNativeAdapter starts a recording fake Anthropic on h and returns an
// adapter bound to it through the production HTTP client (internal/h1 for
// a plain http:// base URL), with the clock fixed at testNow.
func newNativeAdapter(tb testing.TB, key string, h http.HandlerFunc) (*Adapter, *providertest.Upstream) {
	tb.Helper()
	u := providertest.NewUpstream(tb, h)
	p := provider.Config{Name: "anthropic", BaseURL: u.Server.URL}
	a, err := New(p, key, Config{}, provider.NewHTTPClient(p))
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	a.now = func() time.Time { return testNow }
	tb.Cleanup(a.client.CloseIdleConnections)
	return a, u
}

// nativeAnswer is a message as Anthropic answers it, spacing and field
// order included, with cache reads and writes and a field from the future.
const nativeAnswer = `{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-opus-5-5-20261001",
"content":[{"type":"thinking","thinking":"Greet.","signature":"EqQBCkgIARAB"},{"type":"text","text":"Hi \"again\"!"}],
"stop_reason":"end_turn","stop_sequence":null,"container":null,
"usage":{"input_tokens":12,"cache_creation_input_tokens":2048,"cache_read_input_tokens":30000,"output_tokens":6,"service_tier":"standard","server_tool_use":{"web_search_requests":0}}}`

func TestMessagesPassthrough(t *testing.T) {
	a, up := newNativeAdapter(t, "sk-ant-test", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Anthropic-Ratelimit-Requests-Limit", "1000")
		w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "999")
		_, _ = io.WriteString(w, nativeAnswer)
	})
	req := messagesReq(t, nativeBody)
	req.Native = nativeHeaders("2023-06-01", "claude-code-20250219,interleaved-thinking-2025-05-14, context-management-2025-06-27")
	resp, err := a.Do(context.Background(), req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	got := up.Only(t)
	if got.Method != http.MethodPost || got.Path != "/v1/messages" || got.Query != "" {
		t.Errorf("got %s %s?%s, want POST /v1/messages", got.Method, got.Path, got.Query)
	}
	if want := swapped(nativeBody); string(got.Body) != want {
		t.Errorf("upstream got body\n%s\nwant the client's with only the model swapped:\n%s", got.Body, want)
	}
	if string(req.Body) != nativeBody {
		t.Error("Do modified the request's Body")
	}
	if string(resp.Body) != nativeAnswer {
		t.Errorf("got body\n%s\nwant the provider's as it came:\n%s", resp.Body, nativeAnswer)
	}
	if resp.Stream != nil {
		t.Error("got a stream, want a body")
	}
	// The model that answered, not testModel asked for.
	want := outcome.Usage{PromptTokens: 12 + 2048 + 30000, CompletionTokens: 6, CachedInput: 30000, CacheWrite: 2048, Model: "claude-opus-5-5-20261001"}
	if resp.Usage != want {
		t.Errorf("got usage %+v, want %+v", resp.Usage, want)
	}
	if resp.RateLimit.LimitRequests != 1000 || resp.RateLimit.RemainingRequests != 999 {
		t.Errorf("got RateLimit %+v, want 1000 requests, 999 remaining", resp.RateLimit)
	}
}

// TestMessagesHeaders: the upstream gets the provider's key, the client's
// version (or the configured one) and betas verbatim, and nothing else the
// adapter did not set.
func TestMessagesHeaders(t *testing.T) {
	const betas = "claude-code-20250219, interleaved-thinking-2025-05-14,context-management-2025-06-27, effort-2025-11-24"
	tests := []struct {
		name, key, version, beta string
		stream                   bool
		want                     http.Header
	}{
		{"client version and betas", "sk-ant-test", "2023-06-01", betas, false, http.Header{
			"X-Api-Key": {"sk-ant-test"}, "Anthropic-Version": {"2023-06-01"}, "Anthropic-Beta": {betas},
			"Content-Type": {"application/json"}, "Accept": {"application/json"}}},
		{"a version of the client's own", "sk-ant-test", "2099-01-01", "", true, http.Header{
			"X-Api-Key": {"sk-ant-test"}, "Anthropic-Version": {"2099-01-01"},
			"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}},
		{"no client headers: the configured version", "sk-ant-test", "", "", false, http.Header{
			"X-Api-Key": {"sk-ant-test"}, "Anthropic-Version": {DefaultVersion},
			"Content-Type": {"application/json"}, "Accept": {"application/json"}}},
		{"no key: no x-api-key", "", "", "b1", false, http.Header{
			"Anthropic-Version": {DefaultVersion}, "Anthropic-Beta": {"b1"},
			"Content-Type": {"application/json"}, "Accept": {"application/json"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, up := newNativeAdapter(t, tt.key, func(w http.ResponseWriter, r *http.Request) {
				if tt.stream {
					writeSSE(w, sseBody(evStart, evMsgStop))
					return
				}
				_, _ = io.WriteString(w, nativeAnswer)
			})
			body := nativeBody
			if tt.stream {
				body = strings.Replace(body, `"stream":false`, `"stream":true`, 1)
			}
			req := messagesReq(t, body)
			req.Native = nativeHeaders(tt.version, tt.beta)
			resp, err := a.Do(context.Background(), req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if resp.Stream != nil {
				if _, err := drain(t, resp.Stream); err != io.EOF {
					t.Errorf("stream ended with %v, want io.EOF", err)
				}
				_ = resp.Stream.Close()
			}
			got := up.Only(t).Header
			// What the transport adds on its own: the length and its
			// User-Agent (the client's never travels).
			if got.Get("Content-Length") == "" || got.Get("User-Agent") != "llmrouter" {
				t.Errorf("got Content-Length %q User-Agent %q, want a length and llmrouter", got.Get("Content-Length"), got.Get("User-Agent"))
			}
			got.Del("Content-Length")
			got.Del("User-Agent")
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("upstream got headers\n%v\nwant exactly\n%v", got, tt.want)
			}
		})
	}
}

// nativeHeaders are the Messages front door's req.Native for a client
// that sent version and beta ("": not sent).
func nativeHeaders(version, beta string) []provider.Header {
	var hs []provider.Header
	if version != "" {
		hs = append(hs, provider.Header{Name: HeaderVersion, Value: version})
	}
	if beta != "" {
		hs = append(hs, provider.Header{Name: HeaderBeta, Value: beta})
	}
	return hs
}

// TestMessagesBadHeaderValue: a value no header may carry is the client's
// fault and never reaches the network.
func TestMessagesBadHeaderValue(t *testing.T) {
	a, up := newNativeAdapter(t, "k", providertest.Reply(200, nil, nativeAnswer))
	for _, h := range [][2]string{{"2023-06-01\r\nX-Evil: 1", ""}, {"", "b1\nX-Evil: 1"}} {
		req := messagesReq(t, nativeBody)
		req.Native = nativeHeaders(h[0], h[1])
		_, err := a.Do(context.Background(), req)
		if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.ClientError || oe.Status != 400 {
			t.Errorf("%q: got kind %v status %d, want client_error 400", h, oe.Kind, oe.Status)
		}
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}

func TestMessagesInvalidAnswer(t *testing.T) {
	tests := []struct {
		name, body string
		wantKind   outcome.Kind
		wantBody   bool
	}{
		{"not JSON", `<html>ok</html>`, outcome.ServerError, false},
		{"cut JSON", `{"id":"msg_01","content":`, outcome.ServerError, false},
		{"an error document with 200", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, outcome.Overloaded, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newNativeAdapter(t, "k", providertest.Reply(200, nil, tt.body))
			_, err := a.Do(context.Background(), messagesReq(t, nativeBody))
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.wantKind {
				t.Errorf("got kind %v, want %v", oe.Kind, tt.wantKind)
			}
			if tt.wantBody != (string(oe.Body) == tt.body) || !tt.wantBody && oe.Body != nil {
				t.Errorf("got Body %q, want it set %v", oe.Body, tt.wantBody)
			}
		})
	}
}

// nativeEvents is a stream as Anthropic sends one (event by event as
// captured, spacing included): a thinking block with its signature, text,
// a tool call in pieces, pings, an event type from the future, and a
// message_delta whose usage repeats the input counts.
var nativeEvents = []string{
	`{"type":"message_start","message":{"id":"msg_01S","type":"message","role":"assistant","model":"claude-opus-5-5-20261001","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":100,"cache_read_input_tokens":5000,"output_tokens":1,"service_tier":"standard"}}}`,
	`{"type": "ping"}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants \"weather\".\n"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkgIARABGAIiQL+9fP/7Q=="}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking \u00e9 "}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`,
	`{"type": "ping"}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"Oslo\"}"}}`,
	`{"type":"content_block_stop","index":2}`,
	`{"type":"brand_new_event","index":9,"x":[1,2]}`,
	`{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":40}}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":25,"cache_creation_input_tokens":100,"cache_read_input_tokens":5000,"output_tokens":89}}`,
	`{"type":"message_stop"}`,
}

func TestMessagesStream(t *testing.T) {
	// The wire as Anthropic writes it; a comment and CRLF framing on one
	// event, and a data-less event, change nothing the client sees.
	wire := sseBody(nativeEvents[:3]...) + ": keep-alive\n\nevent: ping\n\n" +
		"event: content_block_delta\r\ndata: " + nativeEvents[3] + "\r\n\r\n" + sseBody(nativeEvents[4:]...)
	a, up := newNativeAdapter(t, "k", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "41")
		writeSSE(w, wire)
	})
	body := strings.Replace(nativeBody, `"stream":false`, `"stream":true`, 1)
	resp, err := a.Do(context.Background(), messagesReq(t, body))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Stream.Close()
	if string(up.Only(t).Body) != swapped(body) {
		t.Errorf("upstream got body %s, want the client's with the model swapped", up.Only(t).Body)
	}
	if resp.Body != nil || resp.RateLimit.RemainingRequests != 41 {
		t.Errorf("got body %q remaining %d, want nil 41", resp.Body, resp.RateLimit.RemainingRequests)
	}
	got, err := drain(t, resp.Stream)
	if err != io.EOF {
		t.Fatalf("got end %v, want io.EOF", err)
	}
	if !slices.Equal(got, nativeEvents) {
		t.Errorf("got payloads\n%s\nwant the events' data unchanged, in order:\n%s", strings.Join(got, "\n"), strings.Join(nativeEvents, "\n"))
	}
	want := outcome.Usage{PromptTokens: 25 + 100 + 5000, CompletionTokens: 89, CachedInput: 5000, CacheWrite: 100, Model: "claude-opus-5-5-20261001"}
	if u := resp.Stream.Usage(); u != want {
		t.Errorf("got usage %+v, want %+v", u, want)
	}
	if _, err := resp.Stream.Next(); err != io.EOF {
		t.Errorf("Next after the end: got %v, want io.EOF", err)
	}
}

func TestMessagesStreamFailures(t *testing.T) {
	const overloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CStream"}`
	tests := []struct {
		name       string
		body       string
		hijack     bool // close the connection without ending the chunked body
		wantEvents int
		wantKind   outcome.Kind
		wantStatus int
		wantBody   string // the error's Body; "" means none
	}{
		{"error event mid-stream", sseBody(nativeEvents[:8]...) + "event: error\ndata: " + overloaded + "\n\n" + sseBody(evMsgStop),
			false, 8, outcome.Overloaded, 529, overloaded},
		{"error event first, named by its event only", "event: error\ndata: {\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n",
			false, 0, outcome.RateLimited, 429, `{"error":{"type":"rate_limit_error","message":"slow down"}}`},
		{"body ends before message_stop", sseBody(nativeEvents[:8]...), false, 8, outcome.Network, 0, ""},
		{"connection cut mid-event", sseBody(nativeEvents[:2]...) + "event: content_block_delta\ndata: {\"type\":", true, 2, outcome.Network, 0, ""},
		{"invalid JSON event", sseBody(nativeEvents[0]) + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n",
			false, 1, outcome.ServerError, 0, ""},
		// The client's event line is the payload's type: one that is not
		// [a-z_]+ is a malformed event (issue 31, finding 4: escaped line
		// breaks in it wrote events of the provider's into the client's
		// stream).
		{"a type with escaped line breaks", sseBody(nativeEvents[0]) +
			"data: {\"type\":\"ping\\n\\nevent: message_stop\\ndata: {\\\"type\\\":\\\"message_stop\\\"}\"}\n\n",
			false, 1, outcome.ServerError, 0, ""},
		{"a type with a capital", sseBody(nativeEvents[0]) + "data: {\"type\":\"Ping\"}\n\n", false, 1, outcome.ServerError, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
				writeSSE(w, tt.body)
				if tt.hijack {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						t.Errorf("hijack: %v", err)
						return
					}
					_ = conn.Close()
				}
			})
			req := messagesReq(t, nativeBody)
			req.Stream = true
			resp, err := a.Do(context.Background(), req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			got, err := drain(t, resp.Stream)
			if !slices.Equal(got, nativeEvents[:tt.wantEvents]) {
				t.Errorf("got payloads before the error\n%s\nwant the first %d events'", strings.Join(got, "\n"), tt.wantEvents)
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.wantKind || oe.Status != tt.wantStatus || string(oe.Body) != tt.wantBody {
				t.Errorf("got kind %v status %d body %q, want %v %d %q", oe.Kind, oe.Status, oe.Body, tt.wantKind, tt.wantStatus, tt.wantBody)
			}
			if _, again := resp.Stream.Next(); again != err {
				t.Errorf("Next after the failure: got %v, want the same error %v", again, err)
			}
		})
	}
}

// TestMessagesErrors: an error answer is classified as on the chat path,
// and its body is kept byte for byte for the client; the chat path keeps
// none.
func TestMessagesErrors(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		headers  map[string]string
		body     string
		wantKind outcome.Kind
		wantType string
	}{
		{"400 invalid request", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.thinking.signature: Invalid signature in thinking block"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`,
			outcome.ClientError, "invalid_request_error"},
		{"400 credit balance", 400, nil,
			`{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`,
			outcome.ClientError, "invalid_request_error"},
		{"404 unknown model", 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`,
			outcome.ClientError, "not_found_error"},
		{"404 other", 404, nil, `{"type":"error","error":{"type":"not_found_error","message":"Not found"}}`,
			outcome.ClientError, "not_found_error"},
		{"413 from cloudflare", 413, nil, "<html><body>413 Request Entity Too Large</body></html>\n",
			outcome.ClientError, ""},
		{"429 with retry-after", 429, map[string]string{"Retry-After": "7"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			outcome.RateLimited, "rate_limit_error"},
		{"529 overloaded", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
			outcome.Overloaded, "overloaded_error"},
		{"503 empty", 503, nil, "", outcome.Overloaded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newNativeAdapter(t, "k", providertest.Reply(tt.status, tt.headers, tt.body))
			for _, stream := range []bool{false, true} {
				req := messagesReq(t, nativeBody)
				req.Stream = stream
				_, err := a.Do(context.Background(), req)
				oe := providertest.As[*outcome.Error](t, err)
				if oe.Kind != tt.wantKind || oe.Status != tt.status || oe.Type != tt.wantType {
					t.Errorf("stream %v: got kind %v status %d type %q, want %v %d %q",
						stream, oe.Kind, oe.Status, oe.Type, tt.wantKind, tt.status, tt.wantType)
				}
				if string(oe.Body) != tt.body {
					t.Errorf("stream %v: got Body %q, want the provider's %q", stream, oe.Body, tt.body)
				}
				if tt.headers["Retry-After"] != "" && oe.RetryAfter != 7*time.Second {
					t.Errorf("stream %v: got RetryAfter %v, want 7s", stream, oe.RetryAfter)
				}
			}
			_, err := a.Do(context.Background(), chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`))
			if oe := providertest.As[*outcome.Error](t, err); oe.Kind != tt.wantKind || oe.Body != nil {
				t.Errorf("chat path: got kind %v Body %q, want %v and no Body", oe.Kind, oe.Body, tt.wantKind)
			}
		})
	}
}

// TestMessagesBoundedErrorBody: a huge error body is kept only up to
// provider.MaxErrorBody.
func TestMessagesBoundedErrorBody(t *testing.T) {
	huge := `{"type":"error","error":{"type":"api_error","message":"` + strings.Repeat("x", 2*provider.MaxErrorBody) + `"}}`
	a, _ := newNativeAdapter(t, "k", providertest.Reply(500, nil, huge))
	_, err := a.Do(context.Background(), messagesReq(t, nativeBody))
	oe := providertest.As[*outcome.Error](t, err)
	if oe.Kind != outcome.ServerError || len(oe.Body) != provider.MaxErrorBody || !strings.HasPrefix(huge, string(oe.Body)) {
		t.Errorf("got kind %v and a Body of %d bytes, want server_error and the first %d", oe.Kind, len(oe.Body), provider.MaxErrorBody)
	}
}

func TestCountTokens(t *testing.T) {
	const countBody = `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"hi","cache_control":{"type":"ephemeral"}}],"tools":[],"future":1}`
	rlHeaders := map[string]string{"Anthropic-Ratelimit-Requests-Limit": "2000", "Anthropic-Ratelimit-Requests-Remaining": "0"}
	tests := []struct {
		name     string
		status   int
		body     string
		wantKind outcome.Kind // OK: a 200
	}{
		{"counted", 200, `{"input_tokens":2095, "context_management":{"original_input_tokens":2100}}`, outcome.OK},
		{"rate limited", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"Too many count requests"}}`, outcome.RateLimited},
		{"not served", 404, `{"type":"error","error":{"type":"not_found_error","message":"Not found"}}`, outcome.ClientError},
		{"unknown model", 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-opus-5-5"}}`, outcome.ClientError},
		{"not JSON", 200, `input_tokens=3`, outcome.ServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, up := newNativeAdapter(t, "sk-ant-test", providertest.Reply(tt.status, rlHeaders, tt.body))
			req := messagesReq(t, countBody)
			req.Native = nativeHeaders("", "token-counting-2024-11-01")
			resp, err := a.CountTokens(context.Background(), req)
			got := up.Only(t)
			if got.Method != http.MethodPost || got.Path != "/v1/messages/count_tokens" || string(got.Body) != swapped(countBody) {
				t.Errorf("upstream got %s %s %s, want POST /v1/messages/count_tokens and the body with the model swapped", got.Method, got.Path, got.Body)
			}
			if got.Header.Get("X-Api-Key") != "sk-ant-test" || got.Header.Get("Anthropic-Version") != DefaultVersion ||
				got.Header.Get("Anthropic-Beta") != "token-counting-2024-11-01" || got.Header.Get("Accept") != "application/json" {
				t.Errorf("upstream got headers %v", got.Header)
			}
			if tt.wantKind == outcome.OK {
				if err != nil {
					t.Fatalf("CountTokens: %v", err)
				}
				if string(resp.Body) != tt.body || resp.Usage != (outcome.Usage{}) || resp.RateLimit != (outcome.RateLimit{}) {
					t.Errorf("got body %q usage %+v rate limit %+v, want the body as it came and nothing else", resp.Body, resp.Usage, resp.RateLimit)
				}
				return
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.wantKind || oe.RateLimit != (outcome.RateLimit{}) {
				t.Errorf("got kind %v rate limit %+v, want %v and none (token counting is limited apart)", oe.Kind, oe.RateLimit, tt.wantKind)
			}
			if tt.status != 200 && string(oe.Body) != tt.body {
				t.Errorf("got Body %q, want the provider's %q", oe.Body, tt.body)
			}
		})
	}
	t.Run("not a Messages request", func(t *testing.T) {
		a, up := newNativeAdapter(t, "k", providertest.Reply(200, nil, `{"input_tokens":1}`))
		_, err := a.CountTokens(context.Background(), chatReq(`{"model":"m","messages":[]}`))
		if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.ClientError {
			t.Errorf("got kind %v, want client_error", oe.Kind)
		}
		if n := len(up.Requests()); n != 0 {
			t.Errorf("upstream got %d requests, want none", n)
		}
	})
}

func TestSupports(t *testing.T) {
	a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) { t.Error("upstream called") })
	for op, want := range map[provider.Op]bool{
		provider.OpChat: true, provider.OpMessages: true,
		provider.OpCompletions: false, provider.OpEmbeddings: false, provider.OpResponses: false,
	} {
		if got := a.Supports(op); got != want {
			t.Errorf("Supports(%v) = %v, want %v", op, got, want)
		}
	}
	_, err := a.Do(context.Background(), &provider.Request{Op: provider.OpResponses, Body: []byte(`{}`)})
	if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.ClientError {
		t.Errorf("responses: got kind %v, want client_error", oe.Kind)
	}
}

// TestNativeStreamEdges feeds the native stream straight from bytes:
// data on several lines is passed on as SSE joins it; an event without a
// type is judged by its name; nothing is read past message_stop, whose
// payload comes before io.EOF.
func TestNativeStreamEdges(t *testing.T) {
	body := "event: message_start\ndata: {\"type\":\"message_start\",\ndata: \"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: message_stop\ndata: {}\n\n" +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n"
	s := newNativeStream(context.Background(), io.NopCloser(strings.NewReader(body)), testModel)
	got, err := drain(t, s)
	want := []string{"{\"type\":\"message_start\",\n\"message\":{\"usage\":{\"input_tokens\":3}}}", "{}"}
	if err != io.EOF || !slices.Equal(got, want) {
		t.Errorf("got %q, %v; want %q, io.EOF", got, err, want)
	}
	if u := s.Usage(); u != (outcome.Usage{PromptTokens: 3}) {
		t.Errorf("got usage %+v, want 3 prompt tokens", u)
	}
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close #%d: %v", i+1, err)
		}
	}
}
