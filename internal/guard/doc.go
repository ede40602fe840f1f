// Package guard composes the three per-provider protections into one
// admission decision: the circuit breaker, the bulkhead and the RPM/TPM
// buckets (DESIGN §5.3–5.5).
//
// Acquire takes them in a fixed order — breaker, then bulkhead, then
// buckets — and rolls back what it took when a later one refuses, so a
// refused attempt holds nothing. A granted attempt holds one Permit, which
// must be released exactly once with the attempt's result (a second
// Release panics: it is a bug, like an unbalanced semaphore release). The
// result feeds every mechanism: the breaker learns the kind (with the
// ticket's generation, so a stream that outlived a trip changes nothing),
// the buckets learn the real usage and the provider's announced budget,
// and a Retry-After blocks the provider until then.
//
// The guard never calls a provider except through the prober loop, which
// sends the breaker's single serialized probe to the adapter's free
// endpoint.
package guard
