package anthropic

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testNow is the adapter's clock in tests: created is its Unix time.
var testNow = time.Date(2026, 8, 21, 12, 40, 0, 0, time.UTC)

const testModel = "claude-haiku-4-5"

// newTestAdapter starts a fake Anthropic on h and returns an adapter bound
// to it, with the clock fixed at testNow.
func newTestAdapter(t testing.TB, h http.HandlerFunc) (*Adapter, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a, err := New(provider.Config{Name: "anthropic", BaseURL: srv.URL}, "sk-ant-test", Config{}, srv.Client())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a.now = func() time.Time { return testNow }
	return a, srv
}

func chatReq(body string) *provider.Request {
	return &provider.Request{Op: provider.OpChat, Model: testModel, Body: []byte(body)}
}

// sseBody renders Anthropic events as the wire format: "event: name" and
// "data: json" lines ended by a blank line.
func sseBody(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(e), &head); err != nil {
			panic("bad test event " + e)
		}
		b.WriteString("event: " + head.Type + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

// writeSSE answers 200 text/event-stream with body, flushed.
func writeSSE(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, body)
	w.(http.Flusher).Flush()
}

// drain reads s to its end, returning the chunks (copied) and the final error.
func drain(t testing.TB, s provider.Stream) ([]string, error) {
	t.Helper()
	var chunks []string
	for {
		c, err := s.Next()
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, string(c))
		if len(chunks) > 1000 {
			t.Fatal("stream does not end")
		}
	}
}
