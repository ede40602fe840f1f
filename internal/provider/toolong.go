package provider

import (
	"regexp"
	"sync"
)

// How providers word a prompt too long for the model's context window
// (docs/ARCHITECTURE.md, "Context windows"), one shape per family. A
// prompt too long is a fact about one request on one target
// (outcome.ContextExceeded blocks nothing beyond it), yet a client must
// not be able to make a provider's 400 read as one by quoting words: the
// shapes hold the provider's numbers, and where a provider quotes input at
// a message's start (Anthropic: "{field}: Extra inputs are not
// permitted") the whole message must match. Each is compiled when first
// matched (an error's path), not at start ("at rest", "Memory" in docs/ARCHITECTURE.md).
var (
	// Anthropic, and Claude on Vertex and Bedrock: the whole message.
	anthropicTooLong = lazyRE(`^(?:The model returned the following errors: )?prompt is too long: \d+ tokens > \d+ maximum$`)
	// Bedrock Converse: the whole message.
	bedrockTooLong = lazyRE(`^(?:The model returned the following errors: )?Input is too long for requested model\.?$`)
	// OpenAI, Azure, vLLM (which sends no code): the message's start.
	openaiTooLong = lazyRE(`^This model's maximum context length is \d+ tokens`)
	// Gemini and Gemini on Vertex: the message's start.
	geminiTooLong = lazyRE(`^The input token count \(\d+\) exceeds the maximum number of tokens allowed \(\d+\)`)
)

// AnthropicTooLong reports whether msg is Anthropic's "prompt is too long:
// N tokens > M maximum", as Anthropic, Vertex and Bedrock send it.
func AnthropicTooLong(msg string) bool { return anthropicTooLong().MatchString(msg) }

// BedrockTooLong reports whether msg is Bedrock's "Input is too long for
// requested model." or Claude's own words through Bedrock.
func BedrockTooLong(msg string) bool {
	return bedrockTooLong().MatchString(msg) || anthropicTooLong().MatchString(msg)
}

// OpenAITooLong reports whether msg begins "This model's maximum context
// length is N tokens" (OpenAI, Azure, vLLM).
func OpenAITooLong(msg string) bool { return openaiTooLong().MatchString(msg) }

// GeminiTooLong reports whether msg begins "The input token count (N)
// exceeds the maximum number of tokens allowed (M)".
func GeminiTooLong(msg string) bool { return geminiTooLong().MatchString(msg) }

// lazyRE is expr compiled on first use.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
