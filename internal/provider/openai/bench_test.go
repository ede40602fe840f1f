package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// benchServer is an httptest upstream that records nothing. Its own
// allocations (the server side of each request) count in the figures.
func benchServer(b *testing.B, h http.HandlerFunc) *httptest.Server {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h(w, r)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkDoNonStream is one chat completion through a local httptest
// upstream: request body assembly, the HTTP round trip, reading, JSON
// validation, usage and rate-limit headers.
func BenchmarkDoNonStream(b *testing.B) {
	srv := benchServer(b, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Request-Id", "req-1")
		h.Set("X-Ratelimit-Limit-Requests", "5000")
		h.Set("X-Ratelimit-Remaining-Requests", "4998")
		h.Set("X-Ratelimit-Reset-Requests", "24ms")
		h.Set("X-Ratelimit-Limit-Tokens", "800000")
		h.Set("X-Ratelimit-Remaining-Tokens", "791200")
		h.Set("X-Ratelimit-Reset-Tokens", "594ms")
		_, _ = io.WriteString(w, chatAnswer)
	})
	a := newTestAdapter(b, OpenAI, srv.URL+"/v1", "sk-bench", Config{})
	req := request(provider.OpChat, chatBody, "gpt-4o-mini", false)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := a.Do(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.Usage.PromptTokens != 12 {
			b.Fatalf("usage %+v", resp.Usage)
		}
	}
}

// fiftyChunks is a 50-content-chunk stream with include_usage, as OpenAI
// sends it.
func fiftyChunks() string {
	var sb strings.Builder
	for range 50 {
		sb.WriteString("data: ")
		sb.WriteString(chunks[1])
		sb.WriteString("\n\n")
	}
	sb.WriteString("data: " + chunks[3] + "\n\n")
	sb.WriteString("data: " + chunks[4] + "\n\n")
	sb.WriteString("data: [DONE]\n\n")
	return sb.String()
}

// BenchmarkStream50 is one streamed answer of 50 chunks (plus the finish
// and usage chunks) through a local httptest upstream, relayed payload by
// payload.
func BenchmarkStream50(b *testing.B) {
	raw := fiftyChunks()
	srv := benchServer(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, raw)
	})
	a := newTestAdapter(b, OpenAI, srv.URL+"/v1", "sk-bench", Config{})
	req := request(provider.OpChat, streamBody, "gpt-4o-mini", true)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := a.Do(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			if _, err := resp.Stream.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			n++
		}
		_ = resp.Stream.Close()
		if n != 52 || resp.Stream.Usage().CompletionTokens != 3 {
			b.Fatalf("got %d chunks, usage %+v", n, resp.Stream.Usage())
		}
	}
}

// BenchmarkStreamNext isolates the adapter's per-chunk cost (SSE framing,
// error and usage checks) from HTTP.
func BenchmarkStreamNext(b *testing.B) {
	raw := []byte(fiftyChunks())
	rd := bytes.NewReader(raw)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(raw)
		s := newStream(context.Background(), io.NopCloser(rd), "calling openai chat completions", "gpt-4o-mini")
		for {
			if _, err := s.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}

// BenchmarkDoNoNetwork is BenchmarkDoNonStream without sockets and server:
// the adapter's and net/http client's own cost per call.
func BenchmarkDoNoNetwork(b *testing.B) {
	answer := []byte(chatAnswer)
	hdr := http.Header{
		"Content-Type":                   {"application/json"},
		"X-Request-Id":                   {"req-1"},
		"X-Ratelimit-Limit-Requests":     {"5000"},
		"X-Ratelimit-Remaining-Requests": {"4998"},
		"X-Ratelimit-Reset-Requests":     {"24ms"},
	}
	a := newScriptedAdapter(b, func(r *http.Request) (*http.Response, error) {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
		return &http.Response{StatusCode: 200, Header: hdr, ContentLength: int64(len(answer)),
			Body: io.NopCloser(bytes.NewReader(answer)), Request: r}, nil
	})
	req := request(provider.OpChat, chatBody, "gpt-4o-mini", false)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Do(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRateLimit(b *testing.B) {
	h := http.Header{}
	h.Set("X-Ratelimit-Limit-Requests", "5000")
	h.Set("X-Ratelimit-Remaining-Requests", "4998")
	h.Set("X-Ratelimit-Reset-Requests", "24ms")
	h.Set("X-Ratelimit-Limit-Tokens", "800000")
	h.Set("X-Ratelimit-Remaining-Tokens", "791200")
	h.Set("X-Ratelimit-Reset-Tokens", "594ms")
	b.ReportAllocs()
	for b.Loop() {
		_ = ParseRateLimit(h, testNow)
	}
}
