package backoff

import (
	"strings"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	c := DefaultConfig()
	tests := []struct {
		n    int
		u    float64
		want time.Duration
	}{
		{1, 0, time.Second}, {2, 0, 2 * time.Second}, {3, 0, 4 * time.Second}, {5, 0, 16 * time.Second},
		{6, 0, 16 * time.Second},   // capped
		{100, 0, 16 * time.Second}, // no overflow
		{1, 0.999999, 500*time.Millisecond + 500*time.Nanosecond},
		{2, 0.5, 1500 * time.Millisecond}, // jitter 0.5 × u 0.5 takes a quarter off
		{0, 0, time.Second},               // n < 1 is the first retry
	}
	for _, tt := range tests {
		if got := c.Delay(tt.n, tt.u); got != tt.want {
			t.Errorf("Delay(%d, %g) = %s, want %s", tt.n, tt.u, got, tt.want)
		}
	}
}

func TestDelayJitterRange(t *testing.T) {
	c := DefaultConfig()
	for n := 1; n <= 8; n++ {
		capped := min(time.Second<<(n-1), 16*time.Second)
		for i := 0; i < 100; i++ {
			u := float64(i) / 100
			d := c.Delay(n, u)
			if d > capped || d < capped/2 {
				t.Fatalf("Delay(%d, %g) = %s outside [%s, %s]", n, u, d, capped/2, capped)
			}
		}
	}
	c.Jitter = 0
	if c.Delay(3, 0.9) != 4*time.Second {
		t.Error("jitter 0 still jitters")
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.MaxAttempts = 0 }, "routing.retry.max_attempts"},
		{func(c *Config) { c.InitialBackoff = 0 }, "routing.retry.initial_backoff"},
		{func(c *Config) { c.MaxBackoff = time.Millisecond }, "routing.retry.max_backoff"},
		{func(c *Config) { c.Multiplier = 0.5 }, "routing.retry.multiplier"},
		{func(c *Config) { c.Jitter = 2 }, "routing.retry.jitter"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	bad := Config{MaxAttempts: 0, InitialBackoff: 0, Multiplier: 0.5, Jitter: 2}
	got := strings.Split(bad.Validate().Error(), "\n")
	want := []string{
		"routing.retry.max_attempts: must be at least 1, got 0",
		"routing.retry.initial_backoff: must be positive, got 0s",
		"routing.retry.multiplier: must be a finite number >= 1, got 0.5",
		"routing.retry.jitter: must be between 0 and 1, got 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("every problem at once: got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
