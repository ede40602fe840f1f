package providertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Request is what an Upstream received.
type Request struct {
	Method string
	Path   string // r.URL.Path
	Query  string // r.URL.RawQuery, "" when none
	Header http.Header
	Body   []byte // the whole body; empty when none
}

// Upstream is a fake provider on httptest that records every request and
// lets a handler answer it.
type Upstream struct {
	// Server is the running server: its URL is the provider's base URL,
	// its Client trusts it. It closes when the test ends.
	Server *httptest.Server

	mu   sync.Mutex // guards reqs
	reqs []Request
}

// NewUpstream starts an Upstream whose handler h answers each request
// after it is recorded. The server closes when tb's test ends.
func NewUpstream(tb testing.TB, h http.HandlerFunc) *Upstream {
	tb.Helper()
	u := &Upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) // a server request's Body is never nil
		u.mu.Lock()
		u.reqs = append(u.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: b})
		u.mu.Unlock()
		h(w, r)
	}))
	tb.Cleanup(u.Server.Close)
	return u
}

// Requests returns a copy of the requests received so far, oldest first;
// nil when none.
func (u *Upstream) Requests() []Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Request(nil), u.reqs...)
}

// Only returns the one request the upstream must have received, failing
// tb at once when it received none or more than one.
func (u *Upstream) Only(tb testing.TB) Request {
	tb.Helper()
	r := u.Requests()
	if len(r) != 1 {
		tb.Fatalf("upstream got %d requests, want 1", len(r))
	}
	return r[0]
}

// Last returns the most recent request, failing tb at once when the
// upstream received none.
func (u *Upstream) Last(tb testing.TB) Request {
	tb.Helper()
	r := u.Requests()
	if len(r) == 0 {
		tb.Fatal("upstream saw no request")
	}
	return r[len(r)-1]
}

// Reply is a handler that answers every request with status, the header
// fields in header (nil for none) and body.
func Reply(status int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}
