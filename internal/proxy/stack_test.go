package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// heldStream is an upstream stream body that sends its events, a
// finish and the usage included, then waits for release before [DONE].
type heldStream struct {
	r       *strings.Reader
	release <-chan struct{}
	sent    chan<- struct{}
	done    bool
}

func (b *heldStream) Read(p []byte) (int, error) {
	if b.r.Len() > 0 {
		return b.r.Read(p)
	}
	if b.done {
		return 0, io.EOF
	}
	b.sent <- struct{}{}
	<-b.release
	b.done = true
	return copy(p, "data: [DONE]\n\n"), nil
}

func (b *heldStream) Close() error { return nil }

type heldTransport struct {
	release <-chan struct{}
	sent    chan<- struct{}
}

func (t heldTransport) RoundTrip(*http.Request) (*http.Response, error) {
	events := "data: " + roleChunk + "\n\ndata: " + textChunk + "\n\ndata: " + stopChunk + "\n\n" +
		`data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"prompt_tokens_details":{"cached_tokens":5}}}` + "\n\n"
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &heldStream{r: strings.NewReader(events), release: t.release, sent: t.sent}}, nil
}

// TestStackPerStream: a stream waiting for its next event, after its
// finish and usage were read, holds a goroutine stack of at most 8 KiB:
// nothing on the request's path (planning, the attempt, reading the
// chunks) grows it to 16 KiB, which it would keep for the stream's life
// (docs/BENCHMARKS.md, "Memory per stream").
func TestStackPerStream(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("frame sizes differ under -race")
	}
	const n = 200
	release := make(chan struct{})
	sent := make(chan struct{}, n)
	pc := provider.Config{Name: "up", MaxConcurrency: 1024, BaseURL: "http://upstream.invalid/v1"}
	a, err := openai.New(openai.Compatible, pc, "", openai.Config{}, &http.Client{Transport: heldTransport{release, sent}})
	if err != nil {
		t.Fatal(err)
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "up", Model: "up-model"}}}})
	s, err := Open(routing.Options{Providers: []provider.Descriptor{{Name: "up", Adapter: a, Config: pc}}, Routing: policy.Config{},
		Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30e9}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan struct{}, n)
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(benchStreamReq))
			r.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(&discard{h: http.Header{}}, r)
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range n {
		select {
		case <-sent:
		case <-ctx.Done():
			t.Fatal("streams did not reach their wait")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	close(release)
	for range n {
		<-done
	}
	perStream := float64(after.StackInuse-before.StackInuse) / n
	t.Logf("%.1f KiB of goroutine stack per waiting stream", perStream/1024)
	if perStream > 12<<10 {
		t.Errorf("%.1f KiB of stack per waiting stream, want 8 (a frame on the path grew it to 16)", perStream/1024)
	}
}
