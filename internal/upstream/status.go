package upstream

import (
	"sort"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/route"
)

// Status is one row of GET /admin/providers.
type Status struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// State is the breaker's: closed, half_open or open.
	State string `json:"state"`
	// CooldownLeftSeconds is how long until the next probe; 0 unless open.
	CooldownLeftSeconds float64 `json:"cooldown_left_seconds"`
	// ConsecutiveTrips counts trips since the breaker last closed.
	ConsecutiveTrips int `json:"consecutive_trips"`
	InFlight         int `json:"in_flight"`
	MaxConcurrency   int `json:"max_concurrency"`
	// RPM and TPM limits in force (0 unknown) and what is left now (-1
	// unknown); BlockedSeconds is how long Retry-After or an announced
	// empty budget still keeps requests away.
	RPMLimit          int64   `json:"rpm_limit"`
	TPMLimit          int64   `json:"tpm_limit"`
	RemainingRequests int64   `json:"remaining_requests"`
	RemainingTokens   int64   `json:"remaining_tokens"`
	BlockedSeconds    float64 `json:"blocked_seconds"`
	// LastErrorKind is the kind of the last failure that counted against
	// the provider; "" when none yet.
	LastErrorKind string `json:"last_error_kind"`
	// LastErrorAgoSeconds is how long ago that failure was; -1 when not
	// known (none, or learned before a warm restart).
	LastErrorAgoSeconds float64 `json:"last_error_ago_seconds"`
	// Domain is the provider's failure domain ("" its own).
	Domain string `json:"domain"`
	// OutOfQuota: the provider is off until its reset, a reload, an
	// enable or the next quota check, due in QuotaCheckSeconds.
	OutOfQuota        bool    `json:"out_of_quota"`
	QuotaCheckSeconds float64 `json:"quota_check_seconds"`
	// DisabledTargets are the provider's models that answered "model not
	// found", off until a reload changes them or an operator enables them.
	DisabledTargets []string `json:"disabled_targets"`
	// Shared says whether the row is the fleet's (shared_state) or this
	// process's own.
	Shared bool `json:"shared"`
	// Score is the provider's health score and its parts; the caller
	// fills it (it is relative to the other providers).
	Score route.Score `json:"score"`
	Stats StatsView   `json:"stats"`
}

// StatsView is a provider's windowed statistics.
type StatsView struct {
	Requests        int64   `json:"requests"`
	Failures        int64   `json:"failures"`
	SuccessRate     float64 `json:"success_rate"`
	LatencyEMAMs    float64 `json:"latency_ema_ms"`
	P50Ms           float64 `json:"p50_ms"`
	P95Ms           float64 `json:"p95_ms"`
	P99Ms           float64 `json:"p99_ms"`
	SinceSuccessSec float64 `json:"since_success_seconds"` // -1 never
}

// Status reports the provider at now; Score is left for the caller.
func (u *Upstream) Status(now time.Time) Status {
	b := u.breaker.Snapshot(now)
	l := u.limits.Snapshot(now)
	sn := u.stats.Snapshot(now)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	st := Status{
		Name: u.name, Type: u.desc.Load().Config.Type,
		State:               b.State.String(),
		CooldownLeftSeconds: b.CooldownLeft.Seconds(),
		ConsecutiveTrips:    b.ConsecutiveTrips,
		InFlight:            u.bulk.InFlight(), MaxConcurrency: u.bulk.Cap(),
		RPMLimit: l.RequestsLimit, TPMLimit: l.TokensLimit,
		RemainingRequests: l.RemainingRequests, RemainingTokens: l.RemainingTokens,
		BlockedSeconds: l.BlockedFor.Seconds(),
		Stats: StatsView{Requests: sn.Requests, Failures: sn.Failures, SuccessRate: sn.SuccessRate,
			LatencyEMAMs: ms(sn.LatencyEMA), P50Ms: ms(sn.P50), P95Ms: ms(sn.P95), P99Ms: ms(sn.P99),
			SinceSuccessSec: -1},
	}
	if sn.SinceSuccess >= 0 {
		st.Stats.SinceSuccessSec = sn.SinceSuccess.Seconds()
	}
	st.LastErrorAgoSeconds = -1
	if k := outcome.Kind(u.lastKind.Load()); k != 0 {
		st.LastErrorKind = k.String()
		if at := u.lastAt.Load(); at != 0 {
			st.LastErrorAgoSeconds = max(0, now.Sub(time.Unix(0, at)).Seconds())
		}
	}
	st.Domain = u.desc.Load().Config.Domain
	st.Shared = u.shared != nil && u.shared.Up()
	var left time.Duration
	st.OutOfQuota, left, st.DisabledTargets = u.offState(now)
	st.QuotaCheckSeconds = left.Seconds()
	if st.DisabledTargets == nil {
		st.DisabledTargets = []string{}
	}
	sort.Strings(st.DisabledTargets)
	return st
}
