package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

const (
	benchReq       = `{"model":"m","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."}],"temperature":0.3,"max_tokens":64}`
	benchStreamReq = `{"model":"m","stream":true,"messages":[{"role":"user","content":"Say hello in five words please."}]}`
	benchAnswer    = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, nice to meet."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":6,"total_tokens":26}}`
)

// discard is a minimal ResponseWriter so handler benchmarks measure the
// router, not httptest.ResponseRecorder.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// BenchmarkHandlerNonStream is the router's own cost per non-stream
// request: read, parse, route, attempt, write (the adapter answers at once).
func BenchmarkHandlerNonStream(b *testing.B) {
	s := newServer(b, limits.Config{}, nil, target{name: "p", a: &fake{do: ok(benchAnswer)}})
	h := s.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(benchReq))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(&discard{h: http.Header{}}, r)
	}
}

// BenchmarkHandlerStream is the router's own cost per 50-chunk stream.
func BenchmarkHandlerStream(b *testing.B) {
	chunks := make([]string, 0, 52)
	chunks = append(chunks, roleChunk)
	for i := 0; i < 50; i++ {
		chunks = append(chunks, textChunk)
	}
	chunks = append(chunks, stopChunk)
	s := newServer(b, limits.Config{}, nil, target{name: "p", a: &fake{do: streamOf(io.EOF, 0, chunks...)}})
	h := s.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(benchStreamReq))
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(&discard{h: http.Header{}}, r)
	}
}

// upstreamServer is a zero-latency OpenAI-shaped fake provider.
func upstreamServer(tb testing.TB) *httptest.Server {
	var stream strings.Builder
	stream.WriteString("data: " + roleChunk + "\n\n")
	for i := 0; i < 50; i++ {
		stream.WriteString("data: " + textChunk + "\n\n")
	}
	stream.WriteString("data: " + stopChunk + "\n\ndata: [DONE]\n\n")
	streamBody := stream.String()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, streamBody)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-ratelimit-remaining-requests", "4999")
		io.WriteString(w, benchAnswer)
	}))
}

// benchRouter is client → router (real HTTP) → openai adapter → fake
// upstream (real HTTP).
func benchRouter(b *testing.B) (string, func()) {
	up := upstreamServer(b)
	a, err := openai.New(openai.Compatible, provider.Config{Name: "up", BaseURL: up.URL + "/v1", MaxConcurrency: 256}, "", openai.Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "up", Model: "gpt-4o-mini"}}}})
	s, err := Open(routing.Options{Providers: []provider.Descriptor{{Name: "up", Adapter: a, Config: provider.Config{MaxConcurrency: 256}}},
		Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30e9}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	return srv.URL + "/v1/chat/completions", func() { srv.Close(); up.Close(); s.Close() }
}

func benchEndToEnd(b *testing.B, body string) {
	url, stop := benchRouter(b)
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkEndToEndNonStream and BenchmarkEndToEndStream measure a whole
// proxied request over loopback (client, router and upstream all in this
// process, so allocations include all three).
func BenchmarkEndToEndNonStream(b *testing.B) { benchEndToEnd(b, benchReq) }
func BenchmarkEndToEndStream(b *testing.B)    { benchEndToEnd(b, benchStreamReq) }
