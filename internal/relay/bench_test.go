package relay

import "testing"

// BenchmarkHasContent is the commit-point test on the payloads a stream
// starts with: chat chunks (the common case, whose cost must not grow
// with the native stream kinds), a Responses API event and Messages API
// events.
func BenchmarkHasContent(b *testing.B) {
	for _, bm := range []struct {
		name, p string
		want    bool
	}{
		{"chat-role", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`, false},
		{"chat-text", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}`, true},
		{"responses-created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress"}}`, false},
		{"messages-start", `{"type":"message_start","message":{"id":"msg_01S","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}`, false},
		{"messages-text", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`, true},
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
