package provider

import "testing"

// TestTooLong is the step table of the context-length messages providers
// send, and of messages that quote their words where a client's input
// goes.
func TestTooLong(t *testing.T) {
	for _, tt := range []struct {
		name  string
		check func(string) bool
		msg   string
		want  bool
	}{
		{"anthropic", AnthropicTooLong, "prompt is too long: 201234 tokens > 200000 maximum", true},
		{"anthropic: a field named so", AnthropicTooLong, "prompt is too long: 1 tokens > 0 maximum: Extra inputs are not permitted", false},
		{"anthropic: words only", AnthropicTooLong, "prompt is too long", false},
		{"claude on bedrock", BedrockTooLong, "The model returned the following errors: prompt is too long: 215000 tokens > 200000 maximum", true},
		{"bedrock converse", BedrockTooLong, "Input is too long for requested model.", true},
		{"bedrock wrapped", BedrockTooLong, "The model returned the following errors: Input is too long for requested model.", true},
		{"bedrock: a quoted block", BedrockTooLong, "The model returned the following errors: messages.0.content.0: Input is too long for requested model.", false},
		{"openai", OpenAITooLong, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.", true},
		{"openai: quoted later", OpenAITooLong, "Unrecognized request argument supplied: This model's maximum context length is 8 tokens", false},
		{"openai: no number", OpenAITooLong, "This model's maximum context length is", false},
		{"gemini", GeminiTooLong, "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).", true},
		{"gemini: quoted later", GeminiTooLong, `Invalid JSON payload received. Unknown name "The input token count (1) exceeds the maximum number of tokens allowed (0)"`, false},
		{"empty", AnthropicTooLong, "", false},
	} {
		if got := tt.check(tt.msg); got != tt.want {
			t.Errorf("%s: %q = %v, want %v", tt.name, tt.msg, got, tt.want)
		}
	}
}
