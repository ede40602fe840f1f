package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

// TestSendHead: an answer's fields read through the Head SendHead returns
// are the same on internal/h1's transport (which makes no header map:
// resp.Header is nil) and on net/http's (the answer's own map), and
// Header is the map net/http makes; an Activity still sees the body.
func TestSendHead(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["x-ratelimit-limit-requests"] = []string{" 60 "} // sent as is, read canonicalised
		h["Set-Cookie"] = []string{"a=1", "b=2"}
		h["Retry-After"] = []string{"2"}
		h["Date"] = []string{"Mon, 07 Dec 2026 14:00:00 GMT"}
		io.WriteString(w, "{}")
	}))
	defer up.Close()
	for _, c := range []struct {
		name   string
		client *http.Client
		lean   bool
	}{
		{"h1", NewHTTPClient(Config{BaseURL: up.URL, MaxConcurrency: 1}), true},
		{"net/http", &http.Client{Transport: &http.Transport{}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer c.client.CloseIdleConnections()
			act := new(Activity)
			ctx := context.WithValue(context.Background(), ActivityKey{}, act)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, up.URL, nil)
			resp, head, err := SendHead(c.client, req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got := resp.Header == nil; got != c.lean {
				t.Errorf("resp.Header nil: %v, want %v", got, c.lean)
			}
			for k, want := range map[string]string{"X-Ratelimit-Limit-Requests": "60", "Set-Cookie": "a=1", "Content-Length": "2",
				"Content-Type": "text/plain; charset=utf-8", "X-Absent": ""} {
				if got := head.Get(k); got != want {
					t.Errorf("Get(%q) = %q, want %q", k, got, want)
				}
			}
			if got := head.RetryAfter(time.Now()); got != 2*time.Second {
				t.Errorf("RetryAfter = %v, want 2s", got)
			}
			want := http.Header{"X-Ratelimit-Limit-Requests": {"60"}, "Set-Cookie": {"a=1", "b=2"}, "Retry-After": {"2"},
				"Date": {"Mon, 07 Dec 2026 14:00:00 GMT"}, "Content-Length": {"2"}, "Content-Type": {"text/plain; charset=utf-8"}}
			if got := head.Header(); !reflect.DeepEqual(got, want) {
				t.Errorf("Header = %v, want %v", got, want)
			}
			if b, err := io.ReadAll(resp.Body); string(b) != "{}" || err != nil {
				t.Errorf("body %q %v, want {}", b, err)
			}
			if act.reads.Load() == 0 {
				t.Error("the Activity saw no read of the body")
			}
		})
	}
}
