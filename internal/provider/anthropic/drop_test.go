package anthropic

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// keptResponse answers every request with a stream and keeps the
// answer it made, to see what the adapter leaves in it.
type keptResponse struct{ resp *http.Response }

func (k *keptResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	k.resp = &http.Response{StatusCode: 200, Request: req,
		Header: http.Header{"Content-Type": {"text/event-stream"}, "Anthropic-Ratelimit-Requests-Remaining": {"9"}},
		Body:   io.NopCloser(strings.NewReader("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))}
	return k.resp, nil
}

// keptCloud is a Cloud whose Post is keptResponse's.
type keptCloud struct{ k *keptResponse }

func (c keptCloud) Post(_ context.Context, _ *provider.Request, _ []byte, _ string) (*http.Response, error) {
	r, _ := http.NewRequest(http.MethodPost, "http://cloud.invalid/", nil)
	return c.k.RoundTrip(r)
}

func (keptCloud) Events(_ context.Context, body io.Reader) Events { return sse.NewReader(body) }

// TestStreamDropsHeaders: a stream answer's header map and the request it
// answers are not kept for the stream's life (a chunked body keeps its
// *http.Response), once the rate limits are read; on every stream path:
// chat and Messages, direct and on a cloud.
func TestStreamDropsHeaders(t *testing.T) {
	chat := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	msgs := []byte(`{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)
	for _, tc := range []struct {
		name  string
		op    provider.Op
		body  []byte
		cloud bool
	}{
		{"chat", provider.OpChat, chat, false},
		{"messages", provider.OpMessages, msgs, false},
		{"cloud-chat", provider.OpChat, chat, true},
		{"cloud-messages", provider.OpMessages, msgs, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &keptResponse{}
			req := &provider.Request{Op: tc.op, Model: "m", Stream: true, Body: tc.body}
			var resp *provider.Response
			var err error
			if tc.cloud {
				resp, err = OnCloud(t.Context(), keptCloud{k}, &CloudConfig{Version: "v"}, req)
			} else {
				a, nerr := New(provider.Config{Name: "up", BaseURL: "http://upstream.invalid"}, "k", Config{}, &http.Client{Transport: k})
				if nerr != nil {
					t.Fatal(nerr)
				}
				resp, err = a.Do(t.Context(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Stream.Close()
			if !tc.cloud && resp.RateLimit.RemainingRequests != 9 {
				t.Errorf("rate limit %+v, want the headers read", resp.RateLimit)
			}
			if k.resp.Header != nil {
				t.Error("the answer's header map is kept")
			}
			if k.resp.Request != nil {
				t.Error("the request is kept")
			}
		})
	}
}
