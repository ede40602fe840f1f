package store

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of the `responses:` block.
const (
	DefaultTTL       = time.Hour
	DefaultMaxStored = 10000
	DefaultMaxBytes  = 64 << 20
)

// Config is the `responses:` block: how long, how many and how much of
// the stored responses the router keeps for GET /v1/responses/{id},
// previous_response_id, item_reference and input_items
// (docs/ARCHITECTURE.md, "Responses API" and "Memory").
type Config struct {
	// TTL is how long a stored response can be read, deleted or continued
	// after it was stored; past it the id is unknown (404 for GET and
	// DELETE, 400 previous_response_not_found for previous_response_id).
	// A response continued from an expired one still carries the whole
	// conversation. Default 1h; 0 means the default.
	TTL time.Duration `mapstructure:"ttl"`
	// MaxStored caps the responses kept at once, in memory; storing one
	// more evicts the oldest. Each holds its own input and output items,
	// so the memory they take is about MaxStored times the typical turn
	// (docs/ARCHITECTURE.md, "Memory"). Default 10000; 0 means the
	// default.
	MaxStored int `mapstructure:"max_stored"`
	// MaxBytes caps the memory the stored responses take at once, as
	// estimated from what they hold (their items' text, their Response
	// JSON and a fixed cost per item), the turns a stored chain keeps
	// alive included; storing past it evicts the oldest until it fits. A
	// response whose conversation alone is larger is not stored (its
	// answer says store: false; a warning is logged). Both caps apply;
	// the first reached evicts. It bounds as much again, counted apart:
	// the latest responses WebSocket connections keep whatever their store
	// flag (internal/responses/api). Default 64 MiB; 0 means the default.
	MaxBytes int64 `mapstructure:"max_bytes"`
}

// DefaultConfig is the block's defaults.
func DefaultConfig() Config {
	return Config{TTL: DefaultTTL, MaxStored: DefaultMaxStored, MaxBytes: DefaultMaxBytes}
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.MaxStored == 0 {
		c.MaxStored = DefaultMaxStored
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	return c
}

// Validate reports every invalid field, each naming its key.
func (c Config) Validate() error {
	var errs []error
	if c.TTL < 0 {
		errs = append(errs, fmt.Errorf("responses.ttl: must not be negative, got %s", c.TTL))
	}
	if c.MaxStored < 0 {
		errs = append(errs, fmt.Errorf("responses.max_stored: must not be negative, got %d", c.MaxStored))
	}
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("responses.max_bytes: must not be negative, got %d", c.MaxBytes))
	}
	return errors.Join(errs...)
}
