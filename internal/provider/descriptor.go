package provider

// Descriptor is one configured provider, built once from its config entry
// (docs/ARCHITECTURE.md, "Packages"): the one description of it that the
// routing state, the attempt loop, its runtime (breaker, buckets, stats),
// the fleet and the state file share. config.Provider stays what the YAML
// decodes into; the daemon builds a Descriptor from it (the adapter, the
// key) and nothing copies its fields again.
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
	// are redacted.
	Secrets []string
}
