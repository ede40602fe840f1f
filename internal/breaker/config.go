package breaker

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Config is the `breaker:` block of the config file (docs/CONFIG.md). One
// Config serves every provider; each provider gets its own Breaker built
// from it. The file is decoded over DefaultConfig, so a zero field only
// appears when someone wrote 0: for the two trip rules 0 switches the rule
// off, for everything else Validate rejects it.
type Config struct {
	// FailureThreshold says when a closed breaker trips.
	FailureThreshold Threshold `mapstructure:"failure_threshold"`
	// Cooldown says how long a tripped breaker stays open before the next
	// probe is due.
	Cooldown Cooldown `mapstructure:"cooldown"`
}

// Threshold holds the two trip rules of a closed breaker; either one trips
// it. Only outcomes whose Kind counts (outcome.Kind.Counts) are seen: OK is a
// success, every other counted kind a failure; client errors and
// cancellations are invisible. Auth and Quota trip at once whatever the
// rules say.
type Threshold struct {
	// Consecutive trips the breaker after this many counted failures in a
	// row, with no success between them. Default 5. 0 switches the rule
	// off. The run is kept inside Window: failures that rolled out of the
	// window no longer extend it.
	Consecutive int `mapstructure:"consecutive"`
	// Ratio trips the breaker when, over Window, failures/(successes +
	// failures) >= Ratio and at least MinRequests outcomes were seen. A
	// fraction in [0, 1]; default 0.5. 0 switches the rule off; 1 trips
	// only when every outcome in the window failed.
	Ratio float64 `mapstructure:"ratio"`
	// MinRequests is the number of counted outcomes (successes plus
	// failures) Window must hold before Ratio is judged, so that two
	// failures out of three calls do not trip a quiet provider. Default 20.
	// Must be >= 1 when Ratio is on; ignored when it is off.
	MinRequests int `mapstructure:"min_requests"`
	// Window is the rolling window both rules look at, kept in ten buckets
	// (so it is exact to a tenth of its length). Default 60s; at least 1s.
	// An outcome counts in the bucket of its admission: one reported more
	// than Window after its request was admitted is not counted at all
	// (Auth and Quota still trip).
	Window time.Duration `mapstructure:"window"`
}

// Cooldown is how long a tripped breaker stays open. The base depends on the
// kind of the failure that tripped it (or of the failed probe that reopened
// it); on each consecutive trip it grows ×Multiplier, up to Max. A probe
// success that closes the breaker resets the growth. Every duration must be
// > 0 and the three bases must not exceed Max.
type Cooldown struct {
	// Failure is the base cooldown for every kind not listed below
	// (server_error, overloaded, network, auth, quota, unknown). Default
	// 30s.
	Failure time.Duration `mapstructure:"failure"`
	// RateLimit is the base cooldown for rate_limited when the provider did
	// not say how long to wait; when it did (Retry-After and friends), its
	// wait is the base instead, still grown and capped at Max. Default 120s.
	RateLimit time.Duration `mapstructure:"rate_limit"`
	// Timeout is the base cooldown for timeout. Default 60s.
	Timeout time.Duration `mapstructure:"timeout"`
	// Multiplier grows the cooldown on each consecutive trip (a reopen
	// after a failed probe is one): the n-th trip in a row waits
	// base × Multiplier^(n-1). Default 1.5; must be >= 1 and finite; 1
	// means no growth.
	Multiplier float64 `mapstructure:"multiplier"`
	// Max caps every cooldown, the provider's own wait included (the rate
	// buckets honour a longer Retry-After on their own). Default 600s.
	Max time.Duration `mapstructure:"max"`
}

// DefaultConfig returns the defaults of the `breaker:` block:
// failure_threshold {consecutive: 5, ratio: 0.5, min_requests: 20,
// window: 60s}, cooldown {failure: 30s, rate_limit: 120s, timeout: 60s,
// multiplier: 1.5, max: 600s}.
func DefaultConfig() Config {
	return Config{
		FailureThreshold: Threshold{
			Consecutive: 5,
			Ratio:       0.5,
			MinRequests: 20,
			Window:      60 * time.Second,
		},
		Cooldown: Cooldown{
			Failure:    30 * time.Second,
			RateLimit:  120 * time.Second,
			Timeout:    60 * time.Second,
			Multiplier: 1.5,
			Max:        600 * time.Second,
		},
	}
}

// minWindow keeps the ten buckets at least 100ms wide.
const minWindow = time.Second

// Validate reports every invalid field, each error naming its key
// (`breaker.cooldown.multiplier: must be >= 1, got 0.5`), joined with
// errors.Join; nil means the Config is usable by New.
func (c Config) Validate() error {
	var errs []error

	t := c.FailureThreshold
	if t.Consecutive < 0 {
		errs = append(errs, fmt.Errorf("breaker.failure_threshold.consecutive: must be >= 0, got %d", t.Consecutive))
	}
	if !(t.Ratio >= 0 && t.Ratio <= 1) { // also rejects NaN
		errs = append(errs, fmt.Errorf("breaker.failure_threshold.ratio: must be in [0, 1], got %v", t.Ratio))
	}
	switch {
	case t.MinRequests < 0:
		errs = append(errs, fmt.Errorf("breaker.failure_threshold.min_requests: must be >= 0, got %d", t.MinRequests))
	case t.Ratio > 0 && t.MinRequests == 0:
		errs = append(errs, fmt.Errorf("breaker.failure_threshold.min_requests: must be >= 1 when ratio is on, got %d", t.MinRequests))
	}
	if t.Consecutive == 0 && t.Ratio == 0 {
		errs = append(errs, errors.New("breaker.failure_threshold: consecutive and ratio are both 0; at least one trip rule must be on"))
	}
	if t.Window < minWindow {
		errs = append(errs, fmt.Errorf("breaker.failure_threshold.window: must be >= %s, got %s", minWindow, t.Window))
	}

	cd := c.Cooldown
	if cd.Max <= 0 {
		errs = append(errs, fmt.Errorf("breaker.cooldown.max: must be > 0, got %s", cd.Max))
	}
	for _, f := range []struct {
		key string
		d   time.Duration
	}{{"failure", cd.Failure}, {"rate_limit", cd.RateLimit}, {"timeout", cd.Timeout}} {
		switch {
		case f.d <= 0:
			errs = append(errs, fmt.Errorf("breaker.cooldown.%s: must be > 0, got %s", f.key, f.d))
		case cd.Max > 0 && f.d > cd.Max:
			errs = append(errs, fmt.Errorf("breaker.cooldown.%s: must be <= breaker.cooldown.max (%s), got %s", f.key, cd.Max, f.d))
		}
	}
	if !(cd.Multiplier >= 1) || math.IsInf(cd.Multiplier, 1) { // also rejects NaN
		errs = append(errs, fmt.Errorf("breaker.cooldown.multiplier: must be >= 1 and finite, got %v", cd.Multiplier))
	}
	return errors.Join(errs...)
}

// trips is the window's trip rule (gobreaker's ReadyToTrip), asked after
// each counted failure of a closed breaker with the window's counts, that
// failure included. Auth and Quota do not come here: they trip at once.
func (t Threshold) trips(c gobreaker.Counts) bool {
	if t.Consecutive > 0 && int64(c.ConsecutiveFailures) >= int64(t.Consecutive) {
		return true
	}
	seen := uint64(c.TotalSuccesses) + uint64(c.TotalFailures)
	return t.Ratio > 0 && seen > 0 && seen >= uint64(t.MinRequests) &&
		float64(c.TotalFailures)/float64(seen) >= t.Ratio
}

// cooldown is how long the trips-th consecutive trip, caused by kind, keeps
// the breaker open. retryAfter is the provider's own wait (0: none given).
func (c Cooldown) cooldown(kind outcome.Kind, retryAfter time.Duration, trips int) time.Duration {
	base := c.Failure
	switch kind {
	case outcome.RateLimited:
		base = c.RateLimit
		if retryAfter > 0 {
			base = retryAfter
		}
	case outcome.Timeout:
		base = c.Timeout
	}
	d := float64(base) * math.Pow(c.Multiplier, float64(trips-1))
	if d >= float64(c.Max) { // also catches +Inf
		return c.Max
	}
	return time.Duration(d)
}
