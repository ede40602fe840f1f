package gemini

import (
	"context"
	"net/http"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// What Google Vertex AI reuses of this package: its generateContent and
// streamGenerateContent take and answer the same documents as the Gemini
// API's, under another URL and another credential (docs/ARCHITECTURE.md,
// "Providers").

// TranslateChat is the generateContent body for an OpenAI chat request
// (provider.OpChat) to model, its output limit lowered to maxOutput (the
// target's cap, provider.Request's MaxOutputTokens) when that is above 0
// and exceeded; stream says the request streams (its decode then leaves
// the caller's goroutine). Its error is an *outcome.Error of kind ClientError: the
// request never reaches the network.
func TranslateChat(body []byte, model string, maxOutput int64, stream bool) ([]byte, error) {
	return translateChat(body, model, maxOutput, stream)
}

// TranslateCompletion is the OpenAI chat.completion for a
// GenerateContentResponse, and its usage and the model version that
// answered (model is the one asked for); now stamps created.
func TranslateCompletion(data []byte, model string, now time.Time) ([]byte, outcome.Usage, error) {
	return translateCompletion(data, model, now)
}

// NewStream returns the OpenAI chat.completion.chunk stream of a
// streamGenerateContent?alt=sse answer, bound to ctx until Close. It
// drops resp's header map and request (see newStream): read them first.
func NewStream(ctx context.Context, resp *http.Response, model string, includeUsage bool, now time.Time) provider.Stream {
	return newStream(ctx, resp, model, includeUsage, now)
}
