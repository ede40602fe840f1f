package provider

import "context"

// Descriptor is one configured provider, built once from its config entry
// (docs/ARCHITECTURE.md, "Packages"): the one description of it that the
// routing state, the attempt loop, its runtime (breaker, buckets, stats),
// the fleet and the state file share. config.Provider stays what the YAML
// decodes into; the daemon builds a Descriptor from it (the adapter, the
// key) and nothing copies its fields again: what another package needs of
// a provider it reads here (Config, Endpoint, Probe), and what decides
// whether a reload keeps the provider's state is Equal.
type Descriptor struct {
	// Name is the provider's configured name (targets refer to it); Type
	// its adapter type (openai, anthropic, …).
	Name, Type string
	// Adapter sends its attempts; it must be safe for concurrent use.
	Adapter Adapter
	// Config is the entry's settings (limits, timeouts, domain); the
	// routing state applies their defaults and sets Name and Type in it.
	Config Config
	// Secrets are strings (the provider's API key) that must never reach
	// a client, a log line or /admin: provider messages that echo them
	// are redacted. Only here: the runtime redacts with the Secrets of the
	// Descriptor in force.
	Secrets []string
}

// Endpoint is what the adapter says about where it goes beyond base_url
// (EndpointOf): Bedrock's region and profile, Vertex's project and
// location; "" for the other types.
func (d Descriptor) Endpoint() string { return EndpointOf(d.Adapter) }

// Probe is the breaker's probe on a free endpoint (Prober); nil when the
// adapter has none: the provider is trusted again once its cooldown has
// passed.
func (d Descriptor) Probe() func(context.Context) error {
	if p, ok := d.Adapter.(Prober); ok {
		return p.Probe
	}
	return nil
}

// Equal reports whether d and e describe the same provider state: the
// same name, type, settings (every field of Config) and endpoint. A reload
// keeps the runtime (breaker, buckets, stats) of a provider whose
// Descriptor is Equal to the one in force. The adapter and the secrets do
// not decide: each reload builds a new adapter, and a key read anew from
// the same place (api_key_env, api_key_file) is the same account.
func (d Descriptor) Equal(e Descriptor) bool {
	return d.Name == e.Name && d.Type == e.Type && d.Config == e.Config && d.Endpoint() == e.Endpoint()
}
