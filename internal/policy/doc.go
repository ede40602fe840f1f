// Package policy is the `routing:` block (docs/ARCHITECTURE.md,
// "Configuration"): how requests are routed, in one value the config
// decodes, the routing state keeps and the attempt loop follows whole.
// Each part is its mechanism's own Config (route's weights, backoff's
// retry waits, affinity, hedging); this package composes them with the
// settings no smaller package owns (the shedding threshold, the wait for
// the better tier), gives their defaults and validates them, each error
// naming its key.
//
// A new routing setting is a field here (with its default and its check),
// its line in configs/default.yaml, the docs, and the code that reads it:
// nothing in between copies it.
package policy
