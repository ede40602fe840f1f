// Package breaker keeps one circuit breaker per provider
// (docs/ARCHITECTURE.md, "Breaker"): a small state machine of our own that
// counts a closed spell's outcomes in sony/gobreaker v2's two-step breaker.
//
//	               trip: consecutive failures or failure ratio over the
//	               window (gobreaker's ReadyToTrip), or one auth/quota
//	┌────────┐     failure; window retired, gen+1                 ┌──────┐
//	│ closed │ ─────────────────────────────────────────────────► │ open │
//	└────────┘                                                    └──────┘
//	  ▲  new window, gen+1                   cooldown over,          │  ▲
//	  │  growth reset                        noticed lazily, gen+1   │  │
//	  │                      ┌───────────┐                           │  │
//	  └───────────────────── │ half_open │ ◄─────────────────────────┘  │
//	    the probe succeeds   └───────────┘ ─────────────────────────────┘
//	                                        the probe fails: reopen, gen+1,
//	                                        cooldown ×multiplier ≤ max
//
// Model:
//   - Closed admits real requests (Allow) and counts their outcomes (Done)
//     in a rolling window of ten buckets. Only kinds that count
//     (outcome.Kind.Counts) are seen: OK is a success, any other counted kind
//     a failure; client errors and cancellations change nothing.
//   - Open and half-open refuse every real request at once with an
//     *OpenError carrying how long until the next probe is due (a 503's
//     Retry-After). Real requests are never the probe.
//   - The cooldown depends on the kind that tripped: the provider's own wait
//     for rate_limited when it gave one (else cooldown.rate_limit),
//     cooldown.timeout for timeout, cooldown.failure otherwise. It grows
//     ×multiplier on each consecutive trip (a failed probe's reopen is one),
//     up to cooldown.max; a close resets the growth.
//   - When the cooldown is over, exactly one probe at a time may run
//     (Probe; internal/breaker/prober's loop drives it); its success
//     closes, its failure reopens.
//
// # What gobreaker does here, and what it does not
//
// gobreaker's closed state is exactly ours (a rolling window in buckets,
// outcomes counted in their admission's bucket, a ReadyToTrip over the
// counts), so each closed spell is one gobreaker.TwoStepCircuitBreaker:
// Allow its first step, Done its second, Threshold.trips its ReadyToTrip.
// Its open and half-open states are not ours (a fixed timeout where ours
// depends on the kind and grows; whoever asks first where ours admits
// only the prober): a window that trips is retired, and the states,
// cooldowns, probe slot and generations live in Breaker, written plainly.
// Auth and quota trip without asking the window.
//
// # Invariants
//
//   - One mutex (Breaker.mu) guards the state machine and every call into
//     the window; a window is only ever called under it, so the window's
//     lock is never contended.
//   - Every admission returns a Ticket stamped with the generation; the
//     generation changes at every transition, and an outcome with an older
//     stamp is dropped before it reaches a window. A 40-second stream that
//     began before a trip cannot close the breaker, or count in the next
//     closed spell, afterwards.
//   - Lazy: no timers or goroutines inside the Breaker. Open becomes
//     half-open when someone looks. Decisions take now as an argument;
//     the window (gobreaker) and Probe read time.Now(), so tests
//     run inside testing/synctest. Pass monotonic times (time.Now()), so
//     cooldowns and windows never jump with the wall clock
//     (docs/ARCHITECTURE.md, "Time").
//   - The loop that waits for NextProbe and runs the probe is
//     internal/breaker/prober's, in its owner's goroutine.
//
// # Outside the process
//
// Export and Restore carry the state machine across a restart, Sync
// mirrors a fleet's (docs/ARCHITECTURE.md, "Warm restart" and "Fleet");
// either way transitions go through OnStateChange, and a breaker that
// comes back open has its probe, never a real request, decide.
package breaker
