// Package throttle is client-side adaptive throttling (Google SRE book,
// "Handling Overload"): each provider tracks, over a rolling two-minute
// window, how many attempts the router wanted to send (requests) and how
// many the provider accepted (accepts), and rejects a new attempt locally
// with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// so a provider that rejects most of what it gets is sent only about K
// times what it accepts, instead of being hammered by retries. A provider
// that accepts everything is never throttled (requests ≤ K·accepts for
// K ≥ 1).
//
// The window is a ring of time buckets rotated lazily from the now passed
// in; there are no goroutines. Locally rejected attempts count as
// requests, as in the book; a sent attempt counts when its outcome is
// known, so a burst of slow requests in flight is not mistaken for a
// provider refusing them.
//
// Minimum volume: nothing is rejected until the window holds at least
// min requests (breaker.failure_threshold.min_requests). Below it one or
// two failures would already reject about half of what follows, and the
// throttle would stand in for the breaker: in a full outage the breaker
// must see its threshold of real failures and open, so that clients get a
// fast 503 and no request reaches the dead provider between probes.
//
// Export and Restore carry the window across a restart
// (docs/ARCHITECTURE.md, "Warm restart"), its buckets' starts on the wall
// clock, aged by the time the router was down.
package throttle
