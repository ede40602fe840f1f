// Package fleet shares each provider's state across a fleet of routers
// through Redis (shared_state; docs/ARCHITECTURE.md, "Fleet"): one breaker,
// one half-open probe, one request and token budget, and the Retry-After,
// quota and target blocks of every provider, whichever replica learned
// them. It implements shared.Fleet (internal/upstream/shared), one handle
// per provider, on the connection internal/redisconn keeps.
//
// Model: a provider's shared state is one Redis hash (with its probe lock
// and disabled targets beside it, in one Cluster slot), changed only by
// the Lua scripts in scripts.go, on Redis's clock, built from one Lua file
// per mechanism in lua/ (breaker, buckets, quota; each tested against its
// Go original by a step table in testdata):
//
//   - admit: the one round trip on the request path (breaker, quota,
//     blocks, both budgets);
//   - record: an attempt's outcome, queued and written by one goroutine,
//     pipelined, off the request path;
//   - probeStart / probeDone: one probe for the whole fleet;
//   - view, enable, disable: the once-a-second read of every provider,
//     an operator's enable, a disabled target.
//
// Spend (spend.go) keeps the client keys' state beside it: each key's
// spend per period and its RPM/TPM buckets (keyAdmit and keyAdjust in
// scripts.go, buckets.lua's ceilings), one round trip per admission,
// corrections and additions queued on its own writer.
//
// Redis is an optimisation, never a dependency of serving: every call is
// bounded by shared_state.timeout; the first failure marks the shared
// state down (internal/redisconn), and until a ping succeeds again (once
// a second) every decision is local, with no Redis call on the request
// path at all. The two goroutines (sync and write loops) belong to the
// Client and stop at Close.
//
// Beside the providers: Spend, the client keys' spend (one number per key
// and period), and Affinity, where each conversation was served last (one
// string key per conversation, read by a follow-up turn with one GET,
// written by its own queued writer), each on the same connection.
package fleet
