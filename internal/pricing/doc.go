// Package pricing is what a provider's model costs (docs/ARCHITECTURE.md,
// "Client keys and spend"): US dollars per million tokens of each class
// (input, cached input, cache write, output), from an embedded table of
// public list prices (dated: AsOf) overridden by the `pricing:` entries of
// the config, per provider and model or per model; and the cost of the
// usage a provider reported at those prices.
//
// A model no entry and no list price covers costs 0: the caller counts
// and reports it (unpriced_requests_total), so that an operator adds its
// price. Lookups never allocate: they run on every request.
package pricing
