// Package prober drives a circuit breaker's probes
// (docs/ARCHITECTURE.md, "Breaker"): the loop that waits, without polling,
// until the breaker says a probe is due, runs one bounded by a timeout,
// reports it, and waits again. The breaker decides (lazily, when asked)
// whether a probe is due and keeps it single-flight; this loop owns the
// timer and the goroutine, so the breaker has none (CoreDNS's
// plugin/pkg/up plays the same part for its forward plugin).
//
// Invariants:
//   - Run returns soon after its context ends: at once while waiting, when
//     the probe returns while probing (the probe gets the context).
//   - It never spins: a probe taken by another caller is waited for on the
//     breaker's change signal, or a while.
package prober
