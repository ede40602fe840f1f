// Package failover is the attempt loop (docs/ARCHITECTURE.md, "Retries
// and failover"): for one request it ranks the model's targets, admits
// each through its provider's runtime (internal/upstream), calls the
// adapter, and on a retryable failure moves on to the next candidate at
// once or retries the same provider after its backoff, within
// max_attempts and the request's deadline, keeping the last attempt for
// the local fallback tier while it is usable.
//
// Walk writes nothing to a client. It returns how the attempts ended: an
// answer to write (Served, whose Done releases a stream's permit once the
// stream is over), a provider's client error to pass through, the client
// gone, or nothing served, with the Run recording the attempts, failures
// and refusals the caller shapes its answer from.
package failover
