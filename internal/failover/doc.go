// Package failover is the attempt loop (docs/ARCHITECTURE.md, "Retries
// and failover"): for one request it ranks the model's targets, admits
// each through its provider's runtime (internal/upstream), calls the
// adapter, and on a retryable failure moves on to the next candidate at
// once or retries the same provider after its backoff, within
// max_attempts and the request's deadline, keeping the last attempt for
// the local fallback tier while it is usable.
//
// Walk is five steps (steps.go): plan (rank and keep the targets that
// serve the op and whose context window the prompt estimate fits), admit (the permit, or the refusal kept and what it waits
// for), attempt, decide (a pure function of the outcome kind, the tries,
// the backoff, the announced wait, the time left and what is left of
// routing.retry.tier_wait: serve, return the client error, gone, disable
// the target, drop the candidate, outgrow it (a prompt too long for it),
// or retry it after a wait, holding its tier or not) and pause (until the earliest backoff or refill, or a
// freed bulkhead slot). Every decision reads the Loop's clock
// (Options.Now), the request's deadline converted onto it once; only the
// waits use real timers.
//
// An attempt whose client error only suspects a provider-wide kind
// (outcome.Error.Suspect: quota, a missing model, read from words a
// request may have put in the provider's error) waits, before decide,
// for the router's own minimal request to confirm it (confirm.go,
// docs/ARCHITECTURE.md, "Classification"): confirmed, the attempt ends
// in that kind; otherwise it stays the client's error.
//
// Each attempt sends the request with its target's model and its cap on
// the answer's length (Target.MaxOutputTokens, on provider.Request), which
// the adapter writes into the body; the target's buckets are charged the
// output limit as lowered (docs/ARCHITECTURE.md, "Output limits").
//
// Walk writes nothing to a client. It returns how the attempts ended: an
// answer to write (Served, whose Done releases a stream's permit once the
// stream is over), a provider's client error to pass through, the client
// gone, or nothing served, with the Run recording the attempts, failures
// and refusals the caller shapes its answer from.
package failover
