package upstream

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
)

// Fleet gives each provider its handle on the fleet's shared state
// (shared_state; docs/ARCHITECTURE.md, "Fleet"). The Set asks it once per
// Upstream it builds; sink receives the fleet's view of the provider
// whenever the Fleet reads it (at least once a second while reachable).
type Fleet interface {
	For(s Settings, sink func(SharedView)) Shared
}

// Shared is one provider's state as the whole fleet sees it. Every method
// is safe for concurrent use. An error from Admit or Probe means the
// shared state is unreachable right now: the caller decides locally, at
// once.
type Shared interface {
	// Up reports whether the shared state is reachable; while it is not,
	// nothing is sent to it.
	Up() bool
	// Admit decides one attempt of tokens estimated tokens for the whole
	// fleet, in one round trip: breaker, quota block, Retry-After and
	// budget blocks, and the request and token budgets (spent when it
	// admits).
	Admit(tokens int64) (SharedDecision, error)
	// Record reports what an attempt (or a stream's headers) taught; it
	// never blocks.
	Record(r SharedRecord)
	// Probe runs probe if this process wins the fleet's probe lock and
	// applies its verdict fleet-wide; otherwise it waits (until ctx ends)
	// for the holder's verdict. Either way it returns the fleet's view
	// after the verdict. An error means the shared state failed; the
	// result still says whether probe ran and what it returned.
	Probe(ctx context.Context, probe func(context.Context) error) (SharedProbe, error)
	// DisableTarget and Enable share a disabled target and an operator's
	// enable (targets and quota) with the fleet.
	DisableTarget(model, message string)
	Enable()
	// Close stops the handle (its provider left the configuration).
	Close()
}

// SharedDecision is the fleet's answer to Admit.
type SharedDecision struct {
	// Reason is 0 when admitted; otherwise why not (Open, Limited,
	// TooLarge or Quota) and Wait how long until it could be.
	Reason Reason
	Wait   time.Duration
	// Gen is the fleet breaker's generation the attempt was admitted in;
	// Record hands it back, so an outcome from before a trip or a close
	// changes nothing.
	Gen uint64
	// QuotaCheck marks the one attempt (fleet-wide) that checks whether a
	// provider out of quota is back.
	QuotaCheck bool
	View       SharedView
}

// SharedProbe is what Shared.Probe did.
type SharedProbe struct {
	View SharedView
	// Ran says whether this process probed; Err is then the probe's result.
	Ran bool
	Err error
}

// SharedView is the fleet's state of one provider at one instant.
type SharedView struct {
	Breaker breaker.Mirror
	// Quota is the fleet's out-of-quota block and how long until it could
	// lift (its reset or the next check).
	Quota     bool
	QuotaLeft time.Duration
	// TargetsGen changes whenever the disabled targets change; Targets is
	// filled (possibly empty) only when the Fleet read them.
	TargetsGen uint64
	Targets    map[string]string
}

// SharedRecord is one attempt's lesson for the fleet.
type SharedRecord struct {
	// Observe only: a stream's headers, before its end. No outcome.
	ObserveOnly bool
	// Gen is SharedDecision.Gen.
	Gen uint64
	// Health is what the breaker learns (outcome.Canceled: nothing);
	// Cooldown is the base cooldown a trip caused by it would start from.
	Health   outcome.Kind
	Cooldown time.Duration
	// LastKind is the kind to show as the last error (0: unchanged).
	LastKind outcome.Kind
	// RateLimit is what the provider announced, with RetryAfter set only
	// when it blocks the provider.
	RateLimit outcome.RateLimit
	// TokensDelta corrects the token estimate charged at admission (real
	// usage minus estimate; 0 leaves it).
	TokensDelta int64
	// Quota: the attempt met a quota error (QuotaReset is its reset, 0
	// unknown). QuotaCheck: the attempt was the fleet's quota check.
	Quota      bool
	QuotaReset time.Duration
	QuotaCheck bool
}

// Fingerprint names a provider's shared state: its name and the
// Fingerprint of its settings that the state file keeps
// (warm.Fingerprint.Key). It never includes a secret.
func (s Settings) Fingerprint() string { return fingerprintOf(s).Key(s.Provider.Name) }

// acquireShared admits an attempt through the fleet's state: the bulkhead
// and adaptive throttle stay this process's own; breaker, quota, blocks
// and budgets are the fleet's, in one round trip. decided is false when
// the shared state failed: the caller decides locally.
func (u *Upstream) acquireShared(sh Shared, now time.Time, tokens int64) (p *Permit, err error, decided bool) {
	if !u.bulk.TryAcquire() {
		u.m.bulkRejections.Inc()
		return nil, &Refusal{Reason: Full, err: ErrFull}, true
	}
	if !u.throttle.Allow(now, u.rnd()) {
		u.bulk.Release()
		u.m.throttled.Inc()
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
	r := &Refusal{Reason: d.Reason, Wait: d.Wait}
	switch d.Reason {
	case Open:
		state := breaker.Open
		if d.Wait <= 0 {
			state = breaker.HalfOpen
		}
		r.err = &breaker.OpenError{Name: u.name, State: state, Kind: d.View.Breaker.Kind, RetryIn: d.Wait}
	case Limited:
		u.m.throttled.Inc()
		r.err = &ratelimit.LimitedError{Wait: d.Wait, Limit: ratelimit.LimitRequests}
	case TooLarge:
		r.err = fmt.Errorf("reserving %d tokens against the fleet's budget: %w", tokens, ratelimit.ErrTooLarge)
	default:
		r.Reason, r.err = Quota, ErrQuota
	}
	return nil, r, true
}

// applyView makes the local breaker, quota block and disabled targets
// mirror the fleet's view: what /admin/providers and the gauges show, and
// where this process starts from if the shared state becomes unreachable.
func (u *Upstream) applyView(v SharedView) {
	now := u.now()
	u.breaker.Sync(now, v.Breaker)
	if u.quota.Mirror(now, v.Quota, v.QuotaLeft) {
		u.changed.notify()
	}
	if v.Targets != nil {
		u.targetsMu.Lock()
		u.targetsOff = maps.Clone(v.Targets)
		u.targetsN.Store(int32(len(u.targetsOff)))
		u.targetsMu.Unlock()
	}
}

// closeShared ends the provider's fleet handle.
func (u *Upstream) closeShared() {
	if u.shared != nil {
		u.shared.Close()
	}
}
