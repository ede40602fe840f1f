package shared

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
)

// TestPolicyWithDefaults: a zero breaker block and quota recheck take
// their defaults; what is set stays; a breaker set in part is not
// completed (the config's embedded default gives every field).
func TestPolicyWithDefaults(t *testing.T) {
	d := Policy{}.WithDefaults()
	if d.Breaker != breaker.DefaultConfig() || d.QuotaRecheck != DefaultQuotaRecheck || d.ThrottleK != 0 {
		t.Errorf("zero policy with defaults: %+v, want the default breaker, %s and throttling off", d, DefaultQuotaRecheck)
	}
	if d != d.WithDefaults() {
		t.Error("WithDefaults is not idempotent")
	}
	b := breaker.Config{Cooldown: breaker.Cooldown{Max: time.Minute}}
	set := Policy{Breaker: b, ThrottleK: 2, QuotaRecheck: time.Minute}.WithDefaults()
	if set.Breaker != b || set.ThrottleK != 2 || set.QuotaRecheck != time.Minute {
		t.Errorf("set policy with defaults: %+v, want it unchanged", set)
	}
}

// TestPolicyValidate: each bad field is reported under its config key,
// every one of them at once; the bounds themselves are accepted.
func TestPolicyValidate(t *testing.T) {
	ok := Policy{}.WithDefaults()
	tests := []struct {
		name   string
		change func(*Policy)
		want   []string // substrings of the error, "" for none
	}{
		{"defaults", func(*Policy) {}, nil},
		{"throttling off", func(p *Policy) { p.ThrottleK = 0 }, nil},
		{"throttle k at 1", func(p *Policy) { p.ThrottleK = 1 }, nil},
		{"throttle k below 1", func(p *Policy) { p.ThrottleK = 0.5 }, []string{"routing.adaptive_throttle_k: must be 0 (off) or at least 1, got 0.5"}},
		{"throttle k negative", func(p *Policy) { p.ThrottleK = -2 }, []string{"routing.adaptive_throttle_k"}},
		{"throttle k huge", func(p *Policy) { p.ThrottleK = 1e6 }, []string{"routing.adaptive_throttle_k"}},
		{"throttle k NaN", func(p *Policy) { p.ThrottleK = math.NaN() }, []string{"routing.adaptive_throttle_k"}},
		{"quota recheck at 1s", func(p *Policy) { p.QuotaRecheck = time.Second }, nil},
		{"quota recheck unset", func(p *Policy) { p.QuotaRecheck = 0 }, nil},
		{"quota recheck under 1s", func(p *Policy) { p.QuotaRecheck = 500 * time.Millisecond }, []string{"breaker.quota_recheck: must be at least 1s, got 500ms"}},
		{"quota recheck negative", func(p *Policy) { p.QuotaRecheck = -time.Minute }, []string{"breaker.quota_recheck"}},
		{"breaker", func(p *Policy) { p.Breaker.Cooldown.Max = 0 }, []string{"breaker.cooldown.max"}},
		{"all at once", func(p *Policy) {
			p.Breaker.Cooldown.Max, p.ThrottleK, p.QuotaRecheck = 0, 0.5, time.Millisecond
		}, []string{"breaker.cooldown.max", "routing.adaptive_throttle_k", "breaker.quota_recheck"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			tt.change(&p)
			err := p.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to say %q", err, w)
				}
			}
			if n := len(strings.Split(err.Error(), "\n")); n != len(tt.want) {
				t.Errorf("Validate() reports %d problems, want %d: %v", n, len(tt.want), err)
			}
		})
	}
}

// TestReasonString: each refusal names itself as the runtime's refusal
// of the same kind does (upstream.Reason), 0 is no refusal, and a code
// out of range still prints.
func TestReasonString(t *testing.T) {
	for r, want := range map[Reason]string{0: "admitted", Open: "open", Limited: "limited", TooLarge: "too_large", Quota: "quota", 9: "reason(9)"} {
		if got := r.String(); got != want {
			t.Errorf("Reason(%d).String() = %q, want %q", uint8(r), got, want)
		}
	}
}
