package backoff

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config is `routing.retry`.
type Config struct {
	// MaxAttempts bounds the attempts of one request across all providers
	// (the first try included). Default 3; must be >= 1.
	MaxAttempts int `mapstructure:"max_attempts"`
	// InitialBackoff is the wait before the first retry of the same
	// provider. Default 1s.
	InitialBackoff time.Duration `mapstructure:"initial_backoff"`
	// MaxBackoff caps any one wait. Default 16s; >= initial_backoff.
	MaxBackoff time.Duration `mapstructure:"max_backoff"`
	// Multiplier grows the wait per retry. Default 2.0; >= 1.
	Multiplier float64 `mapstructure:"multiplier"`
	// Jitter is the share of the wait drawn at random, in [0, 1]:
	// 0.5 waits between half and all of it. Default 0.5.
	Jitter float64 `mapstructure:"jitter"`
}

// DefaultConfig returns the defaults of routing.retry: 3 attempts, 1s
// initial backoff, 16s at most, multiplier 2, jitter 0.5.
func DefaultConfig() Config {
	return Config{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: 16 * time.Second, Multiplier: 2, Jitter: 0.5}
}

// Validate reports every invalid field, joined, each naming its key under
// routing.retry and the bad value.
func (c Config) Validate() error {
	const k = "routing.retry."
	var errs []error
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf(k+"max_attempts: must be at least 1, got %d", c.MaxAttempts))
	}
	if c.InitialBackoff <= 0 {
		errs = append(errs, fmt.Errorf(k+"initial_backoff: must be positive, got %s", c.InitialBackoff))
	} else if c.MaxBackoff < c.InitialBackoff {
		errs = append(errs, fmt.Errorf(k+"max_backoff: must be at least initial_backoff (%s), got %s", c.InitialBackoff, c.MaxBackoff))
	}
	if !(c.Multiplier >= 1) || math.IsInf(c.Multiplier, 0) {
		errs = append(errs, fmt.Errorf(k+"multiplier: must be a finite number >= 1, got %g", c.Multiplier))
	}
	if !(c.Jitter >= 0 && c.Jitter <= 1) {
		errs = append(errs, fmt.Errorf(k+"jitter: must be between 0 and 1, got %g", c.Jitter))
	}
	return errors.Join(errs...)
}

// Delay is the wait before retry n (n >= 1; n < 1 is treated as 1). u is
// a uniform random number in [0, 1) (math/rand/v2.Float64 in production).
func (c Config) Delay(n int, u float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(c.InitialBackoff) * math.Pow(c.Multiplier, float64(n-1))
	if d > float64(c.MaxBackoff) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(c.MaxBackoff)
	}
	u = min(max(u, 0), 1)
	return time.Duration(d * (1 - c.Jitter*u))
}
