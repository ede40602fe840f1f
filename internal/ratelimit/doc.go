// Package ratelimit keeps each provider inside its request and token
// budgets (docs/ARCHITECTURE.md, "Rate buckets"): per-minute token buckets,
// charged all or nothing, corrected by what the provider announces.
//
// # Model
//
// A Limiter has two budgets, requests and tokens, and a Retry-After block.
// Each budget is seen through up to two token buckets, and a reservation
// must fit every bucket that exists:
//
//   - the ceiling: the configured rpm or tpm over our own usage, refilling at
//     that many per minute. Headers never touch it, so a configured value
//     stays a ceiling even when the provider announces more. Absent when
//     configured as 0.
//   - the provider bucket: the provider's own budget as last announced.
//     Capacity is the announced limit (else the configured value, the best
//     guess when a provider such as Azure announces remaining but no
//     limit); an announced remaining sets its level at that instant; it
//     refills at (limit-remaining)/reset when a reset came with a remaining
//     below the limit (a reset is the time until the budget is full again,
//     as OpenAI and Groq define it; the latest such figure is kept),
//     else at capacity per minute. Absent until an announcement gives it a
//     capacity.
//
// With neither bucket a budget is unlimited: rpm=0 and no headers means no
// local limit. Announced values that are unknown (counts < 0, durations <=
// 0; Azure's -1 and 0 arrive as unknown) change nothing.
//
// # Blocks
//
// A provider that announces remaining 0 gets no request on that budget
// before now+reset ("a request must not reach a provider that announced it
// has no budget left"); with no reset and no capacity to refill from, for a
// whole minute. Retry-After blocks every reservation until now+RetryAfter.
// Blocks only ever extend: a later, shorter announcement may have been
// computed earlier at the provider, so it cannot lift them.
//
// # Invariants
//
//   - Reserve charges one request and the token estimate together or not at
//     all: the check and the take happen under one mutex that guards both
//     budgets. A refusal charges nothing and says how long until the same
//     reservation would fit (LimitedError.Wait).
//   - A reservation larger than the whole token capacity fails with
//     ErrTooLarge rather than waiting for a budget that can never hold it.
//   - Each Reservation ends once: Reconcile (sent: correct the token charge
//     to the real usage, refund or extra charge, the level floored at minus
//     the capacity) or Cancel (not sent: give everything back). Later calls
//     do nothing.
//   - Announcements win over our own bookkeeping: when one sets the
//     provider bucket's level it starts a new generation, and reservations
//     from an older generation no longer adjust that bucket (their charge
//     went with the old level; refunding it would count it twice). The
//     ceiling is always adjusted: it only tracks our own usage.
//
// # Time
//
// Every decision takes now as an argument, so tests need no clock; pass a
// monotonic time.Now() (docs/ARCHITECTURE.md, "Time"). A now older than one
// already seen is treated as that one, so callers racing for the lock
// cannot make a bucket refill twice.
//
// # Warm restart
//
// Export and Restore carry a Limiter across a restart (docs/ARCHITECTURE.md,
// "Warm restart"): announced limits, learned refill rates, each bucket's
// level and the instant it was measured, the stale-detection fields and
// every block, with instants on the wall clock. Restore turns deadlines
// still ahead back into deadlines on the new process's clock, drops those
// already past, and lets levels refill for the time the router was down.
// Observe reports whether it set or extended a block, so the owner can
// save soon after (a request must not reach a provider that announced it
// has no budget left, not even after a restart).
//
// # Why not x/time/rate
//
// The buckets are a small type of our own (bucket: capacity, refill rate,
// level at a time), not golang.org/x/time/rate's Limiter, because every
// bucket here needs two operations a Limiter does not have:
//
//   - setting the level: an announced remaining replaces ours, higher or
//     lower. A Limiter's level only falls by charges and rises by refill;
//     SetLimitAt and SetBurstAt change the rate and the capacity, and a
//     smaller burst caps the level, but nothing raises it.
//   - giving back a past charge: Reconcile refunds an overestimate when the
//     call ends, and Cancel a request that was not sent, whenever that is
//     known. Reservation.CancelAt only reverses a
//     reservation whose time has not come yet (a waiter leaving the queue),
//     less what was reserved after it: a charge of 600 at 0 cancelled at
//     30s gives back nothing. Both the ceiling and the provider bucket need
//     refunds.
//
// Driving a Limiter there anyway means a new Limiter per announcement and
// refunds by a negative AllowN, behaviour x/time/rate does not document; and
// a rate.Limiter has its own mutex under ours, taken again for every
// TokensAt, AllowN and ReserveN of an all-or-nothing check, where a bucket
// is four fields under our one mutex. The arithmetic is the same token
// bucket: level + elapsed×rate, capped at the capacity, and the wait for n
// is the deficit over the rate, rounded up to the nanosecond.
// x/time/rate stays in the module for what it fits as is (rate.Sometimes
// thins repeated warnings in internal/proxy).
//
// # Known limits of the model
//
// An announced remaining is the provider's view when it answered; requests
// of ours still in flight then may or may not be in it, and it replaces our
// level as is. Anthropic rounds token remaining to thousands and resets to
// whole seconds, so the learned refill is rough while the budget is nearly
// full, which is when it matters least.
package ratelimit
