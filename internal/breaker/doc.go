// Package breaker keeps one circuit breaker per provider
// (docs/ARCHITECTURE.md, "Breaker"), built on sony/gobreaker v2's
// TwoStepCircuitBreaker.
//
//	         trip: consecutive failures, failure ratio over the window,
//	         or a single auth/quota failure
//	closed ─────────────────────────────────────────────────► open
//	  ▲                                                      │  ▲
//	  │ probe succeeds:                  cooldown over       │  │ probe fails: reopen,
//	  │ close, reset growth              (noticed lazily)    ▼  │ cooldown ×multiplier ≤ max
//	  └────────────────────────────────────────────────── half_open
//
// Model:
//   - Closed admits real requests (Allow) and counts their outcomes (Done)
//     in gobreaker's rolling window. Only kinds that count
//     (outcome.Kind.Counts) are seen: OK is a success, any other counted kind
//     a failure; client errors and cancellations change nothing.
//   - Open and half-open refuse every real request at once with an
//     *OpenError carrying how long until the next probe is due (a 503's
//     Retry-After). Real requests are never the probe.
//   - The cooldown depends on the kind that tripped: the provider's own wait
//     for rate_limited when it gave one (else cooldown.rate_limit),
//     cooldown.timeout for timeout, cooldown.failure otherwise. It grows
//     ×multiplier on each consecutive trip (a failed probe's reopen is one),
//     up to cooldown.max; a close resets the growth. gobreaker's open timeout
//     is fixed, so this wrapper sets it to 1ns and keeps its own openUntil.
//   - When the cooldown is over, exactly one probe at a time may run
//     (Probe, RunProber); its success closes, its failure reopens.
//
// Invariants:
//   - One mutex (Breaker.mu) guards the wrapper and every call into
//     gobreaker, so checking the state and taking gobreaker's admission are
//     one step: gobreaker's half-open admits whoever asks first, and here that
//     is only ever the prober.
//   - Every admission returns a Ticket stamped with the generation; the
//     generation changes at every trip and close, and an outcome with an
//     older stamp is dropped. A 40-second stream that began before a trip
//     cannot close the breaker afterwards.
//   - Lazy: no timers or goroutines inside the Breaker. Open becomes
//     half-open when someone looks. Decisions take now as an argument;
//     gobreaker (and Probe, RunProber) read time.Now(), so tests run inside
//     testing/synctest. Pass monotonic times (time.Now()), so cooldowns and
//     windows never jump with the wall clock (docs/ARCHITECTURE.md, "Time").
//   - The only goroutine is RunProber's, owned by whoever starts it and
//     stopped by its context.
package breaker
