package record

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// handFingerprint is FingerprintOf as it was written by hand before the
// fingerprint was derived from the types' tags: the oracle that keeps
// every state file and every fleet's Redis keys as they were.
func handFingerprint(p provider.Config, endpoint string, b breaker.Config, quotaRecheck time.Duration) Fingerprint {
	th, cd := b.FailureThreshold, b.Cooldown
	policy := fmt.Sprintf("consecutive=%d ratio=%g min_requests=%d window=%s failure=%s rate_limit=%s timeout=%s multiplier=%g max=%s quota_recheck=%s",
		th.Consecutive, th.Ratio, th.MinRequests, th.Window, cd.Failure, cd.RateLimit, cd.Timeout, cd.Multiplier, cd.Max, quotaRecheck)
	where := p.BaseURL
	if endpoint != "" {
		where += " " + endpoint
	}
	return Fingerprint{Type: p.Type, BaseURL: digest(where), KeySource: digest("env=" + p.APIKeyEnv + " file=" + p.APIKeyFile),
		RPM: p.RPM, TPM: p.TPM, Breaker: digest(policy)}
}

// TestFingerprintAsByHand: the derived fingerprint is byte for byte the
// one written by hand, for any config: an upgrade keeps what the router
// learned, and a fleet mixing versions shares one state per provider.
func TestFingerprintAsByHand(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string { return []string{"", "a", "https://api.example.com/v1", "KEY", "x y", "ü"}[r.IntN(6)] }
	for i := range 2000 {
		p := provider.Config{Name: word(), Type: word(), BaseURL: word(), APIKeyEnv: word(), APIKeyFile: word(),
			MaxConcurrency: r.IntN(100), RPM: r.Int64N(1e6) - 1, TPM: r.Int64N(1e9), FirstTokenTimeout: time.Duration(r.Int64N(1e11)),
			Timeout: time.Duration(r.Int64N(1e11)), Domain: word()}
		b := breaker.Config{
			FailureThreshold: breaker.Threshold{Consecutive: r.IntN(10), Ratio: r.Float64(), MinRequests: r.IntN(50), Window: time.Duration(r.Int64N(1e12))},
			Cooldown: breaker.Cooldown{Failure: time.Duration(r.Int64N(1e12)), RateLimit: time.Duration(r.Int64N(1e12)),
				Timeout: time.Duration(r.Int64N(1e12)), Multiplier: 1 + r.Float64()*3, Max: time.Duration(r.Int64N(1e13))},
		}
		endpoint, recheck := word(), time.Duration(r.Int64N(1e13))
		if got, want := FingerprintOf(p, endpoint, b, recheck), handFingerprint(p, endpoint, b, recheck); got != want {
			t.Fatalf("case %d: derived %+v, by hand %+v", i, got, want)
		}
	}
}

// TestEveryFieldDecides: every field of provider.Config says by its tag
// whether it is part of the fingerprint, and every part a tag names is one
// the fingerprint has: adding a field to the config forces the decision.
func TestEveryFieldDecides(t *testing.T) {
	known := map[string]bool{"type": true, "where": true, "key_source": true, "rpm": true, "tpm": true}
	ty := reflect.TypeFor[provider.Config]()
	for i := range ty.NumField() {
		f := ty.Field(i)
		tag, ok := f.Tag.Lookup("fingerprint")
		if !ok {
			t.Errorf("provider.Config.%s has no fingerprint tag: say whether what the router learned stays true when it changes", f.Name)
			continue
		}
		if group, _, _ := strings.Cut(tag, ","); tag != "-" && !known[group] {
			t.Errorf("provider.Config.%s: fingerprint part %q is none of the fingerprint's", f.Name, group)
		}
	}
}
