package record

import (
	"slices"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// TestFingerprint: the keys that differ are named, settings that do not
// change what the provider said are not in it; and the fleet's Key of a provider does not change between
// versions (a new one would orphan what a fleet holds in Redis).
func TestFingerprint(t *testing.T) {
	p := provider.Config{Name: "p", Type: "openai", BaseURL: "https://api.example/v1", APIKeyEnv: "K", RPM: 60}
	b := breaker.DefaultConfig()
	f := FingerprintOf(p, "", b, time.Hour)
	if got, want := f.Key("p"), "ec6b5c0d4e605e1e"; got != want {
		t.Errorf("Key = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name string
		edit func(p *provider.Config, b *breaker.Config, recheck *time.Duration)
		want []string
	}{
		{"nothing", func(*provider.Config, *breaker.Config, *time.Duration) {}, nil},
		{"timeouts and concurrency", func(p *provider.Config, _ *breaker.Config, _ *time.Duration) {
			p.Timeout, p.MaxConcurrency = time.Minute, 3
		}, nil},
		{"base_url and rpm", func(p *provider.Config, _ *breaker.Config, _ *time.Duration) {
			p.BaseURL, p.RPM = "https://other.example/v1", 61
		}, []string{"base_url", "rpm"}},
		{"key source", func(p *provider.Config, _ *breaker.Config, _ *time.Duration) { p.APIKeyEnv = "K2" }, []string{"api_key_env/api_key_file"}},
		{"quota recheck", func(_ *provider.Config, _ *breaker.Config, r *time.Duration) { *r = 2 * time.Hour }, []string{"breaker"}},
		{"cooldown", func(_ *provider.Config, b *breaker.Config, _ *time.Duration) { b.Cooldown.Max = time.Hour }, []string{"breaker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p2, b2, r2 := p, b, time.Hour
			tc.edit(&p2, &b2, &r2)
			if got := f.Changed(FingerprintOf(p2, "", b2, r2)); !slices.Equal(got, tc.want) {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}
	// A cloud provider's region is in its block, not its base_url: the
	// endpoint its adapter names tells two regions apart.
	bp := provider.Config{Name: "aws", Type: "bedrock"}
	east := FingerprintOf(bp, "https://bedrock-runtime.us-east-1.amazonaws.com region=us-east-1", b, time.Hour)
	west := FingerprintOf(bp, "https://bedrock-runtime.us-west-2.amazonaws.com region=us-west-2", b, time.Hour)
	if got := east.Changed(west); !slices.Equal(got, []string{"base_url"}) || east.Key("aws") == west.Key("aws") {
		t.Errorf("another region: Changed = %v, keys %s and %s", got, east.Key("aws"), west.Key("aws"))
	}
}
