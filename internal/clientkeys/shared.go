package clientkeys

import (
	"context"
	"time"

	"github.com/llmrouter/llmrouter/internal/budget"
)

// Shared is the fleet's number for each key's spend in each period
// (shared_state; docs/ARCHITECTURE.md, "Client keys and spend"), as
// internal/fleet keeps it in Redis. Every method is safe for concurrent
// use.
type Shared interface {
	// Up reports whether the shared state is reachable; while it is not,
	// nothing is asked of it and every decision is local.
	Up() bool
	// Spend reads the fleet's spend of key in period (budget.Period.ID),
	// in one round trip bounded by the shared state's timeout; an error
	// means it is unreachable now (decide locally).
	Spend(ctx context.Context, key, period string) (budget.Nano, error)
	// Add adds amount to it without waiting; done receives the fleet's
	// number after the addition, or an error (the amount is then sent
	// again later). expire is when the number may be forgotten.
	Add(key, period string, amount budget.Nano, expire time.Time, done func(total budget.Nano, err error))
}

// share brings k's budget and the fleet's number together at now, before
// an admission: the fleet's number is read (the one round trip a request
// with a budget costs), and spend this process recorded that the fleet
// does not have yet is sent. Unreachable, it does nothing.
func (k *Key) share(ctx context.Context, now time.Time) {
	if k.sh == nil || !k.sh.Up() {
		return
	}
	id := k.bud.ID(now)
	total, err := k.sh.Spend(ctx, k.name, id)
	if err != nil {
		return
	}
	k.bud.Observe(now, id, total)
	k.send(now)
}

// send hands the spend the fleet does not have yet to it.
func (k *Key) send(now time.Time) {
	if k.sh == nil || !k.capped || !k.sh.Up() {
		return
	}
	id, amount := k.bud.TakeUnsent(now)
	if amount == 0 {
		return
	}
	bud := k.bud
	k.sh.Add(k.name, id, amount, expiry(bud.Period(), now), func(total budget.Nano, err error) {
		bud.Sent(id, amount, total, err == nil)
	})
}

// expiry is when the fleet may forget a period's number: a day after the
// period ends, or a year after the last spend for a total.
func expiry(p budget.Period, now time.Time) time.Time {
	if end := p.End(p.Start(now)); !end.IsZero() {
		return end.Add(24 * time.Hour)
	}
	return now.Add(365 * 24 * time.Hour)
}
