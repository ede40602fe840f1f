package hedge

import (
	"fmt"
	"sync"
	"time"
)

// Config is `routing.hedge` (docs/ARCHITECTURE.md, "Hedging").
type Config struct {
	// After is how long an attempt may go without its first content (a
	// stream's first content event, a whole answer otherwise) before it
	// gets a twin on another provider. 0 (the default) turns hedging off;
	// otherwise it must be positive.
	After time.Duration `mapstructure:"after"`
	// MaxShare caps the share of the router's recent requests (about the
	// last Window) that hedge. Range (0, 1]; default 0.05 (WithDefaults
	// sets a zero one; Validate refuses it).
	MaxShare float64 `mapstructure:"max_share"`
}

// DefaultMaxShare is Config.MaxShare's default.
const DefaultMaxShare = 0.05

// DefaultConfig is the block's defaults: off, at most 5% when turned on.
func DefaultConfig() Config { return Config{MaxShare: DefaultMaxShare} }

// On reports whether requests hedge.
func (c Config) On() bool { return c.After > 0 }

// WithDefaults returns c with a zero MaxShare set to its default.
func (c Config) WithDefaults() Config {
	if c.MaxShare == 0 {
		c.MaxShare = DefaultMaxShare
	}
	return c
}

// Validate checks the block, naming the key.
func (c Config) Validate() error {
	if c.After < 0 {
		return fmt.Errorf("routing.hedge.after: must not be negative (0 turns hedging off), got %s", c.After)
	}
	if !(c.MaxShare > 0 && c.MaxShare <= 1) {
		return fmt.Errorf("routing.hedge.max_share: must be in (0, 1], got %g", c.MaxShare)
	}
	return nil
}

// Window is about how many recent requests Share weighs.
const Window = 200

// decay is what every request multiplies both counts by.
const decay = 1 - 1.0/Window

// Share caps the share of recent requests that hedge. The zero value is
// ready: no request seen yet, so no hedge allowed until max share of the
// requests counted makes room for one. It is safe for concurrent use.
type Share struct {
	mu     sync.Mutex // guards total, hedged
	total  float64    // decayed count of requests
	hedged float64    // decayed count of hedges
}

// Request counts one request (every request of a router that hedges,
// whether it hedges or not).
func (s *Share) Request() {
	s.mu.Lock()
	s.total = s.total*decay + 1
	s.hedged *= decay
	s.mu.Unlock()
}

// Take reports whether one more hedge stays within max of the recent
// requests, and counts it when it does. A hedge that is taken and then not
// sent (its provider refused it) is given back with Return.
func (s *Share) Take(max float64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hedged+1 > max*s.total {
		return false
	}
	s.hedged++
	return true
}

// Return gives back a hedge Take counted and that was not sent.
func (s *Share) Return() {
	s.mu.Lock()
	s.hedged = max(s.hedged-1, 0)
	s.mu.Unlock()
}
