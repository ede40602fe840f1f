// Package route turns the configured models into routing tables and ranks
// a model's targets for one request.
//
// A model names the targets that may serve it, each a (provider, provider's
// model, tier) triple. Tier 0 is tried first; higher tiers are fallbacks,
// the last usually a local model. The table is immutable once built: a
// reload builds a new one, so a request keeps the table it started with.
//
// Ranking is the selection policy (docs/ARCHITECTURE.md, "Selection"): the
// returned order is the order the attempt loop walks. Route never calls a
// provider, a breaker or a bucket; it only reads what it is given.
package route
