package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// Anthropic events as the Messages API streams them.
const (
	evStart = `{"type":"message_start","message":{"id":"msg_01S","type":"message","role":"assistant","content":[],` +
		`"model":"claude-haiku-4-5-20251001","stop_reason":null,"stop_sequence":null,` +
		`"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":1}}}`
	evPing      = `{"type": "ping"}`
	evTextStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	evStop0     = `{"type":"content_block_stop","index":0}`
	evMsgStop   = `{"type":"message_stop"}`
)

func evText(i int, s string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%q}}`, i, s)
}

func evJSON(i int, s string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%q}}`, i, s)
}

func evDelta(stop string, out int) string {
	return fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, out)
}

// chunk is the expected OpenAI chunk with the stream's id, created, model.
func chunk(choice string) string {
	return fmt.Sprintf(`{"id":"msg_01S","object":"chat.completion.chunk","created":%d,"model":"claude-haiku-4-5-20251001","choices":[%s]}`,
		testNow.Unix(), choice)
}

func delta(d string) string {
	return chunk(`{"index":0,"delta":` + d + `,"logprobs":null,"finish_reason":null}`)
}

func finish(reason string) string {
	return chunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"` + reason + `"}`)
}

func usageChunk(prompt, completion, cached int) string {
	return fmt.Sprintf(`{"id":"msg_01S","object":"chat.completion.chunk","created":%d,"model":"claude-haiku-4-5-20251001","choices":[],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		testNow.Unix(), prompt, completion, prompt+completion, cached)
}

var roleChunk = delta(`{"role":"assistant","content":""}`)

func TestStream(t *testing.T) {
	textEvents := []string{
		evStart, evTextStart, evPing, evText(0, "Hello"), evText(0, ", \"world\"\n"), evText(0, ""), evStop0,
		`{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}`,
		evDelta("end_turn", 12), evMsgStop,
	}
	textChunks := []string{
		roleChunk, delta(`{"content":"Hello"}`), delta(`{"content":", \"world\"\n"}`), finish("stop"),
	}
	tests := []struct {
		name         string
		events       []string
		includeUsage bool
		want         []string
		wantUsage    outcome.Usage
	}{
		{"text with include_usage", textEvents, true, append(textChunks[:4:4], usageChunk(30, 12, 5)),
			outcome.Usage{PromptTokens: 30, CompletionTokens: 12, CachedInput: 5}},
		{"text without include_usage", textEvents, false, textChunks,
			outcome.Usage{PromptTokens: 30, CompletionTokens: 12, CachedInput: 5}},
		{
			name: "thinking dropped, tool calls numbered by a running counter",
			events: []string{
				evStart,
				`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`,
				evStop0,
				`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
				evText(1, "Checking."),
				`{"type":"content_block_stop","index":1}`,
				`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}`,
				evJSON(2, ""), evJSON(2, `{"city": `), evPing, evJSON(2, `"Oslo"}`),
				`{"type":"content_block_stop","index":2}`,
				`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_02","name":"now","input":{}}}`,
				evJSON(3, `{}`),
				`{"type":"content_block_stop","index":3}`,
				`{"type":"brand_new_event","index":9}`,
				evDelta("tool_use", 41), evMsgStop,
			},
			includeUsage: true,
			want: []string{
				roleChunk,
				delta(`{"content":"Checking."}`),
				delta(`{"tool_calls":[{"index":0,"id":"toolu_01","type":"function","function":{"name":"get_weather","arguments":""}}]}`),
				delta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}`),
				delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}`),
				delta(`{"tool_calls":[{"index":1,"id":"toolu_02","type":"function","function":{"name":"now","arguments":""}}]}`),
				delta(`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}`),
				finish("tool_calls"),
				usageChunk(30, 41, 5),
			},
			wantUsage: outcome.Usage{PromptTokens: 30, CompletionTokens: 41, CachedInput: 5},
		},
		{
			name:      "max_tokens is length",
			events:    []string{evStart, evTextStart, evText(0, "a"), evDelta("max_tokens", 1), evMsgStop},
			want:      []string{roleChunk, delta(`{"content":"a"}`), finish("length")},
			wantUsage: outcome.Usage{PromptTokens: 30, CompletionTokens: 1, CachedInput: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotBody []byte
			a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
				gotBody, _ = io.ReadAll(r.Body)
				w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "41")
				w.Header().Set("Request-Id", "req_stream")
				writeSSE(w, sseBody(tt.events...))
			})
			req := chatReq(`{"messages":[{"role":"user","content":"Hi"}],"stream":true}`)
			req.Stream, req.IncludeUsage = true, tt.includeUsage
			resp, err := a.Do(context.Background(), req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			if !strings.Contains(string(gotBody), `"stream":true`) {
				t.Errorf("got upstream body %s, want stream true", gotBody)
			}
			if resp.Body != nil || resp.RateLimit.RemainingRequests != 41 {
				t.Errorf("got body %q remaining %d, want nil 41", resp.Body, resp.RateLimit.RemainingRequests)
			}
			got, err := drain(t, resp.Stream)
			if err != io.EOF {
				t.Fatalf("got end %v, want io.EOF", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d chunks, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i := range got {
				providertest.SameJSON(t, fmt.Sprintf("chunk %d", i), []byte(got[i]), tt.want[i])
			}
			want := tt.wantUsage
			want.Model = "claude-haiku-4-5-20251001" // evStart's, not testModel asked for
			if u := resp.Stream.Usage(); u != want {
				t.Errorf("got usage %+v, want %+v", u, want)
			}
			if _, err := resp.Stream.Next(); err != io.EOF {
				t.Errorf("Next after the end: got %v, want io.EOF", err)
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		hijack     bool // close the connection without ending the chunked body
		wantChunks int
		wantKind   outcome.Kind
		wantStatus int
		wantType   string
	}{
		{"error event mid-stream",
			sseBody(evStart, evTextStart, evText(0, "Hel")) +
				"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			false, 2, outcome.Overloaded, 529, "overloaded_error"},
		{"error event before anything",
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal\"}}\n\n",
			false, 0, outcome.ServerError, 500, "api_error"},
		{"timeout error event is the provider's",
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"timeout_error\",\"message\":\"Request timed out\"}}\n\n",
			false, 0, outcome.ServerError, 504, "timeout_error"},
		{"error event of an unknown type",
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"weird_error\",\"message\":\"?\"}}\n\n",
			false, 0, outcome.Unknown, 0, "weird_error"},
		{"body ends before message_stop", sseBody(evStart, evTextStart, evText(0, "Hel")), false, 2, outcome.Network, 0, ""},
		{"connection cut mid-event", sseBody(evStart, evTextStart) + "event: content_block_delta\ndata: {\"type\":", true, 1, outcome.Network, 0, ""},
		{"invalid JSON event", sseBody(evStart) + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\n\n",
			false, 1, outcome.ServerError, 0, ""},
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
			req := chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`)
			req.Stream, req.IncludeUsage = true, true
			resp, err := a.Do(context.Background(), req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			got, err := drain(t, resp.Stream)
			if len(got) != tt.wantChunks {
				t.Errorf("got %d chunks before the error, want %d", len(got), tt.wantChunks)
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != tt.wantKind || oe.Status != tt.wantStatus || oe.Type != tt.wantType {
				t.Errorf("got kind %v status %d type %q, want %v %d %q", oe.Kind, oe.Status, oe.Type, tt.wantKind, tt.wantStatus, tt.wantType)
			}
			if _, again := resp.Stream.Next(); again != err {
				t.Errorf("Next after the failure: got %v, want the same error %v", again, err)
			}
		})
	}
}

func TestStreamContextEnds(t *testing.T) {
	firstTokenTimeout := &outcome.Error{Kind: outcome.Timeout, Message: "no first token in time"}
	tests := []struct {
		name     string
		cause    error
		wantKind outcome.Kind
	}{
		{"client went away", nil, outcome.Canceled},
		{"proxy timer with a cause", firstTokenTimeout, outcome.Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				writeSSE(w, sseBody(evStart))
				<-r.Context().Done()
			})
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			req := chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`)
			req.Stream = true
			resp, err := a.Do(ctx, req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			if _, err := resp.Stream.Next(); err != nil {
				t.Fatalf("first Next: %v", err)
			}
			cancel(tt.cause)
			_, err = resp.Stream.Next()
			if oe := providertest.As[*outcome.Error](t, err); oe.Kind != tt.wantKind {
				t.Errorf("got kind %v, want %v", oe.Kind, tt.wantKind)
			}
		})
	}
}

func TestStreamCloseIdempotent(t *testing.T) {
	a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeSSE(w, sseBody(evStart, evTextStart))
		<-r.Context().Done()
	})
	req := chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`)
	req.Stream = true
	resp, err := a.Do(context.Background(), req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if _, err := resp.Stream.Next(); err != nil {
		t.Fatalf("Next: %v", err)
	}
	// Closing in the middle releases the connection, so the fake
	// upstream's handler returns and the server can shut down.
	for i := range 2 {
		if err := resp.Stream.Close(); err != nil {
			t.Errorf("Close %d: got %v, want nil", i+1, err)
		}
	}
	if _, err := resp.Stream.Next(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("Next after Close: got %v, want a failure", err)
	}
}

func TestStreamErrorStatus(t *testing.T) {
	a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "4")
		w.WriteHeader(529)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	})
	req := chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`)
	req.Stream = true
	resp, err := a.Do(context.Background(), req)
	if resp != nil {
		t.Fatalf("got a response %+v, want none", resp)
	}
	if oe := providertest.As[*outcome.Error](t, err); oe.Kind != outcome.Overloaded || oe.RetryAfter == 0 {
		t.Errorf("got kind %v retry %v, want overloaded with a retry hint", oe.Kind, oe.RetryAfter)
	}
}

// TestStreamOddInputs feeds a stream straight from bytes (no network):
// TestStreamModel: both stream kinds report the model message_start
// names, not the one asked for; when it names none, Usage names none (the
// attempt then records the target's) and the chunks are the target's.
func TestStreamModel(t *testing.T) {
	noModel := strings.Replace(evStart, `"model":"claude-haiku-4-5-20251001",`, "", 1)
	for _, c := range []struct {
		name, start, wantChunk, wantUsage string
	}{
		{"named", evStart, "claude-haiku-4-5-20251001", "claude-haiku-4-5-20251001"},
		{"the target's", strings.Replace(evStart, "claude-haiku-4-5-20251001", testModel, 1), testModel, testModel},
		{"not named", noModel, testModel, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := sseBody(c.start, evTextStart, evText(0, "a"), evDelta("end_turn", 1), evMsgStop)
			chat := newStream(context.Background(), io.NopCloser(strings.NewReader(body)), testModel, testNow.Unix(), false)
			got, err := drain(t, chat)
			if err != io.EOF || len(got) == 0 {
				t.Fatalf("got %d chunks, end %v; want some, io.EOF", len(got), err)
			}
			if m := gjson.Get(got[0], "model").Str; m != c.wantChunk {
				t.Errorf("chunk model %q, want %q", m, c.wantChunk)
			}
			if m := chat.Usage().Model; m != c.wantUsage {
				t.Errorf("chat stream: usage model %q, want %q", m, c.wantUsage)
			}
			native := newNativeStream(context.Background(), io.NopCloser(strings.NewReader(body)), testModel)
			if _, err := drain(t, native); err != io.EOF {
				t.Fatalf("native stream: end %v, want io.EOF", err)
			}
			if m := native.Usage().Model; m != c.wantUsage {
				t.Errorf("native stream: usage model %q, want %q", m, c.wantUsage)
			}
		})
	}
}

// CRLF framing, comments, events without a name, out-of-range block
// indexes.
func TestStreamOddInputs(t *testing.T) {
	body := "event: message_start\r\ndata: " + evStart + "\r\n\r\n" + // CRLF framing
		": keep-alive comment\n\n" +
		"data: " + evText(0, "no event line, \u2028 survives") + "\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":7000,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"x\"}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":-1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}}\n\n" +
		sseBody(evDelta("pause_turn", 2), evMsgStop)
	s := newStream(context.Background(), io.NopCloser(strings.NewReader(body)), testModel, testNow.Unix(), false)
	got, err := drain(t, s)
	if err != io.EOF {
		t.Fatalf("got end %v, want io.EOF", err)
	}
	want := []string{roleChunk, delta(`{"content":"no event line, \u2028 survives"}`), finish("stop")}
	if len(got) != len(want) {
		t.Fatalf("got %d chunks, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range got {
		providertest.SameJSON(t, fmt.Sprintf("chunk %d", i), []byte(got[i]), want[i])
	}
}

// TestStreamCleanEnd is the clean-end rule (docs/ARCHITECTURE.md,
// "Streaming") on both stream kinds: a body that ends cleanly after
// message_delta gave the stop reason is a whole answer without its
// message_stop (translated: the finish chunk, then the usage chunk; native:
// the message_stop it lacked); without the stop reason, or when the
// connection drops rather than the body ending, it is a cut.
func TestStreamCleanEnd(t *testing.T) {
	head := []string{evStart, evTextStart, evText(0, "Hel"), evStop0}
	tests := []struct {
		name   string
		events []string
		hijack bool // close the connection without ending the chunked body
		whole  bool
	}{
		{"stop reason and message_stop", append(head[:4:4], evDelta("end_turn", 7), evMsgStop), false, true},
		{"stop reason, no message_stop", append(head[:4:4], evDelta("end_turn", 7)), false, true},
		{"stop reason, a ping, no message_stop", append(head[:4:4], evDelta("max_tokens", 7), evPing), false, true},
		{"no stop reason", head, false, false},
		{"usage without a stop reason", append(head[:4:4], `{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":7}}`), false, false},
		{"stop reason, then the connection drops", append(head[:4:4], evDelta("end_turn", 7)), true, false},
	}
	serve := func(t *testing.T, body string, hijack bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			writeSSE(w, body)
			if hijack {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				_ = conn.Close()
			}
		}
	}
	check := func(t *testing.T, s provider.Stream, whole bool) []string {
		t.Helper()
		got, err := drain(t, s)
		if !whole {
			oe := providertest.As[*outcome.Error](t, err)
			if errors.Is(err, io.EOF) || oe.Kind != outcome.Network {
				t.Fatalf("end %v (kind %v), want a cut (network, not io.EOF)", err, oe.Kind)
			}
			return nil
		}
		if err != io.EOF {
			t.Fatalf("end %v, want io.EOF (a whole answer)", err)
		}
		if _, again := s.Next(); again != io.EOF {
			t.Errorf("Next after the end: got %v, want io.EOF", again)
		}
		if u := s.Usage(); u.PromptTokens != 30 || u.CompletionTokens != 7 {
			t.Errorf("usage %+v, want 30 prompt and 7 completion tokens", u)
		}
		return got
	}
	for _, tt := range tests {
		t.Run("translated/"+tt.name, func(t *testing.T) {
			a, _ := newTestAdapter(t, serve(t, sseBody(tt.events...), tt.hijack))
			req := chatReq(`{"messages":[{"role":"user","content":"Hi"}]}`)
			req.Stream, req.IncludeUsage = true, true
			resp, err := a.Do(context.Background(), req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			got := check(t, resp.Stream, tt.whole)
			if tt.whole {
				reason := gjson.Get(tt.events[4], "delta.stop_reason").Str
				want := []string{roleChunk, delta(`{"content":"Hel"}`), finish(finishReason(reason)), usageChunk(30, 7, 5)}
				if !slices.Equal(got, want) {
					t.Errorf("got chunks\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
		t.Run("native/"+tt.name, func(t *testing.T) {
			a, _ := newNativeAdapter(t, "k", serve(t, sseBody(tt.events...), tt.hijack))
			resp, err := a.Do(context.Background(), messagesReq(t, strings.Replace(nativeBody, `"stream":false`, `"stream":true`, 1)))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Stream.Close()
			got := check(t, resp.Stream, tt.whole)
			if tt.whole {
				want := append(slices.Clone(tt.events), evMsgStop)
				if tt.events[len(tt.events)-1] == evMsgStop {
					want = tt.events
				}
				if !slices.Equal(got, want) {
					t.Errorf("got events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}
