// Package proxy is llmrouter's HTTP front door (docs/ARCHITECTURE.md,
// "Front doors", "Request path"): front-door APIs mounted as dialects on
// one seam, and the steps every API request takes before and after its
// attempts: client authentication, the body read within the limits,
// priority shedding's decision, the request's deadline, the call of the
// attempt loop (internal/failover), and the one answer
// (internal/answer).
//
// A Dialect is one API: its routes, how a route reads a request into the
// router's own (Call: the provider request, its token estimate, how the
// result is reshaped), its error shape and its api label. The chat family
// (chat completions, completions, embeddings) is the front door's own;
// the Responses API (internal/responses/api) and the Messages API
// (internal/messages/api) are dialects of their packages, mounted by
// Register. The models list and unknown routes are shared: a dialect
// that claims a request (Dialect.Claims) answers them in its shape.
//
// Request life:
//
//	authenticate → read body (bounded) → dialect's Read (a few fields, no
//	full decode; the model looked up) → shed or admit → attempt loop →
//	dialect's Shape → exactly one answer
//
// The routing state (providers and their runtimes, models, limits, client
// keys) is internal/routing's, handed in by internal/daemon; a request
// keeps the State it started with. OpenAI-family adapters forward the
// client's body unchanged except for the model name.
package proxy
