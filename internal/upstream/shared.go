package upstream

import (
	"fmt"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// fleetPolicy is the policy the fleet's state of the provider follows:
// the runtime's, with the quota recheck in force.
func (u *Upstream) fleetPolicy() shared.Policy {
	pol := u.pol
	pol.QuotaRecheck = u.quota.Recheck()
	return pol
}

// acquireShared admits an attempt through the fleet's state: the bulkhead
// and adaptive throttle stay this process's own; breaker, quota, blocks
// and budgets are the fleet's, in one round trip. decided is false when
// the shared state failed: the caller decides locally.
func (u *Upstream) acquireShared(sh shared.Handle, now time.Time, tokens int64) (p *Permit, err error, decided bool) {
	if !u.bulk.TryAcquire() {
		u.obs.Refused(Full)
		return nil, &Refusal{Reason: Full, err: ErrFull}, true
	}
	if !u.throttle.Allow(now, u.rnd()) {
		u.bulk.Release()
		u.obs.Refused(Throttled)
		return nil, &Refusal{Reason: Throttled, err: ErrThrottled}, true
	}
	d, err := sh.Admit(tokens)
	if err != nil {
		u.bulk.Release()
		return nil, nil, false
	}
	u.applyView(d.View)
	if d.Reason == 0 {
		return &Permit{u: u, shared: true, gen: d.Gen, tokens: max(tokens, 0), quotaCheck: d.QuotaCheck}, nil, true
	}
	u.bulk.Release()
	r := &Refusal{Wait: d.Wait}
	switch d.Reason {
	case shared.Open:
		state := breaker.Open
		if d.Wait <= 0 {
			state = breaker.HalfOpen
		}
		r.Reason, r.err = Open, &breaker.OpenError{Name: u.name, State: state, Kind: d.View.Breaker.Kind, RetryIn: d.Wait}
	case shared.Limited:
		u.obs.Refused(Limited)
		r.Reason, r.err = Limited, &ratelimit.LimitedError{Wait: d.Wait, Limit: ratelimit.LimitRequests}
	case shared.TooLarge:
		r.Reason, r.err = TooLarge, fmt.Errorf("reserving %d tokens against the fleet's budget: %w", tokens, ratelimit.ErrTooLarge)
	default:
		r.Reason, r.err = Quota, ErrQuota
	}
	return nil, r, true
}

// applyView makes the local breaker, quota block and disabled targets
// mirror the fleet's view: what /admin/providers and the gauges show, and
// where this process starts from if the shared state becomes unreachable.
func (u *Upstream) applyView(v shared.View) {
	now := u.now()
	u.breaker.Sync(now, v.Breaker)
	if u.quota.Mirror(now, v.Quota, v.QuotaLeft) {
		u.changed()
	}
	if v.Targets != nil {
		u.targets.Replace(v.Targets)
	}
}

// Close ends the provider's fleet handle (its provider left the
// configuration); the runtime decides locally from then on.
func (u *Upstream) Close() {
	if u.shared != nil {
		u.shared.Close()
	}
}
