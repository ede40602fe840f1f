package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

const streamBody = `{"model":"alias","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

// chunks of a real-shaped OpenAI stream with include_usage.
var chunks = []string{
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"lo \"usage\": {} error"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
	`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
}

// sseHandler answers with raw, the event stream text, flushing after each
// event; abort drops the connection afterwards without ending the body.
func sseHandler(raw []string, abort bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Ratelimit-Limit-Tokens", "1000")
		w.Header().Set("X-Ratelimit-Remaining-Tokens", "900")
		w.Header().Set("X-Request-Id", "req-s")
		f := w.(http.Flusher)
		for _, s := range raw {
			_, _ = io.WriteString(w, s)
			f.Flush()
		}
		if abort {
			panic(http.ErrAbortHandler)
		}
	}
}

func events(payloads ...string) []string {
	out := make([]string, len(payloads))
	for i, p := range payloads {
		out[i] = "data: " + p + "\n\n"
	}
	return out
}

// drain reads s to its end and returns the payloads and the final error.
func drain(tb testing.TB, s provider.Stream) ([]string, error) {
	tb.Helper()
	var got []string
	for {
		p, err := s.Next()
		if err != nil {
			return got, err
		}
		got = append(got, string(p))
	}
}

func TestStream(t *testing.T) {
	whole := append(append([]string{": keep-alive\n\n", "event: ping\n\n", "data:\n\n"}, events(chunks...)...), "data: [DONE]\n\n")
	up := providertest.NewUpstream(t, sseHandler(whole, false))
	for _, fl := range []struct {
		flavor Flavor
		base   string
		path   string
	}{
		{OpenAI, "/v1", "/v1/chat/completions"},
		{Azure, "", "/openai/deployments/dep/chat/completions"},
		{Compatible, "/v1", "/v1/chat/completions"},
	} {
		t.Run(fl.flavor.String(), func(t *testing.T) {
			a := newTestAdapter(t, fl.flavor, up.Server.URL+fl.base, "k", Config{})
			resp, err := a.Do(context.Background(), request(provider.OpChat, streamBody, "dep", true))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			if resp.Body != nil {
				t.Errorf("stream response has Body %q", resp.Body)
			}
			if resp.RateLimit.LimitTokens != 1000 || resp.RateLimit.RemainingTokens != 900 {
				t.Errorf("rate limit %+v; want tokens 1000/900", resp.RateLimit)
			}
			got, err := drain(t, resp.Stream)
			if err != io.EOF {
				t.Fatalf("end = %v, want io.EOF", err)
			}
			want := chunks
			if fl.flavor != Compatible {
				// The adapter asked for usage on the client's behalf (the
				// request did not): the usage-only chunk is recorded, not
				// relayed.
				want = chunks[:len(chunks)-1]
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("payloads\n got %q\nwant %q", got, want)
			}
			if _, err := resp.Stream.Next(); err != io.EOF {
				t.Errorf("Next after the end = %v, want io.EOF again", err)
			}
			if u := resp.Stream.Usage(); u != (outcome.Usage{PromptTokens: 12, CompletionTokens: 3, Model: "gpt-4o-mini"}) {
				t.Errorf("usage = %+v, want 12/3 by gpt-4o-mini (the chunks' model, not dep)", u)
			}
			s := up.Last(t)
			if s.Path != fl.path || s.Header.Get("Accept") != "text/event-stream" {
				t.Errorf("sent %s with Accept %q, want %s with text/event-stream", s.Path, s.Header.Get("Accept"), fl.path)
			}
			if want := withModel(streamBody, "dep"); string(s.Body) != want {
				t.Errorf("forwarded body %s, want %s", s.Body, want)
			}
		})
	}
}

// TestStreamModel: a stream's model is the one its chunks name, read
// from the first chunks until one names it (Azure's first chunk, its
// prompt filter results, names ""); "" when none of them does.
func TestStreamModel(t *testing.T) {
	const (
		filter = `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`
		role   = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-11-20","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
		text   = `{"id":"c","object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
	)
	for _, c := range []struct {
		name   string
		chunks []string
		want   string
	}{
		{"every chunk names it", []string{role, role}, "gpt-4o-2024-11-20"},
		{"after azure's prompt filter results", []string{filter, role, role}, "gpt-4o-2024-11-20"},
		{"none names it", []string{text, text}, ""},
		{"named first past the chunks looked at", []string{text, text, text, text, role}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, sseHandler(append(events(c.chunks...), "data: [DONE]\n\n"), false))
			a := newTestAdapter(t, Compatible, up.Server.URL+"/v1", "", Config{})
			resp, err := a.Do(context.Background(), request(provider.OpChat, streamBody, "gpt-4o", true))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			if _, err := drain(t, resp.Stream); err != io.EOF {
				t.Fatalf("end = %v, want io.EOF", err)
			}
			if got := resp.Stream.Usage().Model; got != c.want {
				t.Errorf("model %q, want %q", got, c.want)
			}
		})
	}
}

func TestStreamUsageEveryChunk(t *testing.T) {
	// vLLM's continuous_usage_stats: cumulative usage on every chunk.
	raw := events(
		`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}`,
		`{"choices":[{"delta":{"content":"b"}}],"usage" : {"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`,
		`{"choices":[{"delta":{"content":"c"}}],"usage":{"completion_tokens":3}}`,
		`{"choices":[{"delta":{"content":"d"},"usage":null}],"usage":{"prompt_tokens":8,"completion_tokens":4}}`,
		`[DONE]`,
	)
	up := providertest.NewUpstream(t, sseHandler(raw, false))
	a := newTestAdapter(t, Compatible, up.Server.URL+"/v1", "", Config{})
	resp, err := a.Do(context.Background(), request(provider.OpChat, streamBody, "m", true))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Stream.Close()
	var seen []outcome.Usage
	for {
		if _, err := resp.Stream.Next(); err != nil {
			break
		}
		seen = append(seen, resp.Stream.Usage())
	}
	want := []outcome.Usage{{PromptTokens: 7, CompletionTokens: 1}, {PromptTokens: 7, CompletionTokens: 2}, {PromptTokens: 7, CompletionTokens: 3}, {PromptTokens: 8, CompletionTokens: 4}}
	if len(seen) != len(want) {
		t.Fatalf("got %d chunks, want %d", len(seen), len(want))
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("usage after chunk %d = %+v, want %+v", i, seen[i], want[i])
		}
	}
}

func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name       string
		raw        []string
		abort      bool
		wantChunks int
		wantKind   outcome.Kind
		wantStatus int
		wantMsg    string
	}{
		{"ends without done", events(chunks[:2]...), false, 2, outcome.Network, 0, "without [DONE]"},
		{"cut between events", events(chunks[:2]...), true, 2, outcome.Network, 0, ""},
		{"cut inside an event", append(events(chunks[0]), `data: {"id":"chatcmpl-9","choi`), true, 1, outcome.Network, 0, ""},
		{"server error event", append(events(chunks[0]),
			"data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"),
			false, 1, outcome.ServerError, 0, "The server had an error"},
		{"llama.cpp error event", append(events(chunks[0]),
			"data: {\"error\":{\"code\":503,\"message\":\"Loading model\",\"type\":\"unavailable_error\"}}\n\n"),
			false, 1, outcome.Overloaded, 503, "Loading model"},
		{"vllm flat error event", events(`{"object":"error","message":"engine dead","type":"InternalServerError","param":null,"code":500}`),
			false, 0, outcome.ServerError, 500, "engine dead"},
		{"rate limit event", events(chunks[0], chunks[1],
			`{"error":{"message":"Rate limit reached. Please try again in 2s.","type":"tokens","code":"rate_limit_exceeded"}}`),
			false, 2, outcome.RateLimited, 0, "Rate limit reached"},
		{"error without message", events(`{"error":{"type":"server_error"}}`),
			false, 0, outcome.ServerError, 0, "an error occurred during streaming"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, sseHandler(tt.raw, tt.abort))
			a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk", Config{})
			resp, err := a.Do(context.Background(), request(provider.OpChat, streamBody, "gpt-4o-mini", true))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			got, err := drain(t, resp.Stream)
			if len(got) != tt.wantChunks {
				t.Errorf("got %d payloads before the failure, want %d", len(got), tt.wantChunks)
			}
			if errors.Is(err, io.EOF) {
				t.Fatalf("err = %v matches io.EOF: a failure must never look like the end", err)
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.wantKind || oe.Status != tt.wantStatus || !strings.Contains(oe.Message, tt.wantMsg) {
				t.Errorf("got kind %v status %d message %q, want %v %d containing %q",
					oe.Kind, oe.Status, oe.Message, tt.wantKind, tt.wantStatus, tt.wantMsg)
			}
			if _, again := resp.Stream.Next(); again != err {
				t.Errorf("Next after failure = %v, want the same error %v", again, err)
			}
		})
	}
}

func TestStreamErrorsBeforeFirstChunk(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		ctype    string
		body     string
		wantKind outcome.Kind
		wantMsg  string
	}{
		{"429 before the stream", 429, "application/json",
			`{"error":{"message":"Please try again in 1s.","type":"requests","code":"rate_limit_exceeded"}}`,
			outcome.RateLimited, "Please try again in 1s."},
		{"json error document on 200", 200, "application/json; charset=utf-8",
			`{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`,
			outcome.Overloaded, "Loading model"},
		{"stream ignored", 200, "application/json", chatAnswer,
			outcome.ServerError, "stream requested but the provider answered with a JSON document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			a := newTestAdapter(t, Compatible, up.Server.URL+"/v1", "", Config{})
			resp, err := a.Do(context.Background(), request(provider.OpChat, streamBody, "m", true))
			if resp != nil {
				t.Errorf("resp = %+v, want nil", resp)
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.wantKind || oe.Message != tt.wantMsg {
				t.Errorf("got %v %q, want %v %q", oe.Kind, oe.Message, tt.wantKind, tt.wantMsg)
			}
		})
	}
}

// TestStreamClientCancel: the client goes away mid-stream; Next reports
// Canceled and the upstream sees its request end.
func TestStreamClientCancel(t *testing.T) {
	upstreamDone := make(chan struct{})
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamDone)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+chunks[0]+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a model still generating
	})
	a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk", Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := a.Do(ctx, request(provider.OpChat, streamBody, "gpt-4o-mini", true))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Stream.Close()
	if p, err := resp.Stream.Next(); err != nil || string(p) != chunks[0] {
		t.Fatalf("first Next = %q, %v; want the first chunk", p, err)
	}
	cancel()
	_, err = resp.Stream.Next()
	if got := outcome.KindOf(err); got != outcome.Canceled {
		t.Errorf("kind after cancel = %v, want canceled (%v)", got, err)
	}
	<-upstreamDone // the handler returns only once its request context ended
}

// TestStreamCancelCause: the proxy's own timer ends the attempt with an
// *outcome.Error cause; the stream reports that kind, not Canceled.
func TestStreamCancelCause(t *testing.T) {
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk", Config{})
	ctx, cancel := context.WithCancelCause(context.Background())
	resp, err := a.Do(ctx, request(provider.OpChat, streamBody, "gpt-4o-mini", true))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Stream.Close()
	cancel(&outcome.Error{Kind: outcome.Timeout, Message: "no first token within 20s"})
	if got := outcome.KindOf(func() error { _, err := resp.Stream.Next(); return err }()); got != outcome.Timeout {
		t.Errorf("kind = %v, want timeout", got)
	}
}

func TestStreamClose(t *testing.T) {
	up := providertest.NewUpstream(t, sseHandler(append(events(chunks...), "data: [DONE]\n\n"), false))
	a := newTestAdapter(t, OpenAI, up.Server.URL+"/v1", "sk", Config{})
	resp, err := a.Do(context.Background(), request(provider.OpChat, streamBody, "gpt-4o-mini", true))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if _, err := resp.Stream.Next(); err != nil {
		t.Fatalf("Next: %v", err)
	}
	for i := range 2 {
		if err := resp.Stream.Close(); err != nil {
			t.Errorf("Close #%d = %v, want nil", i+1, err)
		}
	}
	if _, err := resp.Stream.Next(); outcome.KindOf(err) != outcome.Canceled || errors.Is(err, io.EOF) {
		t.Errorf("Next after Close = %v, want canceled", err)
	}
}

func TestHasErrorField(t *testing.T) {
	tests := []struct {
		doc  string
		want bool
	}{
		{`{"error":{"message":"x"}}`, true},
		{` {"error":"boom"}`, true},
		{`{"error":true}`, true},
		{`{"object":"error","message":"x"}`, true},
		{`{"error":null,"choices":[]}`, false},
		{`{"error":{}}`, false},
		{`{"error":""}`, false},
		{`{"error":false}`, false},
		{`{"choices":[{"delta":{"content":"an \"error\" here"}}]}`, false},
		{`{"choices":[{"finish_reason":"error","error":{"message":"nested"}}]}`, false},
		{`[{"error":{"message":"x"}}]`, false},
		{`data`, false},
	}
	for _, tt := range tests {
		if got := hasErrorField([]byte(tt.doc)); got != tt.want {
			t.Errorf("hasErrorField(%s) = %v, want %v", tt.doc, got, tt.want)
		}
	}
}

// TestStreamAsksForUsage: OpenAI and Azure streams always ask for the usage
// chunk so the router counts stream tokens; a client that did not ask for
// it never sees it. OpenAI-compatible servers get the body untouched.
func TestStreamAsksForUsage(t *testing.T) {
	const body = `{"model":"alias","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	whole := append(events(chunks...), "data: [DONE]\n\n")
	up := providertest.NewUpstream(t, sseHandler(whole, false))
	for _, fl := range []struct {
		flavor Flavor
		base   string
		asks   bool
	}{{OpenAI, "/v1", true}, {Azure, "", true}, {Compatible, "/v1", false}} {
		t.Run(fl.flavor.String(), func(t *testing.T) {
			a := newTestAdapter(t, fl.flavor, up.Server.URL+fl.base, "k", Config{})
			resp, err := a.Do(context.Background(), request(provider.OpChat, body, "dep", true))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Stream.Close()
			got, _ := drain(t, resp.Stream)
			sent := string(up.Last(t).Body)
			if asked := strings.Contains(sent, `"stream_options":{"include_usage":true}`); asked != fl.asks {
				t.Errorf("forwarded %s: include_usage added = %v, want %v", sent, asked, fl.asks)
			}
			if fl.asks && len(got) != len(chunks)-1 {
				t.Errorf("relayed %d chunks, want %d (usage chunk hidden)", len(got), len(chunks)-1)
			}
			if u := resp.Stream.Usage(); u.CompletionTokens != 3 {
				t.Errorf("usage %+v, want the stream's 3 completion tokens", u)
			}
		})
	}
}

// TestStreamCleanEnd is the clean-end rule on the chat stream
// (docs/ARCHITECTURE.md, "Streaming"): a body that ends cleanly without
// [DONE] is a whole answer once every choice it named has its finish
// reason, with or without the usage chunk after it; before that, or when
// the body is cut rather than ended, it is a cut.
func TestStreamCleanEnd(t *testing.T) {
	choice := func(i int, delta, finish string) string {
		return fmt.Sprintf(`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[{"index":%d,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null}`, i, delta, finish)
	}
	call := func(i, k int, finish string) string {
		return fmt.Sprintf(`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini","choices":[{"index":%d,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":"{}"}}]},"finish_reason":%s}]}`, i, k, finish)
	}
	tests := []struct {
		name   string
		raw    []string
		abort  bool // the connection drops instead of the body ending
		whole  bool
		chunks int
		usage  int64 // completion tokens known at the end
	}{
		{"finish seen, usage after", events(chunks...), false, true, 5, 3},
		{"finish seen, no usage", events(chunks[:4]...), false, true, 4, 0},
		{"finish seen, usage on the finish chunk", events(chunks[0], chunks[1],
			`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":2,"completion_tokens":7}}`), false, true, 3, 7},
		{"finish not seen", events(chunks[:3]...), false, false, 3, 0},
		{"usage without a finish", events(chunks[0], chunks[1], chunks[4]), false, false, 3, 3},
		{"nothing but the role", events(chunks[0]), false, false, 1, 0},
		{"no chunk at all", []string{": keep-alive\n\n"}, false, false, 0, 0},
		{"finish seen, then the connection drops", events(chunks[:4]...), true, false, 4, 0},
		{"an empty finish reason is none", events(chunks[0], choice(0, `{}`, `""`)), false, false, 2, 0},
		{"n=2, one finished", events(choice(0, `{"content":"a"}`, "null"), choice(1, `{"content":"b"}`, "null"),
			choice(0, `{}`, `"stop"`)), false, false, 3, 0},
		{"n=2, the other finished", events(choice(0, `{"content":"a"}`, "null"), choice(1, `{"content":"b"}`, "null"),
			choice(1, `{}`, `"stop"`)), false, false, 3, 0},
		{"n=2, both finished", events(choice(0, `{"content":"a"}`, "null"), choice(1, `{"content":"b"}`, "null"),
			choice(1, `{}`, `"stop"`), choice(0, `{}`, `"length"`), chunks[4]), false, true, 5, 3},
		{"n=2 in one chunk, one finished", events(
			`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"},{"index":1,"delta":{"content":"b"},"finish_reason":null}]}`),
			false, false, 1, 0},
		{"n=2 in one chunk, both finished", events(
			`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"},{"index":1,"delta":{"content":"b"},"finish_reason":"stop"}]}`),
			false, true, 1, 0},
		{"choice 1 after choice 0 finished", events(choice(0, `{}`, `"stop"`), choice(1, `{"content":"b"}`, "null")), false, false, 2, 0},
		{"a second tool call, finished", events(chunks[0], call(0, 0, "null"), call(0, 1, "null"), choice(0, `{}`, `"tool_calls"`)), false, true, 4, 0},
		{"a second tool call, not finished", events(chunks[0], call(0, 0, "null"), call(0, 1, "null")), false, false, 3, 0},
		{"legacy completions", events(`{"object":"text_completion","choices":[{"text":"Hel","index":0,"logprobs":null,"finish_reason":null}]}`,
			`{"object":"text_completion","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}`), false, true, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, sseHandler(tt.raw, tt.abort))
			a := newTestAdapter(t, Compatible, up.Server.URL+"/v1", "", Config{})
			resp, err := a.Do(context.Background(), request(provider.OpChat, streamBody, "m", true))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			got, err := drain(t, resp.Stream)
			if len(got) != tt.chunks {
				t.Errorf("got %d payloads, want %d", len(got), tt.chunks)
			}
			if tt.whole {
				if err != io.EOF {
					t.Fatalf("end = %v, want io.EOF (a whole answer)", err)
				}
				if _, again := resp.Stream.Next(); again != io.EOF {
					t.Errorf("Next after the end = %v, want io.EOF", again)
				}
			} else {
				oe := providertest.As[*outcome.Error](t, err)
				if errors.Is(err, io.EOF) || oe.Kind != outcome.Network {
					t.Fatalf("end = %v (kind %v), want a cut (network, not io.EOF)", err, oe.Kind)
				}
			}
			if u := resp.Stream.Usage().CompletionTokens; u != tt.usage {
				t.Errorf("completion tokens %d, want %d", u, tt.usage)
			}
		})
	}
}
