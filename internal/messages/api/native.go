package api

import (
	"net/http"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// nativeRequest is a Messages request with room for the client's headers
// it forwards, in one allocation.
type nativeRequest struct {
	provider.Request
	headers [2]provider.Header
}

// withHeaders returns req with the client's Messages API headers that
// adapters serving the API natively forward as sent (provider.Request's
// Native: anthropic-version, and anthropic-beta joined), in one
// allocation, as many as a bare &provider.Request.
func withHeaders(h http.Header, req provider.Request) *provider.Request {
	n := &nativeRequest{Request: req}
	k := 0
	if v := h.Get("Anthropic-Version"); v != "" {
		n.headers[k] = provider.Header{Name: "Anthropic-Version", Value: v}
		k++
	}
	if v := betas(h); v != "" {
		n.headers[k] = provider.Header{Name: "Anthropic-Beta", Value: v}
		k++
	}
	if k > 0 {
		n.Native = n.headers[:k:k]
	}
	return &n.Request
}
