// Package shared is what a provider's runtime (internal/upstream) asks of
// a fleet's shared state and what the fleet answers (shared_state;
// docs/ARCHITECTURE.md, "Fleet"): the Fleet that hands out one Handle per
// provider, and the messages between them (the Decision on an attempt,
// the Record of what it taught, the View of the provider that the runtime
// mirrors, a probe's ProbeResult).
//
// The runtime uses it and internal/fleet implements it in Redis; the
// contract sits apart from both so that the fleet need not import the
// runtime it serves.
//
// Invariants:
//   - A Handle never blocks the request path for longer than one bounded
//     round trip (Admit); Record never blocks.
//   - An error from Admit or Probe means the shared state is unreachable
//     right now, never a decision: the runtime decides locally, at once.
//   - Durations cross relative to the fleet's clock; the runtime turns
//     them into local monotonic deadlines.
package shared
