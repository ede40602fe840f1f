package openai

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// TestCachedUsage: the part of the prompt read from OpenAI's cache is
// reported apart (it is billed at its own price), in answers, streams and
// the Responses API; reasoning tokens stay in the completion.
func TestCachedUsage(t *testing.T) {
	chat := `{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920},"completion_tokens_details":{"reasoning_tokens":200}}`
	want := outcome.Usage{PromptTokens: 2006, CompletionTokens: 300, CachedInput: 1920}
	if got := readUsage(provider.OpChat, gjson.Parse(chat)); got != want {
		t.Errorf("chat answer: got %+v, want %+v", got, want)
	}
	var s stream
	if !s.readUsage([]byte(`{"id":"c","choices":[],"usage":`+chat+`}`)) || s.usage != want {
		t.Errorf("chat stream: got %+v, want %+v", s.usage, want)
	}
	resp := `{"input_tokens":2006,"input_tokens_details":{"cached_tokens":1920},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":200}}`
	if got := readUsage(provider.OpResponses, gjson.Parse(resp)); got != want {
		t.Errorf("responses: got %+v, want %+v", got, want)
	}
}
