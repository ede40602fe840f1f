package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/responses/api"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/tracing"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// Build turns a loaded config into the routing state's options: it resolves
// every provider entry against types (its type and block), reads
// its API key, builds its adapter and builds the route table. serve, reload
// and validate all call it, so whatever one rejects the others reject with
// the same message. It reports every problem at once, joined, one per line,
// each naming its key (providers[0].base_url: …); it logs warnings
// (unknown LLMROUTER_ variables, client auth off) on log.
func Build(cfg *config.Config, types provider.Types, log *slog.Logger) (routing.Options, error) {
	for _, name := range cfg.UnknownEnv() {
		log.Warn("environment variable " + name + " overrides no config key; ignored")
	}
	var errs []error
	table, err := route.NewTable(route.WithKnown(cfg.Models, pricing.Known))
	errs = append(errs, err)
	opts := routing.Options{
		Models: table, Limits: cfg.Limits, Logger: log, Pricing: cfg.Pricing, Routing: cfg.Routing.Config,
		Policy: shared.Policy{Breaker: cfg.Breaker.Config, ThrottleK: cfg.Routing.AdaptiveThrottleK, QuotaRecheck: cfg.Breaker.QuotaRecheck},
	}
	resolved, err := cfg.ResolveTypes(types)
	errs = append(errs, err)
	for i, r := range resolved {
		if r.Type.Build == nil {
			continue // an unknown type: ResolveTypes said so
		}
		p := &cfg.Providers[i]
		pc := p.Config
		pc.MaxResponseBytes = cfg.Limits.MaxResponseBytes
		a, key, err := r.Type.NewAdapter(pc, r.Block)
		if err != nil {
			errs = append(errs, provider.Under(fmt.Sprintf("providers[%d]", i), err))
			continue
		}
		pp := provider.Descriptor{Name: p.Name, Type: p.Type, Adapter: a, Config: pc}
		if key != "" {
			pp.Secrets = []string{key}
		}
		opts.Providers = append(opts.Providers, pp)
	}
	named, err := cfg.Auth.Named(os.Getenv)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return routing.Options{}, err
	}
	keys, namedButEmpty := cfg.ClientKeys()
	if namedButEmpty && len(named) == 0 {
		log.Warn("client authentication is off: auth.api_keys_env names an empty variable", "variable", cfg.Auth.APIKeysEnv)
	}
	opts.ClientKeys = keys
	for i, n := range named {
		opts.NamedKeys = append(opts.NamedKeys, routing.ClientKey{Named: n, Limits: cfg.Auth.Keys[i].Limits})
	}
	return opts, nil
}

// Check builds from cfg and opts (Build's) what Start builds but the
// listeners, the fleet and the state file: the front door, the Responses
// API and the tracer (which connects to nothing until it exports). It
// reports what they refuse, and closes them.
func Check(cfg *config.Config, opts routing.Options) error {
	if _, err := cfg.AdminToken(os.Getenv); err != nil {
		return err
	}
	rt, err := routing.New(opts)
	if err == nil {
		_, err = api.New(api.Options{Config: cfg.Responses})
		rt.Close()
	}
	if err == nil {
		var tr *tracing.Tracer
		if tr, err = tracing.New(cfg.Tracing, tracing.Options{}); err == nil {
			_ = tr.Shutdown(context.Background())
		}
	}
	return err
}
