package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/quota"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/stats"
	"github.com/llmrouter/llmrouter/internal/throttle"
)

// State is what a provider's runtime keeps across restarts
// (docs/ARCHITECTURE.md, "Warm restart"), JSON-serialisable. Instants are
// wall-clock: a monotonic reading means nothing to another process.
//
// Version 1 of the state file held Stats, RequestsLimit and TokensLimit
// only; every other field is nil or zero in a State read from it.
type State struct {
	// Stats are the windowed success rate and latencies.
	Stats stats.Persisted `json:"stats"`
	// RequestsLimit and TokensLimit are the limits in force (0 unknown).
	// Version 2 keeps them for a reader of version 1; Limits supersedes
	// them.
	RequestsLimit int64 `json:"requests_limit,omitempty"`
	TokensLimit   int64 `json:"tokens_limit,omitempty"`

	// Fingerprint identifies the configuration the state was learned
	// under; Restore takes nothing from a State whose Fingerprint differs
	// from the provider's today. nil in a version-1 State.
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
	// Breaker, Limits and Throttle are the mechanisms' own states.
	Breaker  *breaker.Persisted   `json:"breaker,omitempty"`
	Limits   *ratelimit.Persisted `json:"limits,omitempty"`
	Throttle *throttle.Persisted  `json:"throttle,omitempty"`
	// Quota is the out-of-quota block; nil when the provider was not off.
	Quota *quota.Persisted `json:"quota,omitempty"`
	// DisabledTargets are the models that answered "model not found",
	// each with the provider's message (secrets redacted).
	DisabledTargets map[string]string `json:"disabled_targets,omitempty"`
	// LastErrorKind is the kind of the last failure that counted; "" none.
	LastErrorKind string `json:"last_error_kind,omitempty"`
	// ClosedAt is when the breaker last closed after a trip, while the
	// slow-start ramp that followed was still under way; zero otherwise.
	ClosedAt time.Time `json:"closed_at,omitzero"`
}

// Fingerprint is what a provider's learned state depends on: where it is
// (type and base_url), which account it is (where its key comes from:
// api_key_env or api_key_file, never the key), the ceilings its buckets
// count against (rpm, tpm) and the policy its breaker and quota block
// follow (the breaker: block). Timeouts, concurrency, the failure domain
// and adaptive throttling do not change what the provider told the
// router, so they are not in it; nor does a new key read from the same
// place (a rotated key does not clear a breaker opened for auth: the probe
// decides, as after a reload). base_url, the key source and the policy
// are kept as hashes: a URL may carry credentials, and the file needs
// only to tell them apart.
type Fingerprint struct {
	Type      string `json:"type"`
	BaseURL   string `json:"base_url"`
	KeySource string `json:"key_source"`
	RPM       int64  `json:"rpm"`
	TPM       int64  `json:"tpm"`
	Breaker   string `json:"breaker"`
}

// fingerprintOf is the Fingerprint of s.
func fingerprintOf(s Settings) Fingerprint {
	p := s.Policy.WithDefaults()
	th, cd := p.Breaker.FailureThreshold, p.Breaker.Cooldown
	// Every field listed by name: a field added to the config later
	// changes the fingerprint only when it is added here too.
	policy := fmt.Sprintf("consecutive=%d ratio=%g min_requests=%d window=%s failure=%s rate_limit=%s timeout=%s multiplier=%g max=%s quota_recheck=%s",
		th.Consecutive, th.Ratio, th.MinRequests, th.Window, cd.Failure, cd.RateLimit, cd.Timeout, cd.Multiplier, cd.Max, p.QuotaRecheck)
	return Fingerprint{
		Type:      s.Provider.Type,
		BaseURL:   digest(s.Provider.BaseURL),
		KeySource: digest("env=" + s.Provider.APIKeyEnv + " file=" + s.Provider.APIKeyFile),
		RPM:       s.Provider.RPM,
		TPM:       s.Provider.TPM,
		Breaker:   digest(policy),
	}
}

// digest is a short hash of s: enough to tell two settings apart.
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:8])
}

// changed names the keys on which f and g differ.
func (f Fingerprint) changed(g Fingerprint) []string {
	var keys []string
	for _, c := range []struct {
		key  string
		diff bool
	}{
		{"type", f.Type != g.Type}, {"base_url", f.BaseURL != g.BaseURL}, {"api_key_env/api_key_file", f.KeySource != g.KeySource},
		{"rpm", f.RPM != g.RPM}, {"tpm", f.TPM != g.TPM}, {"breaker", f.Breaker != g.Breaker},
	} {
		if c.diff {
			keys = append(keys, c.key)
		}
	}
	return keys
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
func (u *Upstream) Export(now time.Time) State {
	l := u.limits.Snapshot(now)
	fp := fingerprintOf(u.spec.Settings)
	b := u.breaker.Export(now)
	lim := u.limits.Export(now)
	st := State{
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
	u.targetsMu.Lock()
	defer u.targetsMu.Unlock()
	if len(u.targetsOff) > 0 {
		st.DisabledTargets = make(map[string]string, len(u.targetsOff))
		for m, msg := range u.targetsOff {
			st.DisabledTargets[m] = u.Redact(msg)
		}
	}
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
func (u *Upstream) Restore(now time.Time, s State, configured func(model string) bool) error {
	if s.Fingerprint == nil {
		u.stats.Restore(now, s.Stats)
		u.restoreLimitSizes(now, s)
		return nil
	}
	if keys := s.Fingerprint.changed(fingerprintOf(u.spec.Settings)); len(keys) > 0 {
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
func (u *Upstream) restoreLimitSizes(now time.Time, s State) {
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
func (u *Upstream) restoreOff(now time.Time, s State, configured func(string) bool) {
	if s.Quota != nil {
		u.quota.Restore(now, *s.Quota)
	}
	u.targetsMu.Lock()
	defer u.targetsMu.Unlock()
	for m, msg := range s.DisabledTargets {
		if configured != nil && !configured(m) {
			continue
		}
		if u.targetsOff == nil {
			u.targetsOff = make(map[string]string, len(s.DisabledTargets))
		}
		u.targetsOff[m] = msg
	}
	u.targetsN.Store(int32(len(u.targetsOff)))
}

// changeSignal tells the state-file saver that something worth keeping
// across a restart changed. A nil *changeSignal ignores notify.
type changeSignal struct{ c chan struct{} }

func newChangeSignal() *changeSignal { return &changeSignal{c: make(chan struct{}, 1)} }

// notify never blocks, so it may run under a lock (the breaker's
// OnStateChange): one pending signal already says "changed".
func (s *changeSignal) notify() {
	if s == nil {
		return
	}
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// Changed returns a channel that receives after anything worth keeping
// across a restart changed in one of the Set's Upstreams: a breaker
// transition, a rate-limit block set or extended (Retry-After, an
// announced empty budget), a quota block set or lifted, a target disabled
// or enabled. Signals coalesce: at most one is pending, however many
// changes it stands for. The channel is the same for the Set's life.
func (s *Set) Changed() <-chan struct{} { return s.changed.c }

// wallOf turns the monotonic instant t, read at now, into a wall-clock
// instant another process can read.
func wallOf(now, t time.Time) time.Time { return now.Round(0).Add(t.Sub(now)) }
