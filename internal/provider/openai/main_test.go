package openai

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testNow is the clock of every adapter built by newTestAdapter.
var testNow = time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)

// seen is what a fake upstream received.
type seen struct {
	method, path, query string
	header              http.Header
	body                string
}

// upstream is a fake provider on httptest that records every request and
// answers with handle.
type upstream struct {
	srv *httptest.Server

	mu   sync.Mutex // guards reqs
	reqs []seen
}

func newUpstream(tb testing.TB, handle http.HandlerFunc) *upstream {
	tb.Helper()
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		if r.Body != nil {
			buf := make([]byte, 4096)
			for {
				n, err := r.Body.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
		}
		u.mu.Lock()
		u.reqs = append(u.reqs, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b.String()})
		u.mu.Unlock()
		handle(w, r)
	}))
	tb.Cleanup(u.srv.Close)
	return u
}

// last returns the most recent request the upstream saw.
func (u *upstream) last(tb testing.TB) seen {
	tb.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		tb.Fatal("upstream saw no request")
	}
	return u.reqs[len(u.reqs)-1]
}

// newTestAdapter builds an adapter on base with the default HTTP client
// and the fixed test clock.
func newTestAdapter(tb testing.TB, f Flavor, base, key string, c Config) *Adapter {
	tb.Helper()
	a, err := New(f, provider.Config{Name: "test", Type: f.String(), BaseURL: base}, key, c, nil)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	a.now = func() time.Time { return testNow }
	tb.Cleanup(a.client.CloseIdleConnections)
	return a
}

// request builds a provider.Request for body, locating the client's model
// value the way the proxy does.
func request(op provider.Op, body, model string, stream bool) *provider.Request {
	m := gjson.Get(body, "model")
	return &provider.Request{
		Op: op, Model: model, Body: []byte(body),
		ModelStart: m.Index, ModelEnd: m.Index + len(m.Raw),
		Stream: stream,
	}
}

// withModel is body with its model value replaced by the JSON string of
// model and every other byte kept.
func withModel(body, model string) string {
	m := gjson.Get(body, "model")
	return body[:m.Index] + string(provider.AppendJSONString(nil, model)) + body[m.Index+len(m.Raw):]
}
