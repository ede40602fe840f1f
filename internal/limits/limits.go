package limits

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// Defaults of the limits block for fields left zero.
const (
	DefaultBodyBufferBytes    = 64 << 20
	DefaultBodyReadTimeout    = 60 * time.Second
	DefaultClientWriteTimeout = 10 * time.Second
)

// Config is the `limits:` block: what one client, or many at once,
// may cost the router (docs/ARCHITECTURE.md, "Memory").
type Config struct {
	// MaxBodyBytes caps a request body; a larger one gets 413. Default
	// 10 MiB; must be positive and at most BodyBufferBytes.
	MaxBodyBytes int64 `mapstructure:"max_body_bytes"`
	// RequestTimeout bounds a whole request, all attempts and the whole
	// stream included; past it the client gets 504 (or, after the
	// commit point, a stream error event). Default 300s; must be positive.
	RequestTimeout time.Duration `mapstructure:"request_timeout"`
	// BodyBufferBytes bounds the memory all request bodies hold at once,
	// from their first byte until their request ends. Buffers grow as
	// bytes arrive, never from a declared Content-Length; a body that
	// would pass the budget gets 503 with Retry-After and its connection
	// is closed. Default 64 MiB; 0 means the default.
	BodyBufferBytes int64 `mapstructure:"body_buffer_bytes"`
	// BodyReadTimeout bounds how long a client may take to send its body;
	// past it the client gets 408 and the connection is closed. Default
	// 60s; 0 means the default.
	BodyReadTimeout time.Duration `mapstructure:"body_read_timeout"`
	// ClientWriteTimeout bounds one write to a client that has stopped
	// reading (a stream's event, a response body): past it the response
	// is cut, the provider call cancelled and its slot freed. Default 10s;
	// 0 means the default.
	ClientWriteTimeout time.Duration `mapstructure:"client_write_timeout"`
	// MaxConnections caps the API listener's open client connections;
	// further connections wait in the kernel's accept queue. With the
	// other limits it bounds the router's memory. Default 1024; 0 means
	// the default.
	MaxConnections int `mapstructure:"max_connections"`
	// MaxResponseBytes bounds a provider's whole (non-stream) answer, what
	// the router reads of it before it answers the client: a longer one,
	// or one whose Content-Length says so, is a server_error (it fails
	// over) and is read no further. A stream is bounded per event instead
	// (4 MiB an SSE event, 8 MiB a Bedrock frame). Default 256 MiB (an
	// embeddings answer for 2,048 inputs is 100 to 200 MB of JSON); 0
	// means the default.
	MaxResponseBytes int64 `mapstructure:"max_response_bytes"`
}

// DefaultMaxConnections is max_connections when left zero.
const DefaultMaxConnections = 1024

// WithDefaults returns c with zero optional fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.BodyBufferBytes == 0 {
		c.BodyBufferBytes = DefaultBodyBufferBytes
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if c.ClientWriteTimeout == 0 {
		c.ClientWriteTimeout = DefaultClientWriteTimeout
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = provider.DefaultMaxResponseBytes
	}
	return c
}

// Validate reports every invalid field, each naming its key.
func (c Config) Validate() error {
	var errs []error
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("limits.max_body_bytes: must be positive, got %d", c.MaxBodyBytes))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("limits.request_timeout: must be positive, got %s", c.RequestTimeout))
	}
	if c.BodyBufferBytes < 0 {
		errs = append(errs, fmt.Errorf("limits.body_buffer_bytes: must not be negative, got %d", c.BodyBufferBytes))
	} else if d := c.WithDefaults(); c.MaxBodyBytes > d.BodyBufferBytes {
		errs = append(errs, fmt.Errorf("limits.body_buffer_bytes: must be at least limits.max_body_bytes (%d), got %d",
			c.MaxBodyBytes, d.BodyBufferBytes))
	}
	if c.BodyReadTimeout < 0 {
		errs = append(errs, fmt.Errorf("limits.body_read_timeout: must not be negative, got %s", c.BodyReadTimeout))
	}
	if c.ClientWriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("limits.client_write_timeout: must not be negative, got %s", c.ClientWriteTimeout))
	}
	if c.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("limits.max_connections: must not be negative, got %d", c.MaxConnections))
	}
	if c.MaxResponseBytes < 0 {
		errs = append(errs, fmt.Errorf("limits.max_response_bytes: must not be negative, got %d", c.MaxResponseBytes))
	}
	return errors.Join(errs...)
}
