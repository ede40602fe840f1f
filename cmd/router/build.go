package main

import (
	"fmt"
	"log/slog"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/gemini"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
)

// buildOptions turns a validated config into the proxy's options: it
// resolves provider keys and builds one adapter per provider.
func buildOptions(cfg *config.Config, log *slog.Logger) (proxy.Options, error) {
	table, err := route.NewTable(cfg.Models)
	if err != nil {
		return proxy.Options{}, err
	}
	opts := proxy.Options{
		Models: table, Limits: cfg.Limits, Logger: log,
		Retry: cfg.Routing.Retry, Breaker: cfg.Breaker, Weights: cfg.Routing.ScoreWeights,
		ThrottleK: cfg.Routing.AdaptiveThrottleK, ShedOpenFraction: cfg.Routing.ShedOpenFraction,
	}
	for i := range cfg.Providers {
		p := &cfg.Providers[i]
		key, err := p.ResolveKey()
		if err != nil {
			return proxy.Options{}, fmt.Errorf("providers[%d] (%s): %w", i, p.Name, err)
		}
		a, err := buildAdapter(p, key)
		if err != nil {
			return proxy.Options{}, fmt.Errorf("providers[%d] (%s): %w", i, p.Name, err)
		}
		pp := proxy.Provider{Name: p.Name, Type: p.Type, Adapter: a, Config: p.Config}
		if key != "" {
			pp.Secrets = []string{key}
		}
		opts.Providers = append(opts.Providers, pp)
	}
	keys, namedButEmpty := cfg.ClientKeys()
	if namedButEmpty {
		log.Warn("client authentication is off: auth.api_keys_env names an empty variable", "variable", cfg.Auth.APIKeysEnv)
	}
	opts.ClientKeys = keys
	return opts, nil
}

func buildAdapter(p *config.Provider, key string) (provider.Adapter, error) {
	switch p.Type {
	case "simulated":
		return simulated.New(p.Config, deref(p.Simulated))
	case "openai", "azure", "openai_compatible":
		f, _ := openai.ParseFlavor(p.Type)
		return openai.New(f, p.Config, key, deref(p.Azure), nil)
	case "gemini":
		return gemini.New(p.Config, key, deref(p.Gemini), nil)
	case "anthropic":
		return anthropic.New(p.Config, key, deref(p.Anthropic), nil)
	}
	return nil, fmt.Errorf("type: %s adapters are not built in yet", p.Type)
}

// deref returns *c, or the zero value (the adapter's defaults) for nil.
func deref[T any](c *T) T {
	var zero T
	if c == nil {
		return zero
	}
	return *c
}
