package tracing

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
)

// DefaultSampleRatio is tracing.sample_ratio's default: every new trace
// is kept.
const DefaultSampleRatio = 1.0

// Config is the `tracing:` block (docs/CONFIG.md): OpenTelemetry spans for
// every request and attempt, exported over OTLP/HTTP. Off while
// OTLPEndpoint is "".
type Config struct {
	// OTLPEndpoint is the OTLP/HTTP collector's base URL, e.g.
	// http://otel-collector:4318 (spans go to its /v1/traces, as with
	// OTEL_EXPORTER_OTLP_ENDPOINT); a URL whose path already ends in
	// /v1/traces is used as it is. https:// verifies the collector's
	// certificate (OTEL_EXPORTER_OTLP_CERTIFICATE and the client
	// certificate variables apply). "" means tracing is off: no
	// exporter, no goroutine, nothing on the request path. It wins over
	// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
	// the other OTEL_EXPORTER_OTLP_* variables (headers, timeout,
	// compression, certificates) are honoured.
	OTLPEndpoint string `mapstructure:"otlp_endpoint"`
	// SampleRatio is the share of new traces kept, in [0, 1]. A request
	// whose client sent a sampled traceparent is always kept, one sent
	// unsampled never (parent-based sampling), whatever the ratio; 0
	// keeps only the clients' sampled traces. Default 1.
	SampleRatio float64 `mapstructure:"sample_ratio"`
}

// DefaultConfig is the block's defaults: off, every new trace kept once
// on.
func DefaultConfig() Config { return Config{SampleRatio: DefaultSampleRatio} }

// On reports whether tracing is configured.
func (c Config) On() bool { return c.OTLPEndpoint != "" }

// Validate reports every invalid field, each naming its key.
func (c Config) Validate() error {
	var errs []error
	if c.OTLPEndpoint != "" {
		if _, err := tracesURL(c.OTLPEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("tracing.otlp_endpoint: %w", err))
		}
	}
	if math.IsNaN(c.SampleRatio) || c.SampleRatio < 0 || c.SampleRatio > 1 {
		errs = append(errs, fmt.Errorf("tracing.sample_ratio: must be between 0 and 1, got %v", c.SampleRatio))
	}
	return errors.Join(errs...)
}

// tracesPath is where an OTLP/HTTP collector takes spans.
const tracesPath = "/v1/traces"

// tracesURL is the URL spans are sent to for the endpoint ep: its
// /v1/traces unless its path already ends so.
func tracesURL(ep string) (*url.URL, error) {
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("must be an http:// or https:// URL such as http://otel-collector:4318, got %q", ep)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("must be scheme://host[:port][/path] without credentials, query or fragment (headers go in OTEL_EXPORTER_OTLP_HEADERS), got %q", u.Redacted())
	}
	if !strings.HasSuffix(u.Path, tracesPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	}
	return u, nil
}
