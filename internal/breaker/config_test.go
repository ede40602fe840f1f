package breaker

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string // substrings of the error; none means valid
	}{
		{name: "defaults", modify: func(*Config) {}},
		{name: "consecutive off", modify: func(c *Config) { c.FailureThreshold.Consecutive = 0 }},
		{name: "ratio off, min_requests ignored", modify: func(c *Config) {
			c.FailureThreshold.Ratio = 0
			c.FailureThreshold.MinRequests = 0
		}},
		{name: "multiplier 1 means no growth", modify: func(c *Config) { c.Cooldown.Multiplier = 1 }},
		{name: "base equal to max", modify: func(c *Config) { c.Cooldown.RateLimit = c.Cooldown.Max }},
		{
			name:   "multiplier below 1",
			modify: func(c *Config) { c.Cooldown.Multiplier = 0.5 },
			want:   []string{"breaker.cooldown.multiplier: must be >= 1 and finite, got 0.5"},
		},
		{
			name:   "multiplier NaN",
			modify: func(c *Config) { c.Cooldown.Multiplier = math.NaN() },
			want:   []string{"breaker.cooldown.multiplier:"},
		},
		{
			name:   "multiplier infinite",
			modify: func(c *Config) { c.Cooldown.Multiplier = math.Inf(1) },
			want:   []string{"breaker.cooldown.multiplier:"},
		},
		{
			name:   "negative consecutive",
			modify: func(c *Config) { c.FailureThreshold.Consecutive = -1 },
			want:   []string{"breaker.failure_threshold.consecutive: must be >= 0, got -1"},
		},
		{
			name:   "ratio above 1",
			modify: func(c *Config) { c.FailureThreshold.Ratio = 1.5 },
			want:   []string{"breaker.failure_threshold.ratio: must be in [0, 1], got 1.5"},
		},
		{
			name:   "ratio NaN",
			modify: func(c *Config) { c.FailureThreshold.Ratio = math.NaN() },
			want:   []string{"breaker.failure_threshold.ratio:"},
		},
		{
			name:   "ratio on without min_requests",
			modify: func(c *Config) { c.FailureThreshold.MinRequests = 0 },
			want:   []string{"breaker.failure_threshold.min_requests: must be >= 1 when ratio is on, got 0"},
		},
		{
			name:   "negative min_requests",
			modify: func(c *Config) { c.FailureThreshold.MinRequests = -3 },
			want:   []string{"breaker.failure_threshold.min_requests: must be >= 0, got -3"},
		},
		{
			name: "both rules off",
			modify: func(c *Config) {
				c.FailureThreshold.Consecutive = 0
				c.FailureThreshold.Ratio = 0
			},
			want: []string{"breaker.failure_threshold: consecutive and ratio are both 0"},
		},
		{
			name:   "window too short",
			modify: func(c *Config) { c.FailureThreshold.Window = 500 * time.Millisecond },
			want:   []string{"breaker.failure_threshold.window: must be >= 1s, got 500ms"},
		},
		{
			name:   "zero failure cooldown",
			modify: func(c *Config) { c.Cooldown.Failure = 0 },
			want:   []string{"breaker.cooldown.failure: must be > 0, got 0s"},
		},
		{
			name:   "rate_limit above max",
			modify: func(c *Config) { c.Cooldown.RateLimit = 15 * time.Minute },
			want:   []string{"breaker.cooldown.rate_limit: must be <= breaker.cooldown.max (10m0s), got 15m0s"},
		},
		{
			name:   "zero max",
			modify: func(c *Config) { c.Cooldown.Max = 0 },
			want:   []string{"breaker.cooldown.max: must be > 0, got 0s"},
		},
		{
			name: "every error is reported",
			modify: func(c *Config) {
				c.Cooldown.Timeout = -time.Second
				c.FailureThreshold.Window = 0
			},
			want: []string{"breaker.cooldown.timeout: must be > 0, got -1s", "breaker.failure_threshold.window:"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.modify(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestDefaultConfigMatchesDesign(t *testing.T) {
	got := DefaultConfig()
	want := Config{
		FailureThreshold: Threshold{Consecutive: 5, Ratio: 0.5, MinRequests: 20, Window: time.Minute},
		Cooldown: Cooldown{
			Failure: 30 * time.Second, RateLimit: 120 * time.Second, Timeout: 60 * time.Second,
			Multiplier: 1.5, Max: 600 * time.Second,
		},
	}
	if got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
}

func TestCooldown(t *testing.T) {
	c := DefaultConfig().Cooldown
	tests := []struct {
		name       string
		kind       outcome.Kind
		retryAfter time.Duration
		trips      int
		want       time.Duration
	}{
		{"server error", outcome.ServerError, 0, 1, 30 * time.Second},
		{"auth", outcome.Auth, 0, 1, 30 * time.Second},
		{"timeout", outcome.Timeout, 0, 1, 60 * time.Second},
		{"rate limited without a wait", outcome.RateLimited, 0, 1, 120 * time.Second},
		{"rate limited with the provider's wait", outcome.RateLimited, 7 * time.Second, 1, 7 * time.Second},
		{"retry-after ignored for other kinds", outcome.Overloaded, 7 * time.Second, 1, 30 * time.Second},
		{"second trip", outcome.ServerError, 0, 2, 45 * time.Second},
		{"third trip", outcome.ServerError, 0, 3, 67500 * time.Millisecond},
		{"provider's wait grows too", outcome.RateLimited, 10 * time.Second, 3, 22500 * time.Millisecond},
		{"capped", outcome.ServerError, 0, 9, 600 * time.Second},
		{"provider's wait capped", outcome.RateLimited, time.Hour, 1, 600 * time.Second},
		{"huge trip count", outcome.Timeout, 0, 100000, 600 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.cooldown(tc.kind, tc.retryAfter, tc.trips); got != tc.want {
				t.Errorf("cooldown(%s, %s, %d) = %s, want %s", tc.kind, tc.retryAfter, tc.trips, got, tc.want)
			}
		})
	}
}
