package proxy

import (
	"fmt"
	"time"
)

// AuthConfig is the `auth:` block.
type AuthConfig struct {
	// APIKeysEnv names the environment variable holding the client keys,
	// comma-separated. Empty, or a variable that is unset or empty, means
	// no client authentication (the router logs a warning when a named
	// variable is empty). Keys are compared in constant time and never
	// forwarded to providers.
	APIKeysEnv string `mapstructure:"api_keys_env"`
}

// LimitsConfig is the `limits:` block.
type LimitsConfig struct {
	// MaxBodyBytes caps a request body; a larger one gets 413. Default
	// 10 MiB; must be positive.
	MaxBodyBytes int64 `mapstructure:"max_body_bytes"`
	// RequestTimeout bounds a whole request, all attempts and the whole
	// stream included; past it the client gets 504 (or, after the
	// commit point, a stream error event). Default 300s; must be positive.
	RequestTimeout time.Duration `mapstructure:"request_timeout"`
}

// Validate reports the first invalid field, naming its key.
func (c LimitsConfig) Validate() error {
	if c.MaxBodyBytes <= 0 {
		return fmt.Errorf("limits.max_body_bytes: must be positive, got %d", c.MaxBodyBytes)
	}
	if c.RequestTimeout <= 0 {
		return fmt.Errorf("limits.request_timeout: must be positive, got %s", c.RequestTimeout)
	}
	return nil
}
