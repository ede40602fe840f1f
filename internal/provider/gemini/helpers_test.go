package gemini

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testNow is the adapter's wall clock in every test: 2026-07-15 11:30 PDT.
var testNow = time.Date(2026, 7, 15, 18, 30, 0, 0, time.UTC)

// seen is one request the fake upstream received.
type seen struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// upstream is a fake Gemini endpoint on httptest that records requests.
type upstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func (u *upstream) requests() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.reqs...)
}

// last returns the one request the upstream must have received.
func (u *upstream) last(t testing.TB) seen {
	t.Helper()
	r := u.requests()
	if len(r) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(r))
	}
	return r[0]
}

// newUpstream starts a fake Gemini that records each request and lets h
// answer it, and an adapter pointed at it with a fixed clock.
func newUpstream(t testing.TB, c Config, h http.HandlerFunc) (*Adapter, *upstream) {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: b})
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(u.srv.Close)
	a, err := New(provider.Config{Name: "gemini", Type: "gemini", BaseURL: u.srv.URL}, "test-key", c, u.srv.Client())
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

// decodeJSON decodes s for a semantic comparison.
func decodeJSON(t testing.TB, s []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(s, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", s, err)
	}
	return v
}

// assertJSON compares two JSON documents semantically.
func assertJSON(t testing.TB, what string, got []byte, want string) {
	t.Helper()
	g, w := decodeJSON(t, got), decodeJSON(t, []byte(want))
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\ngot  %s\nwant %s", what, got, compact(want))
	}
}

func compact(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

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

// outcomeOf returns the *outcome.Error in err, failing the test if none.
func outcomeOf(t testing.TB, err error) *outcome.Error {
	t.Helper()
	var oe *outcome.Error
	if !errors.As(err, &oe) {
		t.Fatalf("error %v (%T) carries no *outcome.Error", err, err)
	}
	return oe
}

func chatReq(body string) *provider.Request {
	return &provider.Request{Op: provider.OpChat, Model: "gemini-2.5-flash", Body: []byte(body)}
}
