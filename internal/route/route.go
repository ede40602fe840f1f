package route

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Target is one way to serve a model.
type Target struct {
	// Provider is the name of a configured provider.
	Provider string `mapstructure:"provider"`
	// Model is the provider's own model (for azure, the deployment name).
	Model string `mapstructure:"model"`
	// Tier orders fallbacks: 0 first, then 1, ... Targets of one tier
	// share the load; a later tier serves only when earlier ones cannot.
	Tier int `mapstructure:"tier"`
	// MaxOutputTokens caps the answer's length on this target: an output
	// limit the request sets above it (max_tokens, max_completion_tokens,
	// max_output_tokens), or one an adapter would send by default, is sent
	// to the provider as MaxOutputTokens (docs/ARCHITECTURE.md, "Output
	// limits"). A limit at or under it, and a request without one, are
	// sent as they are. 0 means the embedded model table's value for a
	// model it knows (WithKnown), else no cap; negative is invalid.
	MaxOutputTokens int64 `mapstructure:"max_output_tokens"`
	// ContextWindow is the most tokens the target's model reads: a request
	// whose prompt estimate alone exceeds it skips the target before any
	// call (docs/ARCHITECTURE.md, "Context windows"). 0 means the embedded
	// model table's value for a model it knows (WithKnown), else
	// unknown: never skipped. Negative is invalid.
	ContextWindow int64 `mapstructure:"context_window"`
	// FirstTokenTimeout bounds the wait for a stream's first content on
	// this target, in place of its provider's first_token_timeout (a
	// reasoning model may think for a minute where a small model on the
	// same provider answers in a second). 0 means the provider's;
	// negative is invalid.
	FirstTokenTimeout time.Duration `mapstructure:"first_token_timeout"`
}

// ModelConfig is one entry of the `models:` list: a name clients may ask
// for and the targets that serve it.
type ModelConfig struct {
	// Name is what clients send as "model". A name ending in `*` is a
	// pattern: it serves every requested name with the prefix before the
	// `*` ("claude-*" serves "claude-opus-4-1"); a lone "*" serves every
	// name not otherwise configured. `*` anywhere else is an error. An
	// exact name wins over a pattern, a longer pattern over a shorter one.
	Name string `mapstructure:"name"`
	// Targets serve the model; at least one.
	Targets []Target `mapstructure:"targets"`
}

// Validate checks one model entry against the set of configured provider
// names. It reports every problem, joined, each naming its key relative to
// the entry (targets[1].provider) and the bad value.
func (m ModelConfig) Validate(providers map[string]bool) error {
	var errs []error
	if m.Name == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	if i := strings.IndexByte(m.Name, '*'); i >= 0 && i != len(m.Name)-1 {
		errs = append(errs, fmt.Errorf("name: `*` may only end a pattern, got %q", m.Name))
	}
	if len(m.Targets) == 0 {
		errs = append(errs, fmt.Errorf("targets: model %q needs at least one target", m.Name))
	}
	seen := make(map[Target]bool, len(m.Targets))
	for i, t := range m.Targets {
		switch {
		case t.Provider == "":
			errs = append(errs, fmt.Errorf("targets[%d].provider: must not be empty", i))
		case !providers[t.Provider]:
			errs = append(errs, fmt.Errorf("targets[%d].provider: no provider named %q", i, t.Provider))
		}
		if t.Model == "" {
			errs = append(errs, fmt.Errorf("targets[%d].model: must not be empty", i))
		}
		if t.Tier < 0 {
			errs = append(errs, fmt.Errorf("targets[%d].tier: must not be negative, got %d", i, t.Tier))
		}
		if t.MaxOutputTokens < 0 {
			errs = append(errs, fmt.Errorf("targets[%d].max_output_tokens: must not be negative, got %d", i, t.MaxOutputTokens))
		}
		if t.ContextWindow < 0 {
			errs = append(errs, fmt.Errorf("targets[%d].context_window: must not be negative, got %d", i, t.ContextWindow))
		}
		if t.FirstTokenTimeout < 0 {
			errs = append(errs, fmt.Errorf("targets[%d].first_token_timeout: must not be negative, got %s", i, t.FirstTokenTimeout))
		}
		// A target is its provider, model and tier: two that differ only
		// in their cap, window or timeout are still one target.
		key := Target{Provider: t.Provider, Model: t.Model, Tier: t.Tier}
		if seen[key] {
			errs = append(errs, fmt.Errorf("targets[%d]: duplicate target %s/%s tier %d", i, t.Provider, t.Model, t.Tier))
		}
		seen[key] = true
	}
	return errors.Join(errs...)
}

// WithKnown returns models with each target's unset context_window and
// max_output_tokens set to what known says of its model (the embedded
// model table's, pricing.Known; 0: unknown, left unset); models itself is
// not modified.
func WithKnown(models []ModelConfig, known func(model string) (window, maxOutput int64)) []ModelConfig {
	out := slices.Clone(models)
	for i := range out {
		out[i].Targets = slices.Clone(out[i].Targets)
		for j := range out[i].Targets {
			t := &out[i].Targets[j]
			window, maxOut := known(t.Model)
			if t.ContextWindow == 0 {
				t.ContextWindow = window
			}
			if t.MaxOutputTokens == 0 {
				t.MaxOutputTokens = maxOut
			}
		}
	}
	return out
}

// Model is a model's resolved targets, sorted by tier (stable: config
// order within a tier).
type Model struct {
	// Name is the name as configured: for a pattern, the pattern
	// ("claude-*"), not the name a request matched it with, so that
	// metrics labelled by it stay bounded.
	Name    string
	Targets []Target
	// BestTier is the lowest tier configured for the model; an answer from
	// a higher tier is degraded.
	BestTier int
}

// Table maps model names to their targets. The zero value has no models.
// A Table is immutable and safe for concurrent use.
type Table struct {
	// models holds every configured name, patterns under their configured
	// name too, so that an exact lookup is one map hit.
	models map[string]*Model
	// patterns are the names ending in `*`, longest prefix first: the
	// first that matches is the most specific. Scanned only on a miss.
	patterns []pattern
	names    []string // sorted, for listing
}

// pattern is a model whose name ends in `*`.
type pattern struct {
	prefix string // the name without its `*`
	model  *Model
}

// NewTable builds a table from validated model entries.
func NewTable(models []ModelConfig) (*Table, error) {
	t := &Table{models: make(map[string]*Model, len(models))}
	for i, mc := range models {
		if _, dup := t.models[mc.Name]; dup {
			return nil, fmt.Errorf("models[%d].name: duplicate model %q", i, mc.Name)
		}
		targets := slices.Clone(mc.Targets)
		slices.SortStableFunc(targets, func(a, b Target) int { return cmp.Compare(a.Tier, b.Tier) })
		m := &Model{Name: mc.Name, Targets: targets}
		if len(targets) > 0 {
			m.BestTier = targets[0].Tier
		}
		t.models[mc.Name] = m
		t.names = append(t.names, mc.Name)
		if prefix, ok := strings.CutSuffix(mc.Name, "*"); ok {
			t.patterns = append(t.patterns, pattern{prefix: prefix, model: m})
		}
	}
	// Two prefixes of one length that both match a name are equal, and
	// equal names are duplicates: among patterns of one length at most one
	// matches, so the order within a length does not matter.
	slices.SortStableFunc(t.patterns, func(a, b pattern) int { return cmp.Compare(len(b.prefix), len(a.prefix)) })
	slices.Sort(t.names)
	return t, nil
}

// Lookup returns the model that serves name: the model configured with
// exactly that name, else the pattern with the longest prefix of name, else
// nil. A pattern's model keeps its configured Name ("claude-*").
func (t *Table) Lookup(name string) *Model {
	if t == nil {
		return nil
	}
	if m, ok := t.models[name]; ok {
		return m
	}
	for _, p := range t.patterns {
		if strings.HasPrefix(name, p.prefix) {
			return p.model
		}
	}
	return nil
}

// Names returns the configured model names as configured (patterns with
// their `*`), sorted. The slice must not be modified.
func (t *Table) Names() []string {
	if t == nil {
		return nil
	}
	return t.names
}

// TierPairs are the (from, to) tier pairs a failover can cross in the
// table's models, each once.
func (t *Table) TierPairs() [][2]int {
	seen := map[[2]int]bool{}
	var out [][2]int
	for _, name := range t.Names() {
		m := t.Lookup(name)
		for _, a := range m.Targets {
			for _, b := range m.Targets {
				if p := [2]int{a.Tier, b.Tier}; a.Tier != b.Tier && !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	return out
}
