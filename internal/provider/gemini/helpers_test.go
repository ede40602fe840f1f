package gemini

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testNow is the adapter's wall clock in every test: 2026-07-15 11:30 PDT.
var testNow = time.Date(2026, 7, 15, 18, 30, 0, 0, time.UTC)

// newUpstream starts a fake Gemini that records each request and lets h
// answer it, and an adapter pointed at it with a fixed clock.
func newUpstream(t testing.TB, c Config, h http.HandlerFunc) (*Adapter, *providertest.Upstream) {
	t.Helper()
	u := providertest.NewUpstream(t, h)
	a, err := New(provider.Config{Name: "gemini", Type: "gemini", BaseURL: u.Server.URL}, "test-key", c, u.Server.Client())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a.now = func() time.Time { return testNow }
	return a, u
}

// reply answers with a fixed status and JSON body.
func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// sseReply streams events the way Gemini does (CRLF line ends, no [DONE]),
// flushing each, then ends the body.
func sseReply(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			_, _ = io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

func sseEvent(data string) string { return "data: " + data + "\r\n\r\n" }

// normalizeCallIDs replaces generated tool call ids ("call_" + 16 hex) by
// "call_X" after checking their shape, so documents compare exactly.
func normalizeCallIDs(t testing.TB, b []byte) []byte {
	t.Helper()
	s := string(b)
	var out strings.Builder
	for {
		i := strings.Index(s, `"id":"call_`)
		if i < 0 {
			out.WriteString(s)
			break
		}
		out.WriteString(s[:i] + `"id":"call_X"`)
		rest := s[i+len(`"id":"call_`):]
		j := strings.IndexByte(rest, '"')
		if j != 16 || strings.Trim(rest[:j], "0123456789abcdef") != "" {
			t.Errorf("tool call id %q is not call_ + 16 hex digits", rest[:j])
		}
		s = rest[j+1:]
	}
	return []byte(out.String())
}

func chatReq(body string) *provider.Request {
	return &provider.Request{Op: provider.OpChat, Model: "gemini-2.5-flash", Body: []byte(body)}
}
