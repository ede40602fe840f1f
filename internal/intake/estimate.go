package intake

import "math"

// DefaultMaxTokens is the completion budget EstimateTokens assumes when the
// request sets no max_tokens.
const DefaultMaxTokens = 256

// bytesPerToken is the usual rule of thumb for English text with BPE
// tokenizers (OpenAI: "1 token ≈ 4 characters").
const bytesPerToken = 4

// EstimateTokens estimates what a request will cost against a token budget
// before it is sent: the whole body at bytesPerToken bytes a token, rounded
// up, plus maxTokens (DefaultMaxTokens when 0 or less). Counting the whole
// JSON body, keys and punctuation included, errs high for English prompts;
// CJK text and base64 images can go either way. Providers charge in the
// same spirit (Azure estimates prompt plus max_tokens on arrival), and
// Reservation.Reconcile corrects the estimate to the real usage afterwards.
func EstimateTokens(body []byte, maxTokens int64) int64 {
	maxTokens = CompletionBudget(maxTokens)
	prompt := (int64(len(body)) + bytesPerToken - 1) / bytesPerToken
	if maxTokens > math.MaxInt64-prompt {
		return math.MaxInt64 // saturate: a huge max_tokens must not wrap negative
	}
	return prompt + maxTokens
}

// CompletionBudget is the completion part of EstimateTokens' estimate for
// a request's maxTokens: maxTokens, or DefaultMaxTokens when 0 or less.
func CompletionBudget(maxTokens int64) int64 {
	if maxTokens <= 0 {
		return DefaultMaxTokens
	}
	return maxTokens
}
