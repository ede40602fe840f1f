package anthropic

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/outcome"
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

// sameJSON fails t when got and want do not decode to equal values.
func sameJSON(t testing.TB, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got invalid JSON %s: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want is invalid JSON %s: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %s\n want %s", what, got, want)
	}
}

// asOutcome returns the *outcome.Error in err, failing t when there is none.
func asOutcome(t testing.TB, err error) *outcome.Error {
	t.Helper()
	var oe *outcome.Error
	if !errors.As(err, &oe) {
		t.Fatalf("got error %v (%T), want an *outcome.Error", err, err)
	}
	return oe
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
