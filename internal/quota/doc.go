// Package quota keeps one provider's out-of-quota block
// (docs/ARCHITECTURE.md, "Classification"): a provider that answered
// quota (402, insufficient_quota, a spend limit, a wait of more than an
// hour) is off until the reset it named, an operator's enable, a reload
// that changes it, or its quota recheck, when exactly one real request
// checks whether quota is back. A models-list probe cannot tell, so the
// block lives here, apart from the breaker.
//
//	            a quota answer: the next check one recheck later
//	┌─────────┐ ─────────────────────────────────────────────► ┌─────────┐
//	│ serving │                                                │ blocked │ ◄─┐ a check meets quota:
//	└─────────┘ ◄───────────────────────────────────────────── └─────────┘ ──┘ one recheck later
//	            the named reset passes, Lift (an operator),
//	            a check answered with anything that counts
//
// Invariants:
//   - One mutex guards the block; Off mirrors it in an atomic, so a
//     provider that is serving costs the hot path one atomic load.
//   - At most one check is in flight; a check that did not reach the
//     provider gives its turn back (CheckDone).
//   - Decisions take now (a monotonic reading) as an argument; Export and
//     Restore carry the deadlines across a restart as wall-clock instants
//     (docs/ARCHITECTURE.md, "Warm restart"); Mirror shows the fleet's
//     block (docs/ARCHITECTURE.md, "Fleet").
package quota
