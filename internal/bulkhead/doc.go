// Package bulkhead caps how many attempts are in flight to one provider
// (docs/ARCHITECTURE.md, "Bulkhead"), after Prometheus util/gate.
//
// Model: a Bulkhead is a counting semaphore that never blocks. TryAcquire
// takes a permit or says no at once, so the attempt loop can skip a full
// provider in favour of the next candidate; Release gives the permit back.
// Waiting is the caller's business: only when every candidate is full does a
// request wait, bounded by its deadline, and it waits on a Signal that all
// bulkheads share, because a permit freed on any candidate may serve it.
//
// Invariants:
//
//   - 0 <= InFlight() <= Cap() at every instant (when Cap() > 0); the count
//     moves by compare-and-swap, so it never overshoots, not even briefly.
//   - One permit is released exactly once. A Release without a
//     matching TryAcquire panics: it is a programming error, and letting the
//     count drift would silently lift the cap.
//   - A Signal's channel is closed by the first Release (of any bulkhead
//     sharing it) after the channel was handed out, and a fresh channel is
//     armed by the next C. Release decrements before it signals, so a waiter
//     that takes C before its last TryAcquire never misses a release made in
//     between.
//
// The waiting pattern:
//
//	for {
//		c := sig.C() // first
//		if b.TryAcquire() {
//			break
//		}
//		select {
//		case <-c:
//		case <-ctx.Done():
//			return ctx.Err()
//		}
//	}
//
// Cost: TryAcquire and Release are a few atomic operations and allocate
// nothing; Release with a Signal nobody waits on adds one atomic load. A
// Signal allocates one channel per wake-up round, and only when someone asked
// for it.
package bulkhead
