// Package stats keeps per-provider live statistics for the selector
// (docs/ARCHITECTURE.md, "Selection"): a sliding-window success rate, an
// exponential moving average of latency, windowed latency percentiles and
// the recency of the last success; with Export and Restore for warm
// restarts (state_file).
//
// Model:
//
//	ring of 12 time buckets, each Window/12 wide      epoch e = ⌊(now − origin) / width⌋
//	┌────┬────┬────┬─ … ─┬────┐
//	│e-11│e-10│e-9 │     │ e  │  ← head: the newest epoch seen
//	└────┴────┴────┴─ … ─┴────┘
//	each bucket: successes, failures, 128-bin latency histogram
//	plus running sums of all 12 (what Snapshot reads)
//
// In detail:
//   - Lazy rotation: there is no timer. Whoever calls (Observe, Snapshot,
//     Export) with a now in a newer epoch moves head forward and empties
//     the buckets that left the window, subtracting them from the running
//     sums. An outcome counts in the bucket of the now it was observed at
//     and leaves the window between 11/12 Window and Window later; one
//     observed with a now already outside the window is not counted in it.
//     A now older than head never rotates backwards.
//   - Only kinds that count (outcome.Kind.Counts) are observed: OK is a
//     success, any other counted kind a failure; client_error and canceled
//     leave no trace. Latency comes from successes only.
//   - Success rate has a prior of two virtual successes:
//     (successes + 2) / (requests + 2). An idle provider reads 1
//     (optimistic: new and quiet providers get traffic and so evidence),
//     and one early failure does not read as 0%.
//   - Latency histogram: fixed log-scale bins, underflow below 1ms, 126
//     bins of ratio ≈1.111 up to 10min, overflow above; a percentile is
//     the nearest-rank sample's bin, interpolated within it, so it is
//     within one bin (≈11%) of the truth. Memory is bounded: 12 × 128
//     counters whatever the traffic.
//   - LatencyEMA and the time of the last success are not windowed: they
//     describe the provider however long it has been quiet.
//   - Recency is 2^(−since last success / half-life); with no success ever
//     it is 0.5, neutral.
//   - Failing: the latest FailingStreak (2) counted outcomes were failures,
//     with no success since, the earlier of them within the window. It is
//     what makes a provider too quiet to trip its breaker count as down
//     for its failure domain. The streak is not persisted.
//
// Invariants:
//   - One mutex per Stats guards everything; Observe and Snapshot hold it
//     for O(1) work (rotation empties at most 12 buckets; a Snapshot walks
//     16 sums of 8 bins, then at most 8 bins per percentile) and never
//     allocate.
//   - No goroutines and no clock reads: time comes only from the now
//     arguments, which should be monotonic readings (time.Now(); see
//     docs/ARCHITECTURE.md, "Time"). The first call fixes the origin of
//     the epochs.
//   - The running sums (counts, histogram, its group sums) always equal
//     the sums over the 12 buckets.
//   - Persistence uses wall time only to measure how long the state spent
//     on disk (Persisted.SavedAtUnixMs against Restore's now); Restore
//     rebuilds the state aged by that gap.
package stats
