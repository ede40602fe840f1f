// Package route turns the configured models into routing tables and ranks
// a model's targets for one request.
//
// A model names the targets that may serve it, each a (provider, provider's
// model, tier) triple, with an optional cap on its answers' length
// (max_output_tokens, applied per attempt by the attempt loop and the
// adapters). Tier 0 is tried first; higher tiers are fallbacks, the last
// usually a local model. The table is immutable once built: a reload
// builds a new one, so a request keeps the table it started with.
//
// A model name ending in `*` is a pattern serving every requested name
// with its prefix; a lone "*" is a catch-all. Lookup tries the exact name
// first (one map hit, the common case, as cheap as without patterns), then
// the patterns longest first: an exact name wins over a pattern, a longer
// pattern over a shorter one. The model found keeps its configured name, so
// labels stay bounded by the config however many names clients send.
//
// Ranking is the selection policy (docs/ARCHITECTURE.md, "Selection"): the
// returned order is the order the attempt loop walks. Route never calls a
// provider, a breaker or a bucket; it only reads what it is given.
package route
