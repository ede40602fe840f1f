package clientkeys

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/llmrouter/llmrouter/internal/budget"
)

// Shared is the fleet's state of each key (shared_state;
// docs/ARCHITECTURE.md, "Client keys and spend"), as internal/fleet keeps
// it in Redis: its RPM/TPM buckets and its spend in each period. Every
// method is safe for concurrent use.
type Shared interface {
	// Up reports whether the shared state is reachable; while it is not,
	// nothing is asked of it and every decision is local.
	Up() bool
	// Admit is a key's one round trip at admission, bounded by the shared
	// state's timeout: it reads the fleet's spend of key in a.Period
	// (none when ""), and charges one request and a.Tokens to the key's
	// fleet-wide buckets (when a.RPM or a.TPM), all or nothing, unless
	// they refuse or that spend has reached a.Limit. An error means the
	// shared state is unreachable now (decide locally).
	Admit(ctx context.Context, key string, a SharedAdmit) (SharedVerdict, error)
	// Adjust charges requests and tokens more to the key's fleet-wide
	// buckets (negative: gives them back), without waiting; lost when the
	// shared state is down.
	Adjust(key string, rpm, tpm, requests, tokens int64)
	// Add adds amount to the key's spend in period without waiting; done
	// receives the fleet's number after the addition, or an error (the
	// amount is then sent again later). expire is when the number may be
	// forgotten.
	Add(key, period string, amount budget.Nano, expire time.Time, done func(total budget.Nano, err error))
}

// SharedAdmit is what Shared.Admit asks.
type SharedAdmit struct {
	RPM, TPM int64       // the key's limits (0: none; both 0: nothing charged)
	Tokens   int64       // the request's token estimate
	Period   string      // budget.Period.ID of the spend to read; "": none
	Limit    budget.Nano // the budget: spend at or past it charges nothing; 0: none
}

// SharedVerdict is Shared.Admit's answer.
type SharedVerdict struct {
	// Refused is 0 (admitted), Rate (Wait until it would fit), TooLarge,
	// or Budget (the spend has reached the limit); nothing was charged
	// unless admitted.
	Refused Reason
	Wait    time.Duration
	// Charged: the request was charged to the fleet's buckets (a later
	// Adjust corrects or gives it back).
	Charged bool
	// Spend is the fleet's spend of the key in the period asked.
	Spend budget.Nano
	// RequestsLeft and TokensLeft are what the fleet's buckets hold after
	// this admission (-1: no such limit), for /admin/keys.
	RequestsLeft, TokensLeft int64
}

// fleetLevels are the key's fleet-wide buckets as the last admission saw
// them (for /admin/keys; a display, so three separate atomics).
type fleetLevels struct {
	reqLeft, tokLeft, at atomic.Int64 // at: unix ns; 0 never
}

func (f *fleetLevels) store(now time.Time, v SharedVerdict) {
	f.reqLeft.Store(v.RequestsLeft)
	f.tokLeft.Store(v.TokensLeft)
	f.at.Store(now.UnixNano())
}

// inUse is what the fleet's requests hold of limit at now, from left
// seen at the last admission and refilled since (a minute refills all).
func (f *fleetLevels) inUse(now time.Time, limit int64, left *atomic.Int64) int64 {
	at := f.at.Load()
	l := left.Load()
	if at == 0 || l < 0 {
		return 0
	}
	refill := float64(now.UnixNano()-at) / float64(time.Minute) * float64(limit)
	return max(limit-min(l+int64(max(refill, 0)), limit), 0)
}

// admitShared asks the fleet to admit a request of k at now: the key's
// one round trip. ok is false when the fleet is unreachable (then the
// caller decides locally at once); otherwise the fleet's spend has been
// observed and r is the fleet's refusal, if any.
func (k *Key) admitShared(ctx context.Context, now time.Time, tokens int64) (charged bool, r *Refusal, ok bool) {
	if k.sh == nil || !k.sh.Up() {
		return false, nil, false
	}
	a := SharedAdmit{RPM: k.limits.RPM, TPM: k.limits.TPM, Tokens: max(tokens, 0)}
	var id string
	if k.capped {
		id = k.bud.ID(now)
		a.Period, a.Limit = id, budget.ToNano(k.limits.BudgetUSD)
	}
	v, err := k.sh.Admit(ctx, k.name, a)
	if err != nil {
		return false, nil, false
	}
	if k.capped {
		k.bud.Observe(now, id, v.Spend)
		k.send(now)
	}
	if k.lim != nil {
		k.fleet.store(now, v)
	}
	switch v.Refused {
	case Rate:
		return false, &Refusal{Reason: Rate, Wait: v.Wait}, true
	case TooLarge:
		return false, &Refusal{Reason: TooLarge}, true
	}
	// Budget: the budget below refuses with the time to its reset.
	return v.Charged, nil, true
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
