// Package reqctx is a request's context at the cost of the request's own
// allocation (docs/ARCHITECTURE.md, "Request contexts"). The standard
// library's contexts cost a request a dozen objects once they nest: each
// level's struct and cancel closure, the parent's Done channel made so
// that the child can be linked, the parent's children map, a timer and
// its closure, an AfterFunc's own context and stop closure. A request
// nests four of them (the server's hang-up, the request timeout, the
// attempt with its cause, the upstream exchange's watch).
//
// Model: a Ctx is one context.Context that its owner cancels with a
// cause (Cancel), that may carry a deadline (SetDeadline: one timer, for
// the request timeout, which it lends to one alarm at a time: Lend, the
// attempt's timeouts), and that calls watchers when it ends (Watch). It
// is a value a per-request struct embeds (Init), so it costs no
// allocation of its own; New allocates one for a level that has no such
// struct.
//
//   - A Ctx whose parent is a Ctx, or a context that only adds values to
//     one (its Done is the Ctx's), is linked to it as a watcher in an
//     inline slot: no map, no closure, no channel. Any other parent is
//     watched through context.AfterFunc.
//   - Done's channel is made only when someone asks for it; a Ctx ended
//     before that hands out one shared closed channel.
//   - Watch runs its function synchronously in the goroutine that ends
//     the Ctx (the hang-up watcher, the timer, the owner), outside any
//     lock: for short non-blocking work (putting a past deadline on a
//     socket). Unwatch takes its id: no allocation.
//   - The AfterFunc method (which context.AfterFunc and the standard
//     library's derived contexts use) runs its function in a goroutine of
//     its own, as context.AfterFunc documents.
//   - Err and Cause follow context.WithCancelCause and WithDeadline:
//     Cancel(cause) gives context.Canceled and cause (Canceled when nil),
//     the deadline gives DeadlineExceeded for both, and a parent's end
//     gives the parent's error and cause. The first end wins.
//
// context.Cause cannot see a Ctx's cause (it looks for the standard
// library's own type): Cause here does, for a Ctx or a context derived
// from one, and falls back to context.Cause for any other.
package reqctx
