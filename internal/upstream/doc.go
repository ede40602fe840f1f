// Package upstream is one provider's runtime: everything the router knows
// and decides about one provider, behind one small API
// (docs/ARCHITECTURE.md, "Request path").
//
// An Upstream composes the provider's circuit breaker and its serialized
// probe, the bulkhead, the RPM/TPM buckets with their Retry-After blocks,
// the out-of-quota block, the disabled targets, the adaptive throttle, the
// windowed stats and the slow-start ramp after a breaker closes. There is
// one way in and one way out:
//
//	Acquire(now, tokens) → *Permit | *Refusal (open, full, limited,
//	                       too large, throttled, quota; with the wait when known)
//	permit.Release(now, Result) → breaker, buckets, bulkhead, quota, stats,
//	                       throttle and the Observer all learn the attempt
//
// Acquire takes the parts in a fixed order (breaker, bulkhead, buckets,
// throttle) and gives back what it took when a later one refuses, so a
// refusal holds nothing and costs the provider nothing. A Permit is
// released exactly once (a second Release panics, like an unbalanced
// semaphore). In a fleet (shared_state) the breaker, budgets and blocks
// are the fleet's, asked through an internal/upstream/shared Handle in one
// round trip, and the local ones mirror the fleet's view; when the shared
// state fails the runtime decides alone, at once.
//
// Health is what ranking reads; Status is the /admin/providers row;
// Export and Restore carry what outlives the process (a record.State;
// docs/ARCHITECTURE.md, "Warm restart"): each mechanism's own state,
// deadlines as wall-clock instants, under a fingerprint of the settings
// it was learned with, so a provider configured otherwise starts fresh.
//
// Time comes in as an argument (now) from one injected clock; durations
// are measured on its monotonic reading. Nothing here calls back up: the
// router learns what happened from return values, the Observer counts and
// Changed tells the state-file saver. The runtime starts no goroutine: its
// prober loop (RunProber) runs in its owner's (internal/pool).
package upstream
