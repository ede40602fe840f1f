package upstream

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/warm/record"
)

// learned is an Upstream on spec("p") that, at t0, was told its request
// budget is spent until t0+60s, ran out of quota (rechecked hourly),
// tripped its breaker on five server errors (30s cooldown), and found two
// of its models missing.
func learned(t *testing.T) *Upstream {
	t.Helper()
	u := build(spec("p", 10), Options{})
	var permits []*Permit
	for range 7 {
		p, err := u.Acquire(t0, 1)
		if err != nil {
			t.Fatal(err)
		}
		permits = append(permits, p)
	}
	spent := outcome.UnknownRateLimit
	spent.LimitRequests, spent.RemainingRequests, spent.ResetRequests = 100, 0, time.Minute
	permits[0].Release(t0, Result{Kind: outcome.RateLimited, RateLimit: spent})
	permits[1].Release(t0, Result{Kind: outcome.Quota})
	for _, p := range permits[2:] {
		p.Release(t0, Result{Kind: outcome.ServerError, Latency: 40 * time.Millisecond})
	}
	u.DisableTarget("gone", "The model `gone` does not exist")
	u.DisableTarget("typo", "The model `typo` does not exist")
	return u
}

// roundTrip exports u at at and returns the State as another process
// reads it back.
func roundTrip(t *testing.T, u *Upstream, at time.Time) record.State {
	t.Helper()
	data, err := json.Marshal(u.Export(at))
	if err != nil {
		t.Fatal(err)
	}
	var s record.State
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRestoreKeepsWhatIsStillTrue: saved 10s after it all happened and
// loaded 10s later, the provider is still open for the rest of its
// cooldown, still blocked until its reset, still out of quota until the
// check, with the disabled target that is still configured, its stats and
// its last error kind.
func TestRestoreKeepsWhatIsStillTrue(t *testing.T) {
	s := roundTrip(t, learned(t), t0.Add(10*time.Second))
	u := build(spec("p", 10), Options{})
	if err := u.Restore(t0.Add(20*time.Second), s, func(m string) bool { return m == "typo" }); err != nil {
		t.Fatalf("Restore() = %v, want nil", err)
	}
	now := t0.Add(20 * time.Second)
	st := u.Status(now)
	want := Status{Name: "p", Type: "fake", State: "open", CooldownLeftSeconds: 10, ConsecutiveTrips: 1,
		MaxConcurrency: 10, RPMLimit: 100, RemainingRequests: st.RemainingRequests, RemainingTokens: -1, BlockedSeconds: 40,
		LastErrorKind: "server_error", OutOfQuota: true, QuotaCheckSeconds: 3580, DisabledTargets: []string{"typo"},
		Stats: st.Stats}
	if !statusEqual(st, want) {
		t.Errorf("restored status\n%+v\nwant\n%+v", st, want)
	}
	if st.Stats.Requests != 5 || st.Stats.Failures != 5 {
		t.Errorf("restored stats %d requests, %d failures; want 5, 5", st.Stats.Requests, st.Stats.Failures)
	}
	_, err := u.Acquire(now, 1)
	var r *Refusal
	if !errors.As(err, &r) || r.Reason != Quota {
		t.Errorf("Acquire() = %v, want a quota refusal", err)
	}
}

func statusEqual(a, b Status) bool {
	return a.Name == b.Name && a.Type == b.Type && a.State == b.State && a.CooldownLeftSeconds == b.CooldownLeftSeconds &&
		a.ConsecutiveTrips == b.ConsecutiveTrips && a.MaxConcurrency == b.MaxConcurrency && a.RPMLimit == b.RPMLimit &&
		a.RemainingTokens == b.RemainingTokens && a.BlockedSeconds == b.BlockedSeconds && a.LastErrorKind == b.LastErrorKind &&
		a.OutOfQuota == b.OutOfQuota && a.QuotaCheckSeconds == b.QuotaCheckSeconds && slices.Equal(a.DisabledTargets, b.DisabledTargets)
}

// TestRestoreDropsPastDeadlines: loaded two hours later, the block and the
// cooldown are over: the budget is whole, the breaker waits for its probe
// (due at once), and the quota check is due: the next request checks.
func TestRestoreDropsPastDeadlines(t *testing.T) {
	s := roundTrip(t, learned(t), t0.Add(10*time.Second))
	u := build(spec("p", 10), Options{})
	now := t0.Add(2 * time.Hour)
	if err := u.Restore(now, s, nil); err != nil {
		t.Fatal(err)
	}
	st := u.Status(now)
	if st.State != "half_open" || st.BlockedSeconds != 0 || st.RemainingRequests != 100 || !st.OutOfQuota || st.QuotaCheckSeconds != 0 {
		t.Errorf("restored %+v; want half_open, not blocked, 100 requests left, out of quota with the check due", st)
	}
	if len(st.DisabledTargets) != 2 {
		t.Errorf("disabled targets %v, want both (nil: every model is configured)", st.DisabledTargets)
	}
	// The breaker refuses real requests until its probe closes it; the
	// quota check is taken by the first request that gets through.
	if _, err := u.Acquire(now, 1); !errors.Is(err, breaker.ErrOpen) {
		t.Errorf("Acquire() = %v, want refused by the breaker", err)
	}
}

// TestRestoreQuotaResetPassed: a quota block whose named reset passed
// while the router was down is lifted.
func TestRestoreQuotaResetPassed(t *testing.T) {
	a := build(spec("p", 10), Options{})
	p, _ := a.Acquire(t0, 1)
	p.Release(t0, Result{Kind: outcome.Quota, RetryAfter: 30 * time.Second})
	s := roundTrip(t, a, t0)
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{29 * time.Second, true}, {30 * time.Second, false}} {
		u := build(spec("p", 10), Options{})
		if err := u.Restore(t0.Add(tc.at), s, nil); err != nil {
			t.Fatal(err)
		}
		if got := u.Status(t0.Add(tc.at)).OutOfQuota; got != tc.want {
			t.Errorf("loaded at +%s: out of quota %v, want %v", tc.at, got, tc.want)
		}
	}
}

// TestRestoreOnChangedConfig: state learned under another configuration of
// the provider is not restored at all, and the error names what changed;
// settings that do not change what the provider told the router do not
// count.
func TestRestoreOnChangedConfig(t *testing.T) {
	s := roundTrip(t, learned(t), t0)
	tests := []struct {
		name   string
		change func(*built)
		keys   string // "" restores
	}{
		{"base_url", func(sp *built) { sp.Config.BaseURL = "http://fixed.example/v1" }, "base_url"},
		{"type", func(sp *built) { sp.Config.Type = "openai" }, "type"},
		{"rpm and tpm", func(sp *built) { sp.Config.RPM, sp.Config.TPM = 60, 1000 }, "rpm, tpm"},
		{"breaker cooldown", func(sp *built) { sp.Breaker.Cooldown.Failure = time.Minute }, "breaker"},
		{"quota recheck", func(sp *built) { sp.QuotaRecheck = 2 * time.Hour }, "breaker"},
		{"key source", func(sp *built) { sp.Config.APIKeyEnv = "OTHER_ACCOUNT_KEY" }, "api_key_env/api_key_file"},
		{"max_concurrency, timeouts, domain, throttling and a rotated key", func(sp *built) {
			sp.Config.MaxConcurrency, sp.Config.Timeout, sp.Config.FirstTokenTimeout = 3, time.Second, time.Second
			sp.Config.Domain, sp.Secrets = "eu", []string{"sk-new"}
			sp.ThrottleK = 2
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := spec("p", 10)
			tt.change(&sp)
			u := build(sp, Options{})
			err := u.Restore(t0.Add(time.Second), s, nil)
			st := u.Status(t0.Add(time.Second))
			if tt.keys == "" {
				if err != nil || st.State != "open" || !st.OutOfQuota {
					t.Errorf("Restore() = %v, state %s, out of quota %v; want restored", err, st.State, st.OutOfQuota)
				}
				return
			}
			var ce *ChangedError
			if !errors.As(err, &ce) || strings.Join(ce.Keys, ", ") != tt.keys || ce.Provider != "p" {
				t.Fatalf("Restore() = %v, want a *ChangedError naming %s", err, tt.keys)
			}
			if st.State != "closed" || st.OutOfQuota || len(st.DisabledTargets) != 0 || st.BlockedSeconds != 0 ||
				st.Stats.Requests != 0 || st.LastErrorKind != "" {
				t.Errorf("after a refused restore: %+v, want a fresh provider", st)
			}
		})
	}
}

// TestRestoreVersion1: a state without a fingerprint (version 1 of the
// file) restores its stats and limit sizes, as version 1 did.
func TestRestoreVersion1(t *testing.T) {
	a := learned(t)
	full := roundTrip(t, a, t0)
	s := record.State{Stats: full.Stats, RequestsLimit: 100}
	sp := spec("p", 10)
	sp.Config.BaseURL = "http://elsewhere.example/v1" // version 1 cannot tell
	u := build(sp, Options{})
	if err := u.Restore(t0, s, nil); err != nil {
		t.Fatal(err)
	}
	st := u.Status(t0)
	if st.RPMLimit != 100 || st.Stats.Requests != 5 || st.State != "closed" || st.BlockedSeconds != 0 {
		t.Errorf("restored %+v; want the limit and stats only", st)
	}
}

// TestRestoreRamp: a provider whose breaker closed 10s before the save,
// loaded 5s later, is half way through its slow start.
func TestRestoreRamp(t *testing.T) {
	clock := t0
	a := build(spec("p", 10), Options{Now: func() time.Time { return clock }})
	a.closedAt.Store(int64(clock.Sub(a.epoch)) + 1)
	s := roundTrip(t, a, t0.Add(10*time.Second))
	clock = t0.Add(15 * time.Second)
	u := build(spec("p", 10), Options{Now: func() time.Time { return clock }})
	if err := u.Restore(clock, s, nil); err != nil {
		t.Fatal(err)
	}
	if got := u.Health(clock).Ramp; got < 0.49 || got > 0.51 {
		t.Errorf("ramp = %v, want 0.5", got)
	}
	if late := roundTrip(t, a, t0.Add(rampDuration+time.Second)); !late.ClosedAt.IsZero() {
		t.Errorf("saved after the ramp: closed_at %s, want none", late.ClosedAt)
	}
}

// TestExportRedactsTargetMessages: the provider's message about a missing
// model may echo the key; the file must not.
func TestExportRedactsTargetMessages(t *testing.T) {
	sp := spec("p", 10)
	sp.Secrets = []string{"sk-secret-123"}
	u := build(sp, Options{})
	u.DisableTarget("m", "no model m for key sk-secret-123")
	data, _ := json.Marshal(u.Export(t0))
	if strings.Contains(string(data), "sk-secret-123") {
		t.Errorf("the state holds the key: %s", data)
	}
}

// TestChangeSignal: what a warm restart should keep signals the saver;
// routine traffic does not.
func TestChangeSignal(t *testing.T) {
	sig := make(chan struct{}, 1)
	u := build(spec("p", 10), Options{Changed: func() {
		select {
		case sig <- struct{}{}:
		default:
		}
	}})
	pending := func() bool {
		select {
		case <-sig:
			return true
		default:
			return false
		}
	}
	now := t0
	release := func(r Result) {
		t.Helper()
		now = now.Add(2 * time.Second) // past any Retry-After below
		p, err := u.Acquire(now, 1)
		if err != nil {
			t.Fatal(err)
		}
		p.Release(now, r)
	}
	spent := outcome.UnknownRateLimit
	spent.LimitRequests, spent.RemainingRequests, spent.ResetRequests = 100, 50, time.Minute
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"a success", func() { release(Result{Kind: outcome.OK}) }, false},
		{"an announced budget with room", func() { release(Result{Kind: outcome.OK, RateLimit: spent}) }, false},
		{"a Retry-After block", func() { release(Result{Kind: outcome.RateLimited, RetryAfter: time.Second}) }, true},
		{"a target disabled", func() { u.DisableTarget("m", "gone") }, true},
		{"the same target again", func() { u.DisableTarget("m", "gone") }, false},
		{"an enable", func() { u.Enable() }, true},
		{"an enable with nothing to lift", func() { u.Enable() }, false},
		{"a server error", func() { u.Enable(); release(Result{Kind: outcome.ServerError}) }, false},
		{"a quota block", func() { release(Result{Kind: outcome.Quota}) }, true},
		{"a trip", func() {
			u.Enable()
			pending()
			for range 4 {
				release(Result{Kind: outcome.ServerError})
			}
		}, true},
	}
	for _, s := range steps {
		s.do()
		if got := pending(); got != s.want {
			t.Errorf("%s: signalled %v, want %v", s.name, got, s.want)
		}
	}
}
