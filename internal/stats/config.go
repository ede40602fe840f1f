package stats

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes the statistics of every provider; each provider gets its own
// Stats built from it. A zero field means its default, so Config{} is the
// defaults (the config file has no `stats:` block yet; if one is added it
// would be decoded into this type).
type Config struct {
	// Window is the sliding window of the success rate and the latency
	// percentiles, kept in 12 time buckets, so it is exact to a twelfth of
	// its length: an outcome stays in the window for between 11/12 Window
	// and Window, never longer. Default 60s; otherwise at least 1s.
	Window time.Duration `mapstructure:"window"`
	// EMAAlpha is the smoothing factor of the latency moving average: each
	// success moves it by EMAAlpha × (latency − average). In (0, 1];
	// default 0.2; 1 means the last latency only. The average is not
	// windowed: it keeps its value however long the provider stays quiet.
	EMAAlpha float64 `mapstructure:"ema_alpha"`
	// RecencyHalfLife is how fast Snapshot.Recency decays after the last
	// success: it halves every RecencyHalfLife. Default 60s; otherwise > 0.
	RecencyHalfLife time.Duration `mapstructure:"recency_half_life"`
}

// DefaultConfig returns the defaults: window 60s, ema_alpha 0.2,
// recency_half_life 60s.
func DefaultConfig() Config {
	return Config{
		Window:          60 * time.Second,
		EMAAlpha:        0.2,
		RecencyHalfLife: 60 * time.Second,
	}
}

// minWindow keeps the 12 buckets at least 83ms wide.
const minWindow = time.Second

// Validate reports every invalid field, each error naming its key
// (`stats.ema_alpha: must be in (0, 1], got 1.5`), joined with errors.Join;
// nil means New accepts the Config. Zero fields are valid: they mean the
// default.
func (c Config) Validate() error {
	var errs []error
	if c.Window != 0 && c.Window < minWindow {
		errs = append(errs, fmt.Errorf("stats.window: must be >= %s (or 0 for the default), got %s", minWindow, c.Window))
	}
	if c.EMAAlpha != 0 && !(c.EMAAlpha > 0 && c.EMAAlpha <= 1) { // also rejects NaN
		errs = append(errs, fmt.Errorf("stats.ema_alpha: must be in (0, 1] (or 0 for the default), got %v", c.EMAAlpha))
	}
	if c.RecencyHalfLife < 0 {
		errs = append(errs, fmt.Errorf("stats.recency_half_life: must be > 0 (or 0 for the default), got %s", c.RecencyHalfLife))
	}
	return errors.Join(errs...)
}

// withDefaults replaces every zero field with its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Window == 0 {
		c.Window = d.Window
	}
	if c.EMAAlpha == 0 {
		c.EMAAlpha = d.EMAAlpha
	}
	if c.RecencyHalfLife == 0 {
		c.RecencyHalfLife = d.RecencyHalfLife
	}
	return c
}
