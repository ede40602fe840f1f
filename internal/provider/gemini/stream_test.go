package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

func streamReq(includeUsage bool) *provider.Request {
	r := chatReq(`{"messages":[{"role":"user","content":"hi"}],"stream":true}`)
	r.Stream, r.IncludeUsage = true, includeUsage
	return r
}

// drain reads a stream to its end, returning each payload and the final
// error.
func drain(t testing.TB, s provider.Stream) ([]string, error) {
	t.Helper()
	var got []string
	for range 100 {
		b, err := s.Next()
		if err != nil {
			return got, err
		}
		got = append(got, string(b))
	}
	t.Fatal("stream did not end after 100 payloads")
	return nil, nil
}

// Events as Gemini sends them: a thought-only event, text, two parallel
// function calls, and a last event with the finish reason and usage.
var toolStream = []string{
	sseEvent(`{"candidates":[{"content":{"parts":[{"text":"**Planning**","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10,"thoughtsTokenCount":3},"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
	sseEvent(`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":1,"totalTokenCount":14,"thoughtsTokenCount":3},"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
	": keep-alive comment\r\n\r\n",
	sseEvent(`{"candidates":[{"content":{"parts":[{"text":"lo \"x\"\n"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
	sseEvent(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"CiQB0e2K"},{"functionCall":{"name":"get_time","args":{}}}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
	sseEvent(`{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":18,"thoughtsTokenCount":3},"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
}

const chunkHead = `"id":"chatcmpl-abc123","object":"chat.completion.chunk","created":1784140200,"model":"gemini-2.5-flash"`

// TestStreamModel: a stream's model is the modelVersion its first event
// names, for the chunks and for Usage, not the model asked for; when it
// names none the chunks are the model asked for's and Usage names none.
func TestStreamModel(t *testing.T) {
	const ev = `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}]MV,"responseId":"abc123"}`
	for _, c := range []struct {
		name, mv, wantChunk, wantUsage string
	}{
		{"a snapshot", `,"modelVersion":"gemini-2.5-flash-preview-09-2025"`, "gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash-preview-09-2025"},
		{"none", "", "gemini-2.5-flash", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, _ := newUpstream(t, Config{}, sseReply(sseEvent(strings.Replace(ev, "MV", c.mv, 1))))
			resp, err := a.Do(context.Background(), streamReq(false))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			chunks, err := drain(t, resp.Stream)
			if err != io.EOF || len(chunks) != 1 {
				t.Fatalf("got %d chunks, end %v; want 1, io.EOF", len(chunks), err)
			}
			if m := gjson.Get(chunks[0], "model").Str; m != c.wantChunk {
				t.Errorf("chunk model %q, want %q", m, c.wantChunk)
			}
			if m := resp.Stream.Usage().Model; m != c.wantUsage {
				t.Errorf("usage model %q, want %q", m, c.wantUsage)
			}
		})
	}
}

func TestStream(t *testing.T) {
	tests := []struct {
		name         string
		events       []string
		includeUsage bool
		want         []string
		wantUsage    outcome.Usage
	}{
		{
			name:   "text and parallel function calls",
			events: toolStream,
			want: []string{
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"content":"lo \"x\"\n"},"finish_reason":null}]}`,
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[
					{"index":0,"id":"call_X","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
					{"index":1,"id":"call_X","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":null}]}`,
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			},
			wantUsage: outcome.Usage{PromptTokens: 10, CompletionTokens: 8},
		},
		{
			name:         "include_usage adds a last chunk",
			events:       toolStream,
			includeUsage: true,
			want: []string{
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"content":"lo \"x\"\n"},"finish_reason":null}]}`,
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[
					{"index":0,"id":"call_X","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
					{"index":1,"id":"call_X","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":null}]}`,
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
				`{` + chunkHead + `,"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":8,"total_tokens":18,"completion_tokens_details":{"reasoning_tokens":3}}}`,
			},
			wantUsage: outcome.Usage{PromptTokens: 10, CompletionTokens: 8},
		},
		{
			name: "text with the finish reason in the last text event",
			events: []string{
				sseEvent(`{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
				sseEvent(`{"candidates":[{"content":{"parts":[{"text":" there"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2,"totalTokenCount":6},"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
			},
			includeUsage: true,
			want: []string{
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`,
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"length"}]}`,
				`{` + chunkHead + `,"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`,
			},
			wantUsage: outcome.Usage{PromptTokens: 4, CompletionTokens: 2},
		},
		{
			name: "prompt blocked",
			events: []string{
				sseEvent(`{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7},"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
			},
			want: []string{
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"content_filter"}]}`,
			},
			wantUsage: outcome.Usage{PromptTokens: 7},
		},
		{
			name: "two candidates",
			events: []string{
				sseEvent(`{"candidates":[{"content":{"parts":[{"text":"A"}],"role":"model"}},{"content":{"parts":[{"text":"B"}],"role":"model"},"index":1}],"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
				sseEvent(`{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"},"finishReason":"STOP"},{"finishReason":"SAFETY","index":1}],"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`),
			},
			want: []string{
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"role":"assistant","content":"A"},"finish_reason":null},{"index":1,"delta":{"role":"assistant","content":"B"},"finish_reason":null}]}`,
				`{` + chunkHead + `,"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"content_filter"}]}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, up := newUpstream(t, Config{}, sseReply(tt.events...))
			resp, err := a.Do(context.Background(), streamReq(tt.includeUsage))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			got := up.Only(t)
			if got.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || got.Query != "alt=sse" {
				t.Errorf("got %s?%s, want /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", got.Path, got.Query)
			}
			if resp.Body != nil || resp.RateLimit != outcome.UnknownRateLimit {
				t.Errorf("got body %q rate limit %+v, want no body and outcome.UnknownRateLimit", resp.Body, resp.RateLimit)
			}
			chunks, err := drain(t, resp.Stream)
			if err != io.EOF {
				t.Errorf("got end %v, want io.EOF", err)
			}
			if len(chunks) != len(tt.want) {
				t.Fatalf("got %d chunks, want %d:\n%s", len(chunks), len(tt.want), strings.Join(chunks, "\n"))
			}
			for i := range chunks {
				providertest.SameJSON(t, "chunk "+string(rune('0'+i)), normalizeCallIDs(t, []byte(chunks[i])), tt.want[i])
			}
			if _, err := resp.Stream.Next(); err != io.EOF {
				t.Errorf("got %v after the end, want io.EOF again", err)
			}
			want := tt.wantUsage
			want.Model = "gemini-2.5-flash" // every event's modelVersion
			if u := resp.Stream.Usage(); u != want {
				t.Errorf("got usage %+v, want %+v", u, want)
			}
		})
	}
}

// TestStreamFailures covers streams that do not end with a whole answer.
func TestStreamFailures(t *testing.T) {
	text := sseEvent(`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`)
	tests := []struct {
		name       string
		events     []string
		wantChunks int
		kind       outcome.Kind
		status     int
	}{
		{"body ends without a finish reason", []string{text}, 1, outcome.Network, 0},
		{"body ends without any event", nil, 0, outcome.Network, 0},
		{"body ends inside an event", []string{text, `data: {"candidates":[{"content":`}, 1, outcome.Network, 0},
		{"error event: overloaded", []string{text, sseEvent(`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)}, 1, outcome.Overloaded, 503},
		{"error event: rate limited", []string{sseEvent(`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"5s"}]}}`)}, 0, outcome.RateLimited, 429},
		{"error event: internal", []string{text, sseEvent(`{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`)}, 1, outcome.ServerError, 500},
		{"malformed event", []string{text, sseEvent(`{"candidates":[}`)}, 1, outcome.ServerError, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newUpstream(t, Config{}, sseReply(tt.events...))
			resp, err := a.Do(context.Background(), streamReq(true))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			chunks, err := drain(t, resp.Stream)
			if len(chunks) != tt.wantChunks {
				t.Errorf("got %d chunks before the failure, want %d", len(chunks), tt.wantChunks)
			}
			if err == io.EOF {
				t.Fatal("got io.EOF, want a classified failure")
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.kind || oe.Status != tt.status {
				t.Errorf("got %s status %d, want %s status %d (%v)", oe.Kind, oe.Status, tt.kind, tt.status, err)
			}
			if _, again := resp.Stream.Next(); !errors.Is(again, err) {
				t.Errorf("got %v on the next call, want the same failure %v", again, err)
			}
		})
	}
}

func TestStreamHTTPError(t *testing.T) {
	a, _ := newUpstream(t, Config{}, reply(http.StatusTooManyRequests,
		`[{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"31s"}]}}]`))
	resp, err := a.Do(context.Background(), streamReq(false))
	if err == nil {
		resp.Stream.Close()
		t.Fatal("Do succeeded, want a rate-limit error")
	}
	oe := providertest.As[*outcome.Error](t, err)
	if oe.Kind != outcome.RateLimited || oe.RetryAfter.Seconds() != 31 {
		t.Errorf("got %s RetryAfter %v, want rate_limited 31s", oe.Kind, oe.RetryAfter)
	}
	if !strings.HasPrefix(err.Error(), "calling gemini streamGenerateContent: ") {
		t.Errorf("got error %q, want it to say what was being done", err)
	}
}

// TestStreamCancel cuts the context after the first chunk while Gemini
// holds the connection open; the cause decides the kind.
func TestStreamCancel(t *testing.T) {
	tests := []struct {
		name  string
		cause error
		want  outcome.Kind
	}{
		{"client went away", context.Canceled, outcome.Canceled},
		{"proxy's attempt timer", &outcome.Error{Kind: outcome.Timeout, Message: "attempt timeout"}, outcome.Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			a, _ := newUpstream(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
				sseReply(toolStream[1])(w, r)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			t.Cleanup(func() { close(release) }) // runs before the server closes
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			resp, err := a.Do(ctx, streamReq(true))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			if _, err := resp.Stream.Next(); err != nil {
				t.Fatalf("first Next: %v", err)
			}
			cancel(tt.cause)
			_, err = resp.Stream.Next()
			if k := outcome.KindOf(err); k != tt.want {
				t.Errorf("got kind %s, want %s (%v)", k, tt.want, err)
			}
		})
	}
}

func TestStreamClose(t *testing.T) {
	a, _ := newUpstream(t, Config{}, sseReply(toolStream...))
	resp, err := a.Do(context.Background(), streamReq(false))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if _, err := resp.Stream.Next(); err != nil {
		t.Fatalf("Next: %v", err)
	}
	for i := range 2 {
		if err := resp.Stream.Close(); err != nil {
			t.Errorf("Close #%d: got %v, want nil", i+1, err)
		}
	}
	if _, err := resp.Stream.Next(); err == nil || err == io.EOF {
		t.Errorf("got %v from Next after Close, want a failure", err)
	}
}

// TestStreamCleanEnd is the clean-end rule (docs/ARCHITECTURE.md,
// "Streaming"): Gemini's stream has no closing event, so the end of the
// body is a whole answer once every candidate it named has its
// finishReason (a blocked prompt counts as finished); before that, or
// when the connection drops rather than the body ending, it is a cut.
func TestStreamCleanEnd(t *testing.T) {
	cand := func(i int, text, finish string) string {
		c := `{"content":{"parts":[{"text":"` + text + `"}],"role":"model"},"index":` + string(rune('0'+i))
		if finish != "" {
			c += `,"finishReason":"` + finish + `"`
		}
		return c + "}"
	}
	ev := func(cands ...string) string {
		return sseEvent(`{"candidates":[` + strings.Join(cands, ",") + `],"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`)
	}
	usage := sseEvent(`{"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`)
	tests := []struct {
		name   string
		events []string
		abort  bool // the connection drops instead of the body ending
		whole  bool
	}{
		{"finish seen", []string{ev(cand(0, "Hel", "")), ev(cand(0, "lo", "STOP"))}, false, true},
		{"finish seen, usage after", []string{ev(cand(0, "Hel", "")), ev(cand(0, "", "MAX_TOKENS")), usage}, false, true},
		{"finish not seen", []string{ev(cand(0, "Hel", "")), ev(cand(0, "lo", ""))}, false, false},
		{"usage without a finish", []string{ev(cand(0, "Hel", "")), usage}, false, false},
		{"a blocked prompt", []string{sseEvent(`{"promptFeedback":{"blockReason":"SAFETY"}}`)}, false, true},
		{"finish seen, then the connection drops", []string{ev(cand(0, "Hel", "STOP"))}, true, false},
		{"n=2, one finished", []string{ev(cand(0, "a", ""), cand(1, "b", "")), ev(cand(0, "", "STOP"))}, false, false},
		{"n=2, the other finished", []string{ev(cand(0, "a", ""), cand(1, "b", "")), ev(cand(1, "", "STOP"))}, false, false},
		{"n=2, both finished", []string{ev(cand(0, "a", ""), cand(1, "b", "")), ev(cand(1, "", "STOP")), ev(cand(0, "", "STOP"))}, false, true},
		{"n=2, both finished in one event", []string{ev(cand(0, "a", "STOP"), cand(1, "b", "STOP"))}, false, true},
		{"candidate 1 after candidate 0 finished", []string{ev(cand(0, "a", "STOP")), ev(cand(1, "b", ""))}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newUpstream(t, Config{}, func(w http.ResponseWriter, r *http.Request) {
				sseReply(tt.events...)(w, r)
				if tt.abort {
					panic(http.ErrAbortHandler)
				}
			})
			resp, err := a.Do(context.Background(), streamReq(true))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			chunks, err := drain(t, resp.Stream)
			if !tt.whole {
				oe := providertest.As[*outcome.Error](t, err)
				if errors.Is(err, io.EOF) || oe.Kind != outcome.Network {
					t.Fatalf("end %v (kind %v), want a cut (network, not io.EOF)", err, oe.Kind)
				}
				return
			}
			if err != io.EOF {
				t.Fatalf("end %v, want io.EOF (a whole answer)", err)
			}
			if last := chunks[len(chunks)-1]; !gjson.Get(last, "usage").IsObject() || gjson.Get(last, "choices.#").Int() != 0 {
				t.Errorf("last chunk %s, want the usage chunk", last)
			}
		})
	}
}
