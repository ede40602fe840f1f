// Package provider defines what the proxy asks of an adapter and the helpers
// every adapter shares: the bounded upstream transport, Retry-After parsing,
// classification of transport errors, and the provider's common Config.
//
// One adapter per API family lives below this package (openai, azure,
// anthropic, gemini, bedrock, vertex, simulated). An adapter translates an
// OpenAI-shaped Request into its provider's call, and its provider's
// answer back into OpenAI-shaped bytes; it classifies every failure into
// an *outcome.Error exactly once. Adapters never call the breaker, the
// buckets or each other (bedrock and vertex reuse the anthropic and gemini
// packages' translation functions, which are not adapters' calls).
//
// Bodies of OpenAI-family providers pass through unchanged except the model
// name (Request.AppendBody); translating adapters decode the body themselves.
//
// Each adapter package describes its provider type with a Type: the name a
// provider entry gives as `type:`, whether it needs an API key, its block
// of options (`azure:`, `simulated:`) and how to build the adapter. The
// binary lists the Types it serves in one place (cmd/router), with no
// init-time registration; the config package learns the types from that
// list. Adding a provider type is a package exporting its Type plus one
// line in that list.
package provider
