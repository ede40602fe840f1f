package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestActivity: a stream attempt's context lends Send an Activity, which
// then sees every byte of the answer; without one the body is untouched.
func TestActivity(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, ": ping\n\n")
	}))
	defer srv.Close()
	c := NewHTTPClient(Config{BaseURL: srv.URL})
	var a Activity
	ctx := context.WithValue(context.Background(), ActivityKey{}, &a)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := Send(c, req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !a.Watching() || resp.Body != io.ReadCloser(&a) {
		t.Fatal("the answer is not read through the Activity")
	}
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "ping") || a.Reads() == 0 {
		t.Fatalf("read %q; the Activity counted %d reads", b, a.Reads())
	}
	req2, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp2, err := Send(c, req2)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	if _, ok := resp2.Body.(*Activity); ok {
		t.Error("a request without an Activity had its body wrapped")
	}
}
