package affinity

import (
	"fmt"
	"time"
)

// Config is `routing.affinity` (docs/ARCHITECTURE.md, "Affinity").
type Config struct {
	// Enabled keeps each conversation on the target that served its last
	// turn while that target is healthy, admits the request and is in the
	// best tier that has an available target. The embedded default turns
	// it on; the zero Config is off.
	Enabled bool `mapstructure:"enabled"`
	// TTL is how long a conversation is remembered after its last served
	// turn. Default 1h (0 means the default); at least 1s.
	TTL time.Duration `mapstructure:"ttl"`
}

// DefaultTTL is Config.TTL's default.
const DefaultTTL = time.Hour

// DefaultConfig is the block's defaults: on, remembered for an hour.
func DefaultConfig() Config { return Config{Enabled: true, TTL: DefaultTTL} }

// WithDefaults returns c with a zero TTL set to its default.
func (c Config) WithDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	return c
}

// Validate checks the block, naming the key.
func (c Config) Validate() error {
	if c.TTL != 0 && c.TTL < time.Second {
		return fmt.Errorf("routing.affinity.ttl: must be at least 1s (or 0 for the default), got %s", c.TTL)
	}
	return nil
}
