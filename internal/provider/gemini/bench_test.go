package gemini

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// cannedTransport answers every request in memory with the same body, so
// benchmarks measure the adapter, not sockets.
type cannedTransport struct {
	body        []byte
	contentType string
}

func (c *cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {c.contentType}},
		Body:       io.NopCloser(bytes.NewReader(c.body)),
		Request:    r,
	}, nil
}

func benchAdapter(b *testing.B, body []byte, contentType string) *Adapter {
	b.Helper()
	a, err := New(provider.Config{}, "k", Config{}, &http.Client{Transport: &cannedTransport{body: body, contentType: contentType}})
	if err != nil {
		b.Fatal(err)
	}
	a.now = func() time.Time { return testNow }
	return a
}

// benchChat is a typical request: a system prompt, a short history and a
// tool.
const benchChat = `{"model":"gpt-4o-mini","messages":[
	{"role":"system","content":"You are a helpful assistant. Answer briefly."},
	{"role":"user","content":"What's the weather in Oslo?"},
	{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
	{"role":"tool","tool_call_id":"call_1","content":"{\"temp\":21,\"sky\":\"clear\"}"},
	{"role":"user","content":"And should I bring an umbrella?"}],
	"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather by city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
	"temperature":0.7,"max_tokens":256}`

func BenchmarkDoNonStream(b *testing.B) {
	answer := []byte(`{
  "candidates": [{"content": {"parts": [{"text": "No umbrella needed: it is 21°C and clear in Oslo, with no rain expected today."}], "role": "model"},
    "finishReason": "STOP", "avgLogprobs": -0.2}],
  "usageMetadata": {"promptTokenCount": 96, "candidatesTokenCount": 21, "totalTokenCount": 117},
  "modelVersion": "gemini-2.5-flash", "responseId": "eXy7aKOzBoWk1MkPp7Wq4Ak"
}`)
	a := benchAdapter(b, answer, "application/json")
	req := chatReq(benchChat)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Do(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStream50(b *testing.B) {
	var sb strings.Builder
	for i := range 49 {
		sb.WriteString(sseEvent(`{"candidates":[{"content":{"parts":[{"text":"word ` + string(rune('a'+i%26)) + ` and some more text "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":96,"candidatesTokenCount":` + string(rune('1'+i%9)) + `,"totalTokenCount":100},"modelVersion":"gemini-2.5-flash","responseId":"eXy7aKOzBoWk1MkPp7Wq4Ak"}`))
	}
	sb.WriteString(sseEvent(`{"candidates":[{"content":{"parts":[{"text":"."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":96,"candidatesTokenCount":250,"totalTokenCount":346},"modelVersion":"gemini-2.5-flash","responseId":"eXy7aKOzBoWk1MkPp7Wq4Ak"}`))
	a := benchAdapter(b, []byte(sb.String()), "text/event-stream")
	req := chatReq(benchChat)
	req.Stream, req.IncludeUsage = true, true
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := a.Do(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := resp.Stream.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		resp.Stream.Close()
		if n != 51 {
			b.Fatalf("got %d chunks, want 51", n)
		}
	}
}

func BenchmarkTranslateChat(b *testing.B) {
	body := []byte(benchChat)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translateChat(body, "gemini-2.5-flash", 0, false); err != nil {
			b.Fatal(err)
		}
	}
}
