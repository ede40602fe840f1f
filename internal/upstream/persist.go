package upstream

import (
	"fmt"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/warm/record"
)

// fingerprint is the record.Fingerprint of the provider's description
// and policy (defaults applied).
func (u *Upstream) fingerprint() record.Fingerprint {
	d, p := u.desc.Load(), u.pol.WithDefaults()
	return record.FingerprintOf(d.Config, d.Endpoint(), p.Breaker, p.QuotaRecheck)
}

// ChangedError is Restore's refusal: the state was learned under another
// configuration of the provider, so none of it is true of this one.
type ChangedError struct {
	Provider string
	// Keys are the settings that differ: type, base_url,
	// api_key_env/api_key_file, rpm, tpm, breaker;
	// empty when the state has no fingerprint to compare.
	Keys []string
}

func (e *ChangedError) Error() string {
	if len(e.Keys) == 0 {
		return fmt.Sprintf("provider %s: the saved state has no fingerprint of its configuration", e.Provider)
	}
	return fmt.Sprintf("provider %s: %s changed since the state was saved", e.Provider, strings.Join(e.Keys, ", "))
}

// Export captures the provider's lasting state at now (time.Now():
// monotonic), for Restore after a restart.
func (u *Upstream) Export(now time.Time) record.State {
	l := u.limits.Snapshot(now)
	fp := u.fingerprint()
	b := u.breaker.Export(now)
	lim := u.limits.Export(now)
	st := record.State{
		Stats: u.stats.Export(now), RequestsLimit: l.RequestsLimit, TokensLimit: l.TokensLimit,
		Fingerprint: &fp, Breaker: &b, Limits: &lim,
	}
	if th := u.throttle.Export(now); len(th.Buckets) > 0 {
		st.Throttle = &th
	}
	if k := outcome.Kind(u.lastKind.Load()); k != outcome.OK {
		st.LastErrorKind = k.String()
	}
	if c := u.closedAt.Load(); c != 0 {
		if at := u.epoch.Add(time.Duration(c)); now.Sub(at) < rampDuration {
			st.ClosedAt = wallOf(now, at)
		}
	}
	st.Quota = u.quota.Export(now)
	st.DisabledTargets = u.targets.Messages(u.Redact)
	return st
}

// Restore loads s, exported at any time before now (possibly by another
// process), into an Upstream that has not served yet. configured reports
// whether a model is still a target of this provider (nil: every model
// is); disabled targets that are not are dropped.
//
// A State without a fingerprint (version 1 of the state file) restores
// its stats and limits only, as version 1 did. Otherwise, when the
// fingerprint differs from the provider's settings today, Restore takes
// nothing and returns a *ChangedError naming what changed: an operator who
// fixed a base_url and restarted must not find the old breaker open or
// the old targets disabled.
//
// Deadlines still ahead of now come back as deadlines on now's clock;
// those already past are dropped: a Retry-After or an empty budget whose
// reset passed while the router was down blocks nothing, a quota block
// whose named reset passed is lifted, a quota check that fell due is due
// at once, and a breaker whose cooldown passed is open with its probe due
// at once.
func (u *Upstream) Restore(now time.Time, s record.State, configured func(model string) bool) error {
	if s.Fingerprint == nil {
		u.stats.Restore(now, s.Stats)
		u.restoreLimitSizes(now, s)
		return nil
	}
	if keys := s.Fingerprint.Changed(u.fingerprint()); len(keys) > 0 {
		return &ChangedError{Provider: u.name, Keys: keys}
	}
	u.stats.Restore(now, s.Stats)
	if s.Limits != nil {
		u.limits.Restore(now, *s.Limits)
	} else {
		u.restoreLimitSizes(now, s)
	}
	if s.Throttle != nil {
		u.throttle.Restore(now, *s.Throttle)
	}
	if s.LastErrorKind != "" {
		for _, k := range outcome.Kinds() {
			if k != outcome.OK && k.String() == s.LastErrorKind {
				u.lastKind.Store(uint32(k))
			}
		}
	}
	if !s.ClosedAt.IsZero() {
		if since := now.Round(0).Sub(s.ClosedAt); since >= 0 && since < rampDuration {
			c := int64(now.Sub(u.epoch) - since)
			if c == 0 {
				c = -1 // 0 means never closed
			}
			u.closedAt.Store(c)
		}
	}
	u.restoreOff(now, s, configured)
	// The breaker last: its transition to open wakes the prober and tells
	// the saver, and by then the rest is in place.
	if s.Breaker != nil {
		u.breaker.Restore(now, *s.Breaker)
	}
	return nil
}

// restoreLimitSizes applies version 1's learned limits: the sizes alone.
func (u *Upstream) restoreLimitSizes(now time.Time, s record.State) {
	rl := outcome.UnknownRateLimit
	if s.RequestsLimit > 0 {
		rl.LimitRequests = s.RequestsLimit
	}
	if s.TokensLimit > 0 {
		rl.LimitTokens = s.TokensLimit
	}
	u.limits.Observe(now, rl)
}

// restoreOff restores the quota block and the disabled targets that are
// still configured.
func (u *Upstream) restoreOff(now time.Time, s record.State, configured func(string) bool) {
	if s.Quota != nil {
		u.quota.Restore(now, *s.Quota)
	}
	u.targets.Add(s.DisabledTargets, configured)
}

// wallOf turns the monotonic instant t, read at now, into a wall-clock
// instant another process can read.
func wallOf(now, t time.Time) time.Time { return now.Round(0).Add(t.Sub(now)) }
