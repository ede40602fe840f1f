package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/route"
)

// TestWithDefaults: the zero Config takes every part's default, and set
// parts are kept.
func TestWithDefaults(t *testing.T) {
	d := Config{}.WithDefaults()
	if d.Weights != route.DefaultWeights() || d.Retry.Config != backoff.DefaultConfig() ||
		d.ShedOpenFraction != DefaultShedOpenFraction || d.Retry.TierWait != 0 || d.Hedge.On() || d.Affinity.Enabled ||
		d.Stream.IdleTimeout != DefaultIdleTimeout || d.Stream.Rescue {
		t.Errorf("zero Config's defaults: got %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
	set := Config{ShedOpenFraction: 1, Retry: Retry{TierWait: 3 * time.Second}}.WithDefaults()
	if set.ShedOpenFraction != 1 || set.Retry.TierWait != 3*time.Second {
		t.Errorf("set values lost: %+v", set)
	}
}

// TestValidate: each invalid setting is an error naming its key, all of
// them at once.
func TestValidate(t *testing.T) {
	ok := Config{}.WithDefaults()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		keys []string // each must be named; none: valid
	}{
		{name: "defaults", edit: func(*Config) {}},
		{name: "tier_wait negative", edit: func(c *Config) { c.Retry.TierWait = -time.Second }, keys: []string{"routing.retry.tier_wait"}},
		{name: "tier_wait set", edit: func(c *Config) { c.Retry.TierWait = 3 * time.Second }},
		{name: "idle_timeout negative", edit: func(c *Config) { c.Stream.IdleTimeout = -time.Second }, keys: []string{"routing.stream.idle_timeout"}},
		{name: "stream set", edit: func(c *Config) { c.Stream = Stream{IdleTimeout: time.Second, Rescue: true} }},
		{name: "shed out of range", edit: func(c *Config) { c.ShedOpenFraction = 1.5 }, keys: []string{"routing.shed_open_fraction"}},
		{name: "shed zero", edit: func(c *Config) { c.ShedOpenFraction = 0 }, keys: []string{"routing.shed_open_fraction"}},
		{name: "several", edit: func(c *Config) {
			c.Retry.MaxAttempts = 0
			c.Weights.Success = -1
			c.Hedge.After = -time.Second
			c.Affinity.TTL = time.Millisecond
		}, keys: []string{"routing.retry.max_attempts", "routing.score_weights.success", "routing.hedge.after", "routing.affinity.ttl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if len(tc.keys) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want one naming %q", tc.keys)
			}
			for _, k := range tc.keys {
				if !strings.Contains(err.Error(), k+":") {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}
