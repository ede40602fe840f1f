// Package proxy is llmrouter's front door (docs/ARCHITECTURE.md, "Request
// path"): the routes of the OpenAI chat family (chat completions,
// completions, embeddings) and of the models list, the steps every API
// request takes before its attempts (client authentication, the body read
// within the limits, the model looked up, priority shedding's decision,
// the request's deadline), the call of the attempt loop (internal/failover),
// and the routing state all of it reads.
//
// Request life:
//
//	read body (bounded) → read the few fields needed (no full decode) →
//	look up the model → shed or admit → attempt loop → exactly one answer
//
// The answer is internal/answer's: every path out of a handler hands a
// Result to its Writer, whose first byte is the commit point. Another
// API's handlers (the Responses API's, internal/responses/api) take the
// same steps through Request (Server.Begin), and mount their routes beside
// these on one mux (Server.Register); the admin listener (internal/admin)
// and the state file (internal/warm) read the providers through View.
//
// The client's body is read once and kept for every attempt; OpenAI-family
// adapters forward it unchanged except for the model name. A Server's
// routing state (providers, models, limits, client keys) sits behind an
// atomic pointer: Update swaps it, and a request keeps the state it started
// with.
package proxy
