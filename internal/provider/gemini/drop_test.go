package gemini

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// keptResponse answers every request with a stream and keeps the
// answer it made, to see what the adapter leaves in it.
type keptResponse struct{ resp *http.Response }

func (k *keptResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	k.resp = &http.Response{StatusCode: 200, Request: req, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(`data: {"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}` + "\n\n"))}
	return k.resp, nil
}

// TestStreamDropsHeaders: a stream answer's header map and the request it
// answers are not kept for the stream's life (a chunked body keeps its
// *http.Response), translated or native.
func TestStreamDropsHeaders(t *testing.T) {
	for _, tc := range []struct {
		op   provider.Op
		body string
	}{
		{provider.OpChat, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{provider.OpGemini, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
	} {
		t.Run(tc.op.String(), func(t *testing.T) {
			k := &keptResponse{}
			a, err := New(provider.Config{Name: "up", BaseURL: "http://upstream.invalid"}, "k", Config{}, &http.Client{Transport: k})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := a.Do(t.Context(), &provider.Request{Op: tc.op, Model: "gemini-2.5-flash", Stream: true, Body: []byte(tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Stream.Close()
			if k.resp.Header != nil {
				t.Error("the answer's header map is kept")
			}
			if k.resp.Request != nil {
				t.Error("the request is kept")
			}
		})
	}
}
