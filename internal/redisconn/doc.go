// Package redisconn is the router's one connection to the shared state
// (shared_state; docs/ARCHITECTURE.md, "Fleet"): the `shared_state:`
// block, the go-redis universal client it configures (one server, TLS,
// Sentinel or Cluster; password from the environment, never logged), and
// whether the shared state is up. Its users are the fleet's per-provider
// state (internal/fleet) and the stored responses
// (internal/responses/store/redisstore); they share its up or down.
//
// Model: Redis is an optimisation, never a dependency of serving.
//
//	          New: a ping answers             first failed call of any user
//	start ──► up ──────────────────────────────────────────────► down
//	  │        ▲                                                   │
//	  └────────┼── New: no answer ─────────────────────────────────┤
//	           └──────────── a ping answers (once a second) ◄──────┘
//
// Invariants:
//   - Every call is bounded by shared_state.timeout; go-redis retries
//     nothing and dials once, so a request never waits on a Redis that is
//     gone for longer than that.
//   - The first failure a user reports (Fail) marks the connection down:
//     one warning, llmrouter_shared_state_up 0, and
//     llmrouter_shared_state_errors_total{op} counts it. While down the
//     users make no call on the request path and decide locally.
//   - While down, the connection's one goroutine pings once a second (and
//     loads the preloaded Lua scripts); the first answer marks it up.
//     Close stops it.
//   - A router starts while Redis is down: New never fails for that.
package redisconn
