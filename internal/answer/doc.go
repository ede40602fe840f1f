// Package answer writes a client request's one answer (docs/ARCHITECTURE.md,
// "Request path", step 6): every handler of the front door (internal/proxy)
// and of the Responses API (internal/responses/api) decides how its request
// ends as a Result before anything is written, and Writer.Answer turns that
// into the answer: the provider's answer (a stream relayed to its end), the
// provider's client error passed through, a JSON answer of the router's own,
// or one router error ("HTTP surface"). Nothing else writes to a client.
//
// The first byte written is the commit point: before it a request may still
// fail over, after it a failure ends the stream with one SSE error event.
// An Exchange is what one request carries to its answer, its log line and
// the request metrics (requests_total, the durations, overhead, degraded,
// recovered, client write timeouts), which Writer.Log records once the
// answer is written.
//
// Writes are bounded by limits.client_write_timeout ("Hostile clients"),
// and header values that are the same on every answer are shared slices,
// so that setting them does not allocate.
package answer
