package gemini

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// TestNativeBody: the client's body as sent, but for the output cap and
// Google's documented sentinel on a Gemini 3 model turn's first call
// without a thoughtSignature (a history another target answered).
func TestNativeBody(t *testing.T) {
	const hist = `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"text":"ok"},{"functionCall":{"name":"a","args":{}}},{"functionCall":{"name":"b","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"a","response":{}}}]},{"role":"model","parts":[{"functionCall":{"name":"c","args":{}},"thoughtSignature":"real"}]}],"generationConfig":{"maxOutputTokens":9000}}`
	for _, tc := range []struct {
		name, model, body string
		max               int64
		want              map[string]string // path: raw value ("" absent)
		same              bool              // the body itself, unchanged
	}{
		{name: "gemini 3: first call of each step signed", model: "gemini-3-pro-preview", body: hist,
			want: map[string]string{"contents.1.parts.1.thoughtSignature": `"skip_thought_signature_validator"`,
				"contents.1.parts.2.thoughtSignature": "", "contents.3.parts.0.thoughtSignature": `"real"`,
				"generationConfig.maxOutputTokens": "9000"}},
		{name: "gemini 2.5: as sent", model: "gemini-2.5-flash", body: hist, same: true},
		{name: "capped", model: "gemini-2.5-flash", body: hist, max: 4096,
			want: map[string]string{"generationConfig.maxOutputTokens": "4096", "contents.1.parts.1.thoughtSignature": ""}},
		{name: "under the cap", model: "gemini-2.5-flash", body: hist, max: 10000, same: true},
		{name: "no calls", model: "gemini-3-flash", body: `{"contents":[{"parts":[{"text":"hi"}]}]}`, same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := []byte(tc.body)
			got := NativeBody(orig, tc.model, tc.max)
			if string(orig) != tc.body {
				t.Fatal("the client's body was modified")
			}
			if tc.same && string(got) != tc.body {
				t.Errorf("body %s, want it as sent", got)
			}
			for p, want := range tc.want {
				if v := gjson.GetBytes(got, p).Raw; v != want {
					t.Errorf("%s = %s, want %s", p, v, want)
				}
			}
		})
	}
}

// TestNativeStream: payloads as sent; the end after a finish reason is
// the answer's, before one a cut; an error event is its failure.
func TestNativeStream(t *testing.T) {
	ev := func(s string) string { return "data: " + s + "\r\n\r\n" }
	for _, tc := range []struct {
		name, body string
		n          int
		kind       outcome.Kind // of the end; OK is io.EOF
	}{
		{"whole", ev(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`) + ev(`{"candidates":[{"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2}}`), 2, outcome.OK},
		{"cut", ev(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`), 1, outcome.Network},
		{"error event", ev(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`) + ev(`{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`), 1, outcome.Overloaded},
		{"not JSON", ev(`{"candidates":`), 0, outcome.ServerError},
		// Two candidates, one finished: a clean end is a cut (every
		// candidate seen must finish, as the translated stream reads it).
		{"one of two finished", ev(`{"candidates":[{"index":0,"content":{"parts":[{"text":"a"}]}},{"index":1,"content":{"parts":[{"text":"b"}]}}]}`) +
			ev(`{"candidates":[{"index":0,"finishReason":"STOP"}]}`), 2, outcome.Network},
		{"both finished", ev(`{"candidates":[{"index":0,"content":{"parts":[{"text":"a"}]}},{"index":1,"content":{"parts":[{"text":"b"}]}}]}`) +
			ev(`{"candidates":[{"index":0,"finishReason":"STOP"},{"index":1,"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2}}`), 2, outcome.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewNativeStream(context.Background(), io.NopCloser(strings.NewReader(tc.body)), "gemini-x", time.Now())
			defer s.Close()
			n := 0
			var err error
			for {
				var p []byte
				if p, err = s.Next(); err != nil {
					break
				}
				if !gjson.ValidBytes(p) {
					t.Errorf("payload %q", p)
				}
				n++
			}
			if n != tc.n {
				t.Errorf("%d payloads, want %d", n, tc.n)
			}
			if tc.kind == outcome.OK {
				if !errors.Is(err, io.EOF) {
					t.Errorf("end %v, want io.EOF", err)
				}
				if u := s.Usage(); u.PromptTokens != 3 || u.CompletionTokens != 2 {
					t.Errorf("usage %+v", u)
				}
				return
			}
			if k := outcome.KindOf(err); k != tc.kind {
				t.Errorf("end %v (%s), want %s", err, k, tc.kind)
			}
		})
	}
}
