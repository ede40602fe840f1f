// Package budget is one client key's spend cap (docs/ARCHITECTURE.md,
// "Client keys and spend"): the spend recorded in the current period (a
// UTC calendar day, week or month, or the key's whole life) and the
// estimates of the requests in flight, against the budget.
//
// Model (Budget): a request is admitted while the spend recorded plus
// the reservations in flight is under the budget, and reserves its
// estimate, at most what is left of the budget; when only reservations
// stand in the way it waits for the next settlement; once the recorded
// spend has reached the budget it is refused until the period resets.
// Settling a request replaces its reservation by its real cost. So a budget is passed by at most the real
// cost of the requests in flight when it was reached, and a refusal means
// spent, never merely busy.
//
// Invariants: one mutex guards a Budget; periods roll lazily, when someone
// looks, and never backwards (a clock set back does not reopen a period);
// time is an argument (wall time: periods are calendar spans); amounts are
// whole nano-dollars, so sums are exact here and in Redis, and saturate at
// MaxInt64 rather than wrap (the reservations never sum past the limit).
package budget
