package bedrock

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/bedrock/bedrocktest"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

func chat(model, body string, stream bool) *provider.Request {
	return &provider.Request{Op: provider.OpChat, Model: model, Body: []byte(body), Stream: stream, IncludeUsage: stream}
}

// TestConverseChat: a chat request for a model that is not Anthropic's
// goes to Converse, signed (the fake recomputed the signature), translated
// both ways.
func TestConverseChat(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	resp, err := a.Do(context.Background(), chat(llama,
		`{"model":"x","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":50,"temperature":0.2,"stop":"END"}`, false))
	if err != nil {
		t.Fatal(err)
	}
	providertest.SameJSON(t, "answer", resp.Body, `{"id":"chatcmpl-req-1","object":"chat.completion","created":`+itoa(testNow.Unix())+
		`,"model":"`+llama+`","choices":[{"index":0,"message":{"role":"assistant","content":"hello from `+llama+`"},"logprobs":null,"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0}}}`)
	// Converse names no model: the usage names none (the target's is the
	// one that answered).
	if resp.Usage != (outcome.Usage{PromptTokens: 11, CompletionTokens: 4}) {
		t.Errorf("usage: got %+v", resp.Usage)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Op != bedrocktest.Converse || reqs[0].Model != llama || reqs[0].AccessKey != bedrocktest.AccessKeyID {
		t.Fatalf("fake got %+v", reqs)
	}
	providertest.SameJSON(t, "converse body", reqs[0].Body, `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"system":[{"text":"be brief"}],`+
		`"inferenceConfig":{"maxTokens":50,"temperature":0.2,"stopSequences":["END"]}}`)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestConverseStream: ConverseStream's frames become chat chunks, with the
// usage chunk the client asked for.
func TestConverseStream(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	resp, err := a.Do(context.Background(), chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, true))
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := drain(t, resp.Stream)
	if err != io.EOF {
		t.Fatalf("end: got %v, want io.EOF", err)
	}
	var text strings.Builder
	for _, c := range chunks {
		providertest.CheckChunk(t, []byte(c))
		var ch struct {
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		_ = json.Unmarshal([]byte(c), &ch)
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if got, want := text.String(), "hello from "+llama; got != want {
		t.Errorf("text: got %q, want %q", got, want)
	}
	if len(chunks) != 5 || !strings.Contains(chunks[3], `"finish_reason":"stop"`) ||
		!strings.Contains(chunks[4], `"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15`) {
		t.Errorf("chunks: got\n%s", strings.Join(chunks, "\n"))
	}
	if u := resp.Stream.Usage(); u != (outcome.Usage{PromptTokens: 11, CompletionTokens: 4}) {
		t.Errorf("usage: got %+v, want 11/4 and no model", u)
	}
	if r := fake.Requests(); len(r) != 1 || r[0].Op != bedrocktest.ConverseStream {
		t.Errorf("fake got %+v", r)
	}
}

// TestConverseTools: tools, tool_choice, an image and a conversation with
// tool calls and results translate into Converse's blocks; a toolUse
// answer, whole or streamed, comes back as tool calls; cache tokens are
// counted apart.
func TestConverseTools(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	const body = `{"messages":[
		{"role":"user","content":[{"type":"text","text":"weather?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"sunny"},
		{"role":"user","content":"and tomorrow?"}],
		"tools":[{"type":"function","function":{"name":"get_weather","description":"weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
		"tool_choice":"required"}`
	fake.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
		if r.Op == bedrocktest.ConverseStream {
			return bedrocktest.Reply{Events: []bedrocktest.Event{
				{Type: "messageStart", Payload: `{"role":"assistant"}`},
				{Type: "contentBlockStart", Payload: `{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather"}}}`},
				{Type: "contentBlockDelta", Payload: `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"city\":"}}}`},
				{Type: "contentBlockDelta", Payload: `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"\"Oslo\"}"}}}`},
				{Type: "contentBlockStop", Payload: `{"contentBlockIndex":0}`},
				{Type: "messageStop", Payload: `{"stopReason":"tool_use"}`},
				{Type: "metadata", Payload: `{"usage":{"inputTokens":5,"outputTokens":7,"cacheReadInputTokens":100,"cacheWriteInputTokens":20}}`},
			}}
		}
		return bedrocktest.Reply{JSON: `{"output":{"message":{"role":"assistant","content":[{"text":"checking"},` +
			`{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Oslo","day":"tomorrow"}}}]}},` +
			`"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":7,"totalTokens":132,"cacheReadInputTokens":100,"cacheWriteInputTokens":20}}`}
	}
	resp, err := a.Do(context.Background(), chat(llama, body, false))
	if err != nil {
		t.Fatal(err)
	}
	providertest.SameJSON(t, "converse body", fake.Requests()[0].Body, `{"messages":[
		{"role":"user","content":[{"text":"weather?"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}]},
		{"role":"assistant","content":[{"toolUse":{"toolUseId":"call_1","name":"get_weather","input":{"city":"Oslo"}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"call_1","content":[{"text":"sunny"}]}},{"text":"and tomorrow?"}]}],
		"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","description":"weather now","inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}}}}}}],
		"toolChoice":{"any":{}}}}`)
	providertest.SameJSON(t, "answer", resp.Body, `{"id":"chatcmpl-req-1","object":"chat.completion","created":`+itoa(testNow.Unix())+`,"model":"`+llama+`",
		"choices":[{"index":0,"message":{"role":"assistant","content":"checking","tool_calls":[{"id":"tooluse_1","type":"function",
		"function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\",\"day\":\"tomorrow\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":125,"completion_tokens":7,"total_tokens":132,"prompt_tokens_details":{"cached_tokens":100}}}`)
	if want := (outcome.Usage{PromptTokens: 125, CompletionTokens: 7, CachedInput: 100, CacheWrite: 20}); resp.Usage != want {
		t.Errorf("usage: got %+v, want %+v", resp.Usage, want)
	}

	resp, err = a.Do(context.Background(), chat(llama, body, true))
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := drain(t, resp.Stream)
	if err != io.EOF {
		t.Fatalf("end: got %v", err)
	}
	want := []string{
		`"delta":{"tool_calls":[{"index":0,"id":"tooluse_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`,
		`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`,
		`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}`,
		`"finish_reason":"tool_calls"`,
		`"usage":{"prompt_tokens":125,"completion_tokens":7,"total_tokens":132,"prompt_tokens_details":{"cached_tokens":100}}`,
	}
	if len(chunks) != len(want)+1 {
		t.Fatalf("chunks: got\n%s", strings.Join(chunks, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(chunks[i+1], w) {
			t.Errorf("chunk %d: got %s, want it to hold %s", i+1, chunks[i+1], w)
		}
	}
}

// TestMessagesNative: a Messages request for an Anthropic model goes to
// InvokeModel with the client's body less its model and stream, plus
// anthropic_version and the betas; the answer, whole or streamed, comes
// back as Bedrock sent it.
func TestMessagesNative(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	const body = `{"model":"claude-sonnet-4-5","max_tokens":1024,"system":[{"type":"text","text":"you are terse","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"thinking":{"type":"enabled","budget_tokens":2000},"stream":%s}`
	const want = `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14","context-1m-2025-08-07"],"max_tokens":1024,` +
		`"system":[{"type":"text","text":"you are terse","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"thinking":{"type":"enabled","budget_tokens":2000}}`
	req := &provider.Request{Op: provider.OpMessages, Model: claude, Body: []byte(strings.Replace(body, "%s", "false", 1)),
		Native: []provider.Header{{Name: anthropic.HeaderVersion, Value: "2023-06-01"},
			{Name: anthropic.HeaderBeta, Value: "interleaved-thinking-2025-05-14,context-1m-2025-08-07"}}}
	resp, err := a.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := fake.Requests()[0]
	if got.Op != bedrocktest.Invoke || got.Model != claude || string(got.Body) != want {
		t.Errorf("invoke: got %s %s\n%s\nwant body\n%s", got.Op, got.Model, got.Body, want)
	}
	// The model the message names (the fake's "claude"), not the target.
	if !strings.Contains(string(resp.Body), `"id":"msg_bdrk_1"`) || resp.Usage != (outcome.Usage{PromptTokens: 11, CompletionTokens: 4, Model: "claude"}) {
		t.Errorf("answer: got %s, usage %+v", resp.Body, resp.Usage)
	}

	req.Body, req.Stream = []byte(strings.Replace(body, "%s", "true", 1)), true
	resp, err = a.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	events, err := drain(t, resp.Stream)
	if err != io.EOF {
		t.Fatalf("end: got %v", err)
	}
	wantEvents := bedrocktest.MessagesEvents("hello from " + claude)
	if len(events) != len(wantEvents) {
		t.Fatalf("events: got\n%s", strings.Join(events, "\n"))
	}
	for i := range events {
		if events[i] != wantEvents[i].Payload {
			t.Errorf("event %d: got %s, want %s", i, events[i], wantEvents[i].Payload)
		}
	}
	if got := fake.Requests()[1]; got.Op != bedrocktest.InvokeStream || string(got.Body) != want {
		t.Errorf("stream invoke: got %s\n%s", got.Op, got.Body)
	}
	if u := resp.Stream.Usage(); u != (outcome.Usage{PromptTokens: 11, CompletionTokens: 4, Model: "claude"}) {
		t.Errorf("stream usage: got %+v", u)
	}
}

// TestChatAnthropicModel: chat for an Anthropic model is translated by the
// anthropic package and sent to InvokeModel, not Converse.
func TestChatAnthropicModel(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	resp, err := a.Do(context.Background(), chat(claude, `{"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"max_tokens":99}`, false))
	if err != nil {
		t.Fatal(err)
	}
	got := fake.Requests()[0]
	providertest.SameJSON(t, "invoke body", got.Body, `{"anthropic_version":"bedrock-2023-05-31","max_tokens":99,"system":"s","messages":[{"role":"user","content":"hi"}]}`)
	if got.Op != bedrocktest.Invoke || !strings.Contains(string(resp.Body), `"content":"hello from `+claude+`"`) || resp.Usage.Model != "claude" {
		t.Errorf("got %s, answer %s, model %q", got.Op, resp.Body, resp.Usage.Model)
	}
	resp, err = a.Do(context.Background(), chat(claude, `{"messages":[{"role":"user","content":"hi"}]}`, true))
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := drain(t, resp.Stream)
	if err != io.EOF || !strings.Contains(strings.Join(chunks, ""), `"content":"hello from `+claude+`"`) || resp.Stream.Usage().Model != "claude" {
		t.Errorf("stream: got %v, model %q\n%s", err, resp.Stream.Usage().Model, strings.Join(chunks, "\n"))
	}
	if got := fake.Requests()[1]; got.Op != bedrocktest.InvokeStream || strings.Contains(string(got.Body), `"stream"`) {
		t.Errorf("stream invoke: got %s %s", got.Op, got.Body)
	}
}

// TestFindCredentials: where the credentials came from, never what they
// are; none is the auth kind.
func TestFindCredentials(t *testing.T) {
	envCredentials(t)
	a, _ := newFake(t)
	src, err := a.FindCredentials(context.Background())
	if want := "environment variables (EnvConfigCredentials), key AKIA…MPLE"; err != nil || src != want {
		t.Errorf("got %q, %v; want %q", src, err, want)
	}
	isolateAWS(t)
	b, _ := newFake(t)
	if _, err := b.FindCredentials(context.Background()); outcome.KindOf(err) != outcome.Auth {
		t.Errorf("none: got %v", err)
	}
}

// TestStreamCut: a ConverseStream (and an invoke stream) cut in the
// middle of a frame ends with one classified network error, repeated.
func TestStreamCut(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	fake.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
		rp := bedrocktest.Default(r)
		rp.CutAfter = 2
		return rp
	}
	for _, req := range []*provider.Request{
		chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, true),
		{Op: provider.OpMessages, Model: claude, Stream: true, Body: []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stream":true}`)},
	} {
		resp, err := a.Do(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := drain(t, resp.Stream)
		if len(chunks) != 2 || outcome.KindOf(err) != outcome.Network {
			t.Errorf("%s: got %d chunks and %v, want 2 and a network error", req.Op, len(chunks), err)
		}
		if _, again := resp.Stream.Next(); again != err {
			t.Errorf("%s: the error does not repeat: %v", req.Op, again)
		}
	}
	// Also cut exactly between frames: a whole frame, then nothing.
	fake.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
		rp := bedrocktest.Default(r)
		rp.Events = rp.Events[:3]
		return rp
	}
	resp, err := a.Do(context.Background(), chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, resp.Stream); outcome.KindOf(err) != outcome.Network {
		t.Errorf("ended before messageStop: got %v, want a network error", err)
	}
}

// TestStreamException: an exception frame is the failure it names.
func TestStreamException(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	fake.Reply = func(bedrocktest.Request) bedrocktest.Reply {
		return bedrocktest.Reply{Events: []bedrocktest.Event{
			{Type: "messageStart", Payload: `{"role":"assistant"}`},
			{Type: "throttlingException", Payload: `{"message":"Too many tokens, please wait before trying again."}`, Exception: true},
		}}
	}
	resp, err := a.Do(context.Background(), chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, true))
	if err != nil {
		t.Fatal(err)
	}
	_, err = drain(t, resp.Stream)
	oe := providertest.As[*outcome.Error](t, err)
	if oe.Kind != outcome.RateLimited || oe.Status != 429 || !strings.Contains(oe.Message, "Too many tokens") {
		t.Errorf("got %+v", oe)
	}
}

// TestSignatureChecked: the fake refuses what AWS refuses, and the
// adapter classifies it as auth: a wrong secret (the signature does not
// match), an unknown key.
func TestSignatureChecked(t *testing.T) {
	for _, tt := range []struct{ name, key, secret, code string }{
		{"wrong secret", bedrocktest.AccessKeyID, "not-the-secret", "InvalidSignatureException"},
		{"unknown key", "AKIAUNKNOWNKEY000000", bedrocktest.SecretAccessKey, "UnrecognizedClientException"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			isolateAWS(t)
			t.Setenv("AWS_ACCESS_KEY_ID", tt.key)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tt.secret)
			a, fake := newFake(t)
			_, err := a.Do(context.Background(), chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, false))
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != outcome.Auth || oe.Code != tt.code || oe.Status != 403 {
				t.Errorf("got %+v", oe)
			}
			if got := fake.Rejected(); len(got) != 1 || got[0] != tt.code || len(fake.Requests()) != 0 {
				t.Errorf("fake rejected %v, accepted %d", got, len(fake.Requests()))
			}
		})
	}
}

// TestNoCredentials: with no credential anywhere, a request fails at
// once with the auth kind, and a deadline bounds the chain's search.
func TestNoCredentials(t *testing.T) {
	isolateAWS(t)
	a, fake := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := a.Do(ctx, chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, false))
	if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.Auth || !strings.Contains(oe.Message, "getting AWS credentials") {
		t.Errorf("got %+v", oe)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	if len(fake.Requests())+len(fake.Rejected()) != 0 {
		t.Error("an unsigned request reached the fake")
	}
	// A profile that does not exist: auth too, not a crash.
	b, err := newAdapter(provider.Config{Name: "p", BaseURL: fake.URL}, Config{Region: "us-east-1"}, fake.Client(), defaultChain("us-east-1", "nobody", fake.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Do(ctx, chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, false)); outcome.KindOf(err) != outcome.Auth {
		t.Errorf("missing profile: got %v", err)
	}
	// A context that ended keeps its own kind.
	done, stop := context.WithCancel(context.Background())
	stop()
	if _, err := a.Do(done, chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, false)); outcome.KindOf(err) != outcome.Canceled {
		t.Errorf("canceled: got %v", err)
	}
}

// TestWebIdentity: credentials from a web identity token file (EKS IRSA:
// AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN), exchanged at the fake
// STS (AWS_ENDPOINT_URL_STS) for temporary ones that sign with a session
// token; kept while valid, fetched again when they come within the
// refresh window of their expiry.
func TestWebIdentity(t *testing.T) {
	for _, tt := range []struct {
		name     string
		lifetime time.Duration
		wantSTS  int
	}{
		{"kept while valid", time.Hour, 1},
		{"refreshed before expiry", 2 * time.Minute, 3}, // inside the 5-minute window: every use refreshes
	} {
		t.Run(tt.name, func(t *testing.T) {
			isolateAWS(t)
			a, fake := newFake(t)
			fake.RoleARN, fake.Token, fake.CredentialLifetime = "arn:aws:iam::123456789012:role/llm-router", "eyJhbGciOiJSUzI1NiJ9.k8s-sa-token.sig", tt.lifetime
			tokenFile := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(tokenFile, []byte(fake.Token), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
			t.Setenv("AWS_ROLE_ARN", fake.RoleARN)
			t.Setenv("AWS_ENDPOINT_URL_STS", fake.URL)
			for range 3 {
				if _, err := a.Do(context.Background(), chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, false)); err != nil {
					t.Fatal(err)
				}
			}
			if got := fake.STSCalls(); got != tt.wantSTS {
				t.Errorf("STS calls: got %d, want %d", got, tt.wantSTS)
			}
			for _, r := range fake.Requests() {
				if !strings.HasPrefix(r.AccessKey, "ASIATESTWEBIDENTITY") || r.Header.Get("X-Amz-Security-Token") == "" {
					t.Errorf("signed by %q with token %q", r.AccessKey, r.Header.Get("X-Amz-Security-Token"))
				}
			}
			if err := a.Probe(context.Background()); err != nil {
				t.Errorf("probe: %v", err)
			}
			src, err := a.FindCredentials(context.Background())
			if err != nil || !strings.HasPrefix(src, "web identity token file") || !strings.Contains(src, "key ASIA…") ||
				!strings.Contains(src, "temporary until") || strings.Contains(src, "secret") || strings.Contains(src, "session") {
				t.Errorf("FindCredentials: %q, %v", src, err)
			}
		})
	}
	t.Run("token refused", func(t *testing.T) {
		isolateAWS(t)
		a, fake := newFake(t)
		fake.RoleARN, fake.Token = "arn:aws:iam::123456789012:role/llm-router", "right"
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte("wrong"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
		t.Setenv("AWS_ROLE_ARN", fake.RoleARN)
		t.Setenv("AWS_ENDPOINT_URL_STS", fake.URL)
		_, err := a.Do(context.Background(), chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, false))
		if outcome.KindOf(err) != outcome.Auth {
			t.Errorf("got %v, want auth", err)
		}
	})
}

// TestProbe: ListFoundationModels on the control plane; access denied
// there is healthy, a bad key is not.
func TestProbe(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	if err := a.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := fake.Requests(); len(r) != 1 || r[0].Op != bedrocktest.ListModels {
		t.Errorf("fake got %+v", r)
	}
	fake.Reply = func(bedrocktest.Request) bedrocktest.Reply {
		return bedrocktest.Reply{Status: 403, Code: "AccessDeniedException", Message: "User is not authorized to perform: bedrock:ListFoundationModels"}
	}
	if err := a.Probe(context.Background()); err != nil {
		t.Errorf("access denied: got %v, want healthy", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	b, _ := newFake(t)
	if err := b.Probe(context.Background()); outcome.KindOf(err) != outcome.Auth {
		t.Errorf("bad secret: got %v", err)
	}
}

// TestStreamCleanEnd is the clean-end rule (docs/ARCHITECTURE.md,
// "Streaming") on every Bedrock stream: ConverseStream is whole once
// messageStop came, its metadata (the usage) after it or not; an invoke
// stream, chat or native, once message_delta gave the stop reason, its
// message_stop after it or not (the native one then gets it). A clean end
// before that is a cut.
func TestStreamCleanEnd(t *testing.T) {
	envCredentials(t)
	a, fake := newFake(t)
	chatReq := chat(llama, `{"messages":[{"role":"user","content":"hi"}]}`, true) // with include_usage
	claudeChat := chat(claude, `{"messages":[{"role":"user","content":"hi"}]}`, true)
	native := &provider.Request{Op: provider.OpMessages, Model: claude, Stream: true,
		Body: []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stream":true}`)}
	for _, tt := range []struct {
		name  string
		req   *provider.Request
		keep  int // the default answer's first keep events
		whole bool
		last  string // the last payload of a whole answer: "usage" (the usage chunk), else its "type"
	}{
		{"converse, all", chatReq, 6, true, "usage"},
		{"converse, no metadata after messageStop", chatReq, 5, true, "usage"},
		{"converse, no messageStop", chatReq, 4, false, ""},
		{"invoke chat, all", claudeChat, 6, true, "usage"},
		{"invoke chat, no message_stop", claudeChat, 5, true, "usage"},
		{"invoke chat, no stop reason", claudeChat, 4, false, ""},
		{"invoke native, all", native, 6, true, "message_stop"},
		{"invoke native, no message_stop", native, 5, true, "message_stop"},
		{"invoke native, no stop reason", native, 4, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
				rp := bedrocktest.Default(r)
				rp.Events = rp.Events[:tt.keep]
				return rp
			}
			resp, err := a.Do(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Stream.Close()
			got, err := drain(t, resp.Stream)
			if !tt.whole {
				if err == io.EOF || outcome.KindOf(err) != outcome.Network {
					t.Fatalf("end %v, want a cut (a network error)", err)
				}
				return
			}
			if err != io.EOF || len(got) == 0 {
				t.Fatalf("got %d payloads and %v, want a whole answer and io.EOF", len(got), err)
			}
			last := gjson.Parse(got[len(got)-1])
			switch tt.last {
			case "usage":
				if !last.Get("usage").IsObject() {
					t.Errorf("last chunk %s, want the usage chunk", last.Raw)
				}
			default:
				if last.Get("type").Str != tt.last {
					t.Errorf("last payload %s, want a %s", last.Raw, tt.last)
				}
			}
		})
	}
}
