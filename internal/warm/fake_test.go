package warm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a scripted adapter.
type fake struct {
	calls atomic.Int32
	do    func(ctx context.Context, req *provider.Request) (*provider.Response, error)
}

func (f *fake) Supports(provider.Op) bool { return true }
func (f *fake) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	f.calls.Add(1)
	return f.do(ctx, req)
}

func ok(body string) func(context.Context, *provider.Request) (*provider.Response, error) {
	return func(context.Context, *provider.Request) (*provider.Response, error) {
		return &provider.Response{Body: []byte(body)}, nil
	}
}

func do(h http.Handler, method, path, ctype, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if ctype != "" {
		r.Header.Set("Content-Type", ctype)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
