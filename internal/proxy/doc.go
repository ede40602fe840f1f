// Package proxy is llmrouter's front door: the OpenAI-compatible HTTP
// handlers, client authentication, body limits, the attempt loop that walks
// a model's ranked targets, the streaming relay, and the one function that
// writes errors.
//
// Request life:
//
//	read body (bounded) → read the few fields needed (no full decode) →
//	look up the model → for each target: adapter.Do → first content →
//	commit → relay → exactly one answer
//
// The commit point is the first byte written to the client. Before it, a
// failed attempt moves on to the next target and nothing reaches the
// client; a stream's role-only preamble chunks are held back until the
// first chunk with content, so a stream that dies before its first token
// still fails over. After it, a failure ends the stream with one SSE error
// event and no [DONE]; there is never a second response.
//
// The client's body is read once and kept for every attempt; OpenAI-family
// adapters forward it unchanged except for the model name. A Server's
// routing state (providers, models, limits) sits behind an atomic pointer:
// Update swaps it, and a request keeps the state it started with.
package proxy
