// Package redisstore keeps the Responses API's stored responses in the
// shared state's Redis, so that every replica of a fleet reads, deletes
// and continues what another one stored (shared_state;
// docs/ARCHITECTURE.md, "Responses API").
//
// Store is the store.Store in Redis: one hash per response, the chain of
// turns walked by a Lua script in one round trip, every key expiring.
// Shared is the store of a router in a fleet: Store while the shared
// state is up, the router's own store.Memory while it is down, so that a
// response is never lost for want of Redis and an id this replica cannot
// look up is never answered as not found.
//
// Invariants:
//   - Every Redis call is bounded by shared_state.timeout and never by the
//     client's cancellation; a failed one is reported to the connection
//     (op responses), which marks the shared state down for every user.
//   - store.ErrNotFound only when Redis answered: a failure to ask it is another
//     error, and the handler answers 503, never 404.
//   - A conversation is stored whole or not at all: larger than
//     responses.max_bytes, or longer than MaxTurns, is store.ErrTooLarge.
package redisstore
