package budget

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBudgetProperty: any mix of estimates (hostile ones included: a
// max_tokens of 1e999 makes an estimate of MaxInt64 nano-dollars) and any
// interleaving of requests (each Reserve and Settle is atomic, so a
// random interleaving of them is what concurrency can produce): nothing
// is reserved below 0, no reservation is above the limit, and the final
// spend is at most the budget plus the real cost of the requests in
// flight when the spend reached it (issue 31, finding 2: the reservations
// overflowed and every later request was admitted).
func TestBudgetProperty(t *testing.T) {
	estimates := []Nano{0, 1, ToNano(0.001), ToNano(0.05), ToNano(0.2), ToNano(1e6), math.MaxInt64 / 2, math.MaxInt64 - 1, math.MaxInt64}
	costs := []Nano{0, 1, ToNano(0.001), ToNano(0.08), ToNano(0.3), math.MaxInt64}
	limits := []Nano{1, ToNano(0.2), ToNano(50), math.MaxInt64 / 2, math.MaxInt64}
	now := at("2025-06-04T10:00:00Z")
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 31))
		limit := limits[rng.IntN(len(limits))]
		b := New(limit, Total)
		type flight struct {
			r    Reservation
			cost Nano
		}
		var (
			inFlight []flight
			crossed  bool
			bound    Nano // the limit plus the costs in flight when the spend reached it
		)
		for step := range 200 {
			if len(inFlight) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(inFlight))
				f := inFlight[i]
				if before := b.Snapshot(now).Spend; !crossed && before+min(f.cost, limit-before) >= limit {
					crossed, bound = true, limit
					for _, g := range inFlight {
						bound = addSat(bound, g.cost)
					}
				}
				inFlight = append(inFlight[:i], inFlight[i+1:]...)
				b.Settle(now, f.r, f.cost)
			} else {
				est := estimates[rng.IntN(len(estimates))]
				d := b.Reserve(now, est)
				switch d.Verdict {
				case Admitted:
					if crossed {
						t.Fatalf("seed %d step %d: admitted after the spend reached the budget", seed, step)
					}
					if d.Reservation.amount > limit || d.Reservation.amount < 0 {
						t.Fatalf("seed %d step %d: reserved %d of a limit of %d", seed, step, d.Reservation.amount, limit)
					}
					inFlight = append(inFlight, flight{d.Reservation, costs[rng.IntN(len(costs))]})
				case Exceeded:
					if !crossed {
						t.Fatalf("seed %d step %d: exceeded with the spend %d under the limit %d", seed, step, b.Snapshot(now).Spend, limit)
					}
				}
			}
			s := b.Snapshot(now)
			var sum Nano
			for _, f := range inFlight {
				sum = addSat(sum, f.r.amount)
			}
			if s.Reserved < 0 || s.Spend < 0 || s.InFlight != len(inFlight) || s.Reserved != sum {
				t.Fatalf("seed %d step %d: %+v, want reserved %d (>= 0) for %d in flight", seed, step, s, sum, len(inFlight))
			}
		}
		for _, f := range inFlight {
			if !crossed && b.Snapshot(now).Spend+min(f.cost, limit) >= limit {
				crossed, bound = true, limit
				for _, g := range inFlight {
					bound = addSat(bound, g.cost)
				}
			}
			b.Settle(now, f.r, f.cost)
		}
		if s := b.Snapshot(now); crossed && s.Spend > bound {
			t.Fatalf("seed %d: spent %d, want at most %d (the limit %d and the costs in flight when it was reached)", seed, s.Spend, bound, limit)
		}
	}
}

func addSat(a, b Nano) Nano {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
