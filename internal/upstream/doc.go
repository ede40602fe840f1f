// Package upstream is the per-provider runtime: everything the router
// knows and decides about one provider, behind one small API
// (docs/ARCHITECTURE.md, "Request path").
//
// An Upstream composes the provider's circuit breaker and its serialized
// probe, the bulkhead, the RPM/TPM buckets with their Retry-After blocks,
// the adaptive throttle, the windowed stats and the slow-start ramp after
// a breaker closes. There is one way in and one way out:
//
//	Acquire(now, tokens) → *Permit | *Refusal (open, full, limited,
//	                       too large, throttled; with the wait when known)
//	permit.Release(now, Result) → breaker, buckets, bulkhead, stats,
//	                       throttle and metrics all learn the attempt
//
// Acquire takes the parts in a fixed order (breaker, bulkhead, buckets,
// throttle) and gives back what it took when a later one refuses, so a
// refusal holds nothing and costs the provider nothing. A Permit is
// released exactly once (a second Release panics, like an unbalanced
// semaphore). Health is what ranking reads; Status is the /admin/providers
// row; Export and Restore carry what outlives the process
// (docs/ARCHITECTURE.md, "Warm restart"): each mechanism's own state,
// deadlines as wall-clock instants, under a fingerprint of the settings it
// was learned with, so a provider configured otherwise starts fresh; the
// Set's Changed channel tells the saver when something worth keeping
// changed. A Set owns the
// Upstreams of one configuration: across a reload it keeps the state of
// providers whose settings did not change, runs their probers, and deletes
// the metric series of providers that are gone.
//
// Time comes in as an argument (now) from one injected clock; durations
// are measured on its monotonic reading. Nothing here calls back up: the
// router learns what happened from return values, and the only goroutine
// is each provider's prober loop, owned by its Set.
package upstream
