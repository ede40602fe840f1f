package policy

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/hedge"
	"github.com/llmrouter/llmrouter/internal/route"
)

// Config is the `routing:` block but adaptive_throttle_k, which belongs to
// every provider's runtime (shared.Policy). The zero Config takes every
// default (WithDefaults).
type Config struct {
	// Weights weigh success rate, latency and recency in a provider's
	// score. Default 0.6 / 0.2 / 0.2.
	Weights route.Weights `mapstructure:"score_weights"`
	// Retry bounds attempts and the backoff between retries of the same
	// provider.
	Retry Retry `mapstructure:"retry"`
	// ShedOpenFraction: when more than this share of providers have open
	// breakers, low priority is refused and normal priority queues.
	// Range (0, 1]; 1 never sheds. Default 0.5 (0 means the default).
	ShedOpenFraction float64 `mapstructure:"shed_open_fraction"`
	// Affinity keeps a conversation on the target that served it last
	// (where its prompt cache is). The embedded default turns it on
	// (ttl 1h); the zero value is off.
	Affinity affinity.Config `mapstructure:"affinity"`
	// Hedge races a twin attempt on another provider when the first has
	// no first content after `after`, for at most max_share of recent
	// requests. Default off (after 0s), max_share 0.05.
	Hedge hedge.Config `mapstructure:"hedge"`
	// Stream is what happens to a stream after its first content: a stall
	// and a rescue.
	Stream Stream `mapstructure:"stream"`
}

// Stream is `routing.stream` (docs/ARCHITECTURE.md, "Streaming").
type Stream struct {
	// IdleTimeout is how long a stream may go without a byte from its
	// provider after its first content: past it the attempt fails as a
	// timeout (a stall). The provider's own pings and comments are bytes;
	// the router's pings to its client are not. 0 means the default, 30s;
	// must not be negative. Separate from the provider's timeout, which
	// bounds the whole attempt.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// Rescue continues a stream that failed after its first content on a
	// target whose provider sets continue_final_message, relayed into the
	// same client stream. The embedded default turns it on; the zero
	// value is off.
	Rescue bool `mapstructure:"rescue"`
}

// DefaultIdleTimeout is routing.stream.idle_timeout's default.
const DefaultIdleTimeout = 30 * time.Second

// Retry is `routing.retry`: the attempts a request may make and the waits
// between retries of one provider (backoff.Config).
type Retry struct {
	backoff.Config `mapstructure:",squash"`
	// TierWait is how long a request may wait for its better tier through
	// a blip before it degrades to a lower one (docs/ARCHITECTURE.md,
	// "Retries and failover"). 0 moves on at once (the zero Config's, as
	// before tier_wait existed); the embedded default is 3s; must not be
	// negative.
	TierWait time.Duration `mapstructure:"tier_wait"`
}

// DefaultShedOpenFraction is routing.shed_open_fraction's default.
const DefaultShedOpenFraction = 0.5

// WithDefaults returns c with zero parts set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Weights == (route.Weights{}) {
		c.Weights = route.DefaultWeights()
	}
	if c.Retry.Config == (backoff.Config{}) {
		c.Retry.Config = backoff.DefaultConfig()
	}
	if c.ShedOpenFraction == 0 {
		c.ShedOpenFraction = DefaultShedOpenFraction
	}
	c.Affinity = c.Affinity.WithDefaults()
	c.Hedge = c.Hedge.WithDefaults()
	if c.Stream.IdleTimeout == 0 {
		c.Stream.IdleTimeout = DefaultIdleTimeout
	}
	return c
}

// Validate reports every invalid setting, joined, each naming its key
// under routing.
func (c Config) Validate() error {
	var errs []error
	errs = append(errs, c.Weights.Validate(), c.Retry.Validate(), c.Affinity.Validate(), c.Hedge.Validate())
	if c.Stream.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("routing.stream.idle_timeout: must not be negative (0 is the default, 30s), got %s", c.Stream.IdleTimeout))
	}
	if !(c.ShedOpenFraction > 0 && c.ShedOpenFraction <= 1) {
		errs = append(errs, fmt.Errorf("routing.shed_open_fraction: must be in (0, 1], got %g", c.ShedOpenFraction))
	}
	return errors.Join(errs...)
}

// Validate reports every invalid field of routing.retry, joined.
func (r Retry) Validate() error {
	var err error
	if r.TierWait < 0 {
		err = fmt.Errorf("routing.retry.tier_wait: must not be negative (0 moves on at once), got %s", r.TierWait)
	}
	return errors.Join(r.Config.Validate(), err)
}
