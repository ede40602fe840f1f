package config

import (
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/hedge"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/tracing"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// TestEmbeddedDefaultsAreThePackagesDefaults: every default has one
// source, the Go package that owns the setting (DefaultConfig,
// WithDefaults); the embedded default file spells the same values out so
// that environment overrides reach every key. This test keeps the two
// equal.
func TestEmbeddedDefaultsAreThePackagesDefaults(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Breaker.Config, breaker.DefaultConfig(); got != want {
		t.Errorf("breaker: embedded %+v, package default %+v", got, want)
	}
	if got, want := c.Routing.Retry.Config, backoff.DefaultConfig(); got != want {
		t.Errorf("routing.retry: embedded %+v, package default %+v", got, want)
	}
	if got, want := c.Routing.Weights, route.DefaultWeights(); got != want {
		t.Errorf("routing.score_weights: embedded %+v, package default %+v", got, want)
	}
	want := limits.Config{MaxBodyBytes: 10 << 20, RequestTimeout: 300 * time.Second}.WithDefaults()
	if c.Limits != want {
		t.Errorf("limits: embedded %+v, package defaults %+v", c.Limits, want)
	}
	if c.Breaker.QuotaRecheck != shared.DefaultQuotaRecheck {
		t.Errorf("breaker.quota_recheck: embedded %v, package default %v", c.Breaker.QuotaRecheck, shared.DefaultQuotaRecheck)
	}
	if got, want := c.Responses, store.DefaultConfig(); got != want {
		t.Errorf("responses: embedded %+v, package default %+v", got, want)
	}
	if got, want := c.Tracing, tracing.DefaultConfig(); got != want {
		t.Errorf("tracing: embedded %+v, package default %+v", got, want)
	}
	if got, want := c.Routing.Affinity, affinity.DefaultConfig(); got != want {
		t.Errorf("routing.affinity: embedded %+v, package default %+v", got, want)
	}
	if got, want := c.Routing.Hedge, hedge.DefaultConfig(); got != want {
		t.Errorf("routing.hedge: embedded %+v, package default %+v", got, want)
	}
	if c.Routing.ShedOpenFraction != policy.DefaultShedOpenFraction {
		t.Errorf("routing.shed_open_fraction: embedded %v, package default %v", c.Routing.ShedOpenFraction, policy.DefaultShedOpenFraction)
	}
}
