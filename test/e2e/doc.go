// Package e2e tests the router end to end: a real HTTP client, the proxy
// served on an httptest server, the real provider adapters (OpenAI,
// OpenAI-compatible, Anthropic), and scriptable fake upstreams that inject
// faults at the wire level.
//
// Model:
//
//	http.Client ──► proxy.Server.Handler ──► adapters ──► fake upstreams
//	  (asserts the one answer)                          (status, error bodies,
//	                                                     resets, hangs, garbage,
//	                                                     slow or cut streams)
//
// The Responses API's tests mount internal/responses/api's routes beside
// the proxy's on one mux, as the daemon does.
//
// The package has no non-test code; this file only documents it. Its tests
// hold these invariants of docs/ARCHITECTURE.md ("Request path", "HTTP
// surface", "Behaviour"):
//   - Every request gets exactly one well-formed answer: a chat.completion,
//     an OpenAI-shaped error with Content-Type application/json, or a 200
//     event stream that ends with exactly one [DONE] or exactly one error
//     event, never both and nothing after either.
//   - Before the commit point a retryable failure fails over (to the other
//     provider of the tier, then to the next tier) within the configured
//     timeouts; a client error is passed through with the provider's
//     message; after the commit point a failure ends the stream with one
//     error event and no other provider is called.
//   - The router's X-LLMRouter-Provider, X-LLMRouter-Attempts and
//     X-LLMRouter-Degraded headers say who served and how.
//   - Once everything is closed no goroutine is left behind.
//
// Timing assertions are only generous upper bounds that catch hangs; the
// faulted providers' timeouts are short (200ms to the first token, 600ms
// per attempt) so the suite stays fast.
package e2e
