// Package confirm keeps one provider's confirmations of suspected kinds
// (docs/ARCHITECTURE.md, "Classification"). A provider's error whose words
// alone say quota or a missing model may be a request's own words quoted
// back (an unknown anthropic-beta value, a block's tag): the adapter marks
// it a client error that suspects the kind (outcome.Error.Suspect), and
// before the router blocks the provider or disables the target, one
// minimal request of its own (the target's model, max_tokens 1, nothing of
// the client's) must meet the same answer.
//
//	a suspicion ──► a verdict younger than every? ── yes ──► that verdict
//	                     │ no
//	                     ▼
//	                a check running? ── yes ──► wait for its verdict (or ctx)
//	                     │ no
//	                     ▼
//	                run the check; remember its verdict for every
//
// Invariants:
//   - One mutex guards the verdicts and the checks in flight; the check
//     runs outside it.
//   - Per key (a kind, and for a missing target its model), at most one
//     check is in flight and at most one starts per every
//     (breaker.cooldown.failure): a client repeating a quoted word costs
//     the provider one request per every, whatever the rate.
//   - A check that ended without a verdict (the request that ran it went
//     away) is not remembered: the next suspicion checks again.
//   - Decisions take now as an argument; waiting is bounded by the
//     waiter's context.
package confirm
