package relay

import "testing"

// BenchmarkHasContent is the commit-point test on the payloads a stream
// starts with: chat chunks (the common case, whose cost must not grow
// with the native stream kinds) and a Responses API event.
func BenchmarkHasContent(b *testing.B) {
	for _, bm := range []struct {
		name, p string
		want    bool
	}{
		{"chat-role", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`, false},
		{"chat-text", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`, true},
		{"responses-created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress"}}`, false},
	} {
		p := []byte(bm.p)
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if hasContent(p) != bm.want {
					b.Fatal("wrong answer")
				}
			}
		})
	}
}
