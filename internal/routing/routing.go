package routing

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/pool"
	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// Options are a routing state's configuration.
type Options struct {
	Providers []provider.Descriptor
	Models    *route.Table
	Limits    limits.Config
	// Routing is the routing policy (the `routing:` block), handed to the
	// attempt loop whole; zero parts take their defaults
	// (policy.Config.WithDefaults).
	Routing policy.Config
	// Policy is what every provider's runtime shares: the breaker,
	// adaptive throttling, the quota recheck; zero fields take defaults.
	Policy shared.Policy
	// ClientKeys are the accepted anonymous client API keys; with no
	// NamedKeys either, client authentication is off.
	ClientKeys []string
	// NamedKeys are the named client keys (auth.keys): names unique,
	// limits valid.
	NamedKeys []ClientKey
	// Pricing overrides the embedded list prices (pricing:); entries
	// valid.
	Pricing []pricing.Entry
	// Logger receives the runtimes' warnings; nil discards. Set at New.
	Logger *slog.Logger
	// Registerer receives the per-provider metrics; nil keeps them
	// private. Set at New.
	Registerer prometheus.Registerer
	// Fleet, when not nil, shares every provider's state with the other
	// routers of a fleet (shared_state). Set at New; a reload keeps it.
	Fleet shared.Fleet
	// Spend, when not nil, shares the client keys' spend with the other
	// routers of a fleet (shared_state). Set at New.
	Spend clientkeys.Shared
	// SharedAffinity, when not nil, shares where conversations were
	// served with the other routers of a fleet (shared_state;
	// docs/ARCHITECTURE.md, "Affinity"). Set at New.
	SharedAffinity affinity.Shared
	// Now is the clock of admission decisions (buckets, backoff); nil
	// means time.Now. Set at New. A test seam: waits still use real
	// timers.
	Now func() time.Time
	// Rand draws uniformly from [0, 1) for ranking and backoff jitter; it
	// must be safe for concurrent use. nil means math/rand/v2. Set at New.
	// A test seam.
	Rand func() float64
}

// ClientKey is one named client key: its name and the hash of its
// secret, and what it may do.
type ClientKey struct {
	clientauth.Named
	Limits clientkeys.Limits
}

// withDefaults fills zero fields with their packages' defaults.
func (o Options) withDefaults() Options {
	o.Limits = o.Limits.WithDefaults()
	o.Routing = o.Routing.WithDefaults()
	o.Policy = o.Policy.WithDefaults()
	return o
}

// State is the routing state of one configuration: everything a request
// reads. It is immutable.
type State struct {
	// Providers are the providers by name; Order the same in config
	// order, for listings.
	Providers map[string]*failover.Provider
	Order     []*failover.Provider
	Models    *route.Table
	Limits    limits.Config
	// Routing is the routing policy, its defaults set.
	Routing policy.Config
	// Keys are the accepted client keys; Clients the runtimes of every
	// key, the anonymous one ("") included.
	Keys    clientauth.Keys
	Clients *clientkeys.Keys
	// Prices are the prices requests are charged at.
	Prices *pricing.Table
	// Created is the unix time the model list reports.
	Created int64
	// Domains: some provider names a failure domain.
	Domains bool
}

// Provider returns the named provider; nil when there is none (a reload
// removed it).
func (st *State) Provider(name string) *failover.Provider { return st.Providers[name] }

// Routes holds the routing state in force.
type Routes struct {
	st   atomic.Pointer[State]
	set  *pool.Pool      // the providers' runtimes
	keys *clientkeys.Set // the client keys' runtimes
	now  func() time.Time
	rnd  func() float64
	aff  affinity.Shared

	mu       sync.Mutex // guards closed, onUpdate; serializes Update and Close
	closed   bool
	onUpdate []func(prev, next *State)
}

// New builds the routing state of opts and starts its providers' prober
// loops; Close stops them.
func New(opts Options) (*Routes, error) {
	rt := &Routes{now: opts.Now, rnd: opts.Rand, aff: opts.SharedAffinity}
	if rt.now == nil {
		rt.now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt.set = pool.New(upstream.Options{Now: rt.now, Logger: log, Fleet: opts.Fleet}, opts.Registerer)
	rt.keys = clientkeys.NewSet(opts.Registerer, rt.now, opts.Spend)
	if err := rt.Update(opts); err != nil {
		rt.set.Close()
		return nil, err
	}
	return rt, nil
}

// Load returns the state in force.
func (rt *Routes) Load() *State { return rt.st.Load() }

// Now is the moment on the routing state's clock (Options.Now).
func (rt *Routes) Now() time.Time { return rt.now() }

// Rand is the draw for ranking and backoff jitter (Options.Rand); nil
// means math/rand/v2.
func (rt *Routes) Rand() func() float64 { return rt.rnd }

// SharedAffinity is the fleet's view of the conversations
// (Options.SharedAffinity); nil without shared_state.
func (rt *Routes) SharedAffinity() affinity.Shared { return rt.aff }

// Freed returns a channel closed when any provider's bulkhead frees a
// slot (pool.Pool.Freed).
func (rt *Routes) Freed() <-chan struct{} { return rt.set.Freed() }

// StateChanged returns a channel that receives soon after anything worth
// keeping across a restart changed (pool.Pool.Changed): a state-file
// saver waits on it to save within a moment rather than at its next tick.
func (rt *Routes) StateChanged() <-chan struct{} { return rt.set.Changed() }

// OnUpdate calls f with the state in force now (prev nil), and then on
// every Update with the state replaced and its replacement, before the
// replacement is in force; f must not call Update.
func (rt *Routes) OnUpdate(f func(prev, next *State)) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.onUpdate = append(rt.onUpdate, f)
	f(nil, rt.st.Load())
}

// Update replaces the routing state. Requests in flight finish on the state
// they started with. Providers whose settings did not change keep their
// runtime (breaker, buckets, stats); the others start fresh.
func (rt *Routes) Update(opts Options) error {
	if opts.Models == nil {
		return errors.New("routing: no model table")
	}
	opts = opts.withDefaults()
	// The same Validate functions the config loader runs: routes built
	// without a config file (tests, embedding) are held to the same rules.
	if err := errors.Join(opts.Limits.Validate(), opts.Routing.Validate(), opts.Policy.Validate(),
		validateKeys(opts.NamedKeys), pricing.Validate(opts.Pricing)); err != nil {
		return err
	}
	st := &State{
		Providers: make(map[string]*failover.Provider, len(opts.Providers)),
		Models:    opts.Models,
		Limits:    opts.Limits,
		Routing:   opts.Routing,
		Prices:    pricing.New(opts.Pricing),
		Created:   time.Now().Unix(),
	}
	for _, p := range opts.Providers {
		if p.Adapter == nil {
			return fmt.Errorf("routing: provider %q has no adapter", p.Name)
		}
		if _, dup := st.Providers[p.Name]; dup {
			return fmt.Errorf("routing: duplicate provider %q", p.Name)
		}
		p.Config = p.Config.WithDefaults()
		p.Config.Name, p.Config.Type = p.Name, p.Type
		u := &failover.Provider{Descriptor: p}
		st.Providers[p.Name] = u
		st.Order = append(st.Order, u)
		st.Domains = st.Domains || p.Config.Domain != ""
	}
	for _, name := range opts.Models.Names() {
		for _, t := range opts.Models.Lookup(name).Targets {
			if st.Providers[t.Provider] == nil {
				return fmt.Errorf("routing: model %q targets unknown provider %q", name, t.Provider)
			}
		}
	}
	named := make([]clientauth.Named, len(opts.NamedKeys))
	keySpecs := make([]clientkeys.Spec, len(opts.NamedKeys))
	for i, k := range opts.NamedKeys {
		named[i] = k.Named
		keySpecs[i] = clientkeys.Spec{Name: k.Name, Limits: k.Limits}
	}
	st.Keys = clientauth.NewKeys(opts.ClientKeys, named)

	ds := make([]provider.Descriptor, len(st.Order))
	for i, p := range st.Order {
		ds[i] = p.Descriptor
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return errors.New("routing: closed")
	}
	ups, err := rt.set.Update(ds, opts.Policy)
	if err != nil {
		return err
	}
	for i, p := range st.Order {
		p.Up = ups[i]
	}
	st.Clients = rt.keys.Update(keySpecs)
	prev := rt.st.Load()
	for _, f := range rt.onUpdate {
		f(prev, st)
	}
	rt.st.Store(st)
	return nil
}

// validateKeys checks named keys built without a config file (tests,
// embedding) as the config loader does.
func validateKeys(keys []ClientKey) error {
	var errs []error
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		key := fmt.Sprintf("auth.keys[%d]", i)
		if !clientkeys.NameOK(k.Name) || seen[k.Name] {
			errs = append(errs, fmt.Errorf("%s.name: must be a unique name of 1 to 64 letters, digits, _ . or -, got %q", key, k.Name))
		}
		seen[k.Name] = true
		errs = append(errs, k.Limits.Validate(key))
	}
	return errors.Join(errs...)
}

// Close stops the prober loops. Requests in flight are not affected; the
// HTTP server's Shutdown drains those.
func (rt *Routes) Close() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return
	}
	rt.closed = true
	rt.set.Close()
}
