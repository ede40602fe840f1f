package openai

import (
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testNow is the clock of every adapter built by newTestAdapter.
var testNow = time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)

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
	quoted, _ := openaiwire.Append(nil, &model)
	return body[:m.Index] + string(quoted) + body[m.Index+len(m.Raw):]
}
