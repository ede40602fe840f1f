// Package pool owns the provider runtimes (internal/upstream) of the
// configuration in force (docs/ARCHITECTURE.md, "Reload and shutdown"):
// Update builds one per provider (its provider.Descriptor, under the
// runtime policy) and keeps the state of those whose description is Equal
// and whose policy did not change across a reload; the pool runs their probers,
// tells the state-file saver when something worth keeping changed
// (Changed), shares one freed-slot signal among their bulkheads (Freed),
// and counts and shows them: the per-provider metric families (each
// runtime's upstream.Observer) and the gauges read at scrape time
// (docs/ARCHITECTURE.md, "Metrics").
//
// Invariants:
//   - One goroutine per runtime, its prober loop (upstream.RunProber),
//     owned by the pool: Update restarts every one with its Descriptor's Probe,
//     Close stops them all and waits.
//   - Every series of a provider exists from the moment it is configured
//     and is deleted when a reload removes it.
//   - Changed never blocks its sender (the breaker calls it under its
//     lock): a burst of changes is one pending signal.
package pool
