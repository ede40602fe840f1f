package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/pool"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/shed"
	"github.com/llmrouter/llmrouter/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// Provider is one configured provider as the proxy sees it.
type Provider struct {
	// Name is the provider's configured name (targets refer to it).
	Name string
	// Type is the adapter type, for /admin/providers.
	Type string
	// Adapter sends attempts; it must be safe for concurrent use.
	Adapter provider.Adapter
	// Config holds the per-attempt timeouts (zero fields take defaults).
	Config provider.Config
	// Secrets are strings (the provider's API key) that must never reach
	// a client, a log line or /admin: provider messages that echo them
	// are redacted.
	Secrets []string
}

// Options configure a Server.
type Options struct {
	Providers []Provider
	Models    *route.Table
	Limits    LimitsConfig
	// Retry is the retry policy; the zero value means backoff.DefaultConfig.
	Retry backoff.Config
	// Policy is what every provider's runtime shares: the breaker,
	// adaptive throttling, the quota recheck; zero fields take defaults.
	Policy upstream.Policy
	// Weights are the score weights; the zero value means
	// route.DefaultWeights.
	Weights route.Weights
	// ShedOpenFraction: above this share of open providers, low priority
	// is refused and normal priority queues. 0 means 0.5; 1 never sheds.
	ShedOpenFraction float64
	// ClientKeys are the accepted client API keys; empty disables client
	// authentication.
	ClientKeys []string
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// Registerer receives the proxy's metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// Fleet, when not nil, shares every provider's state with the other
	// routers of a fleet (shared_state). Set at New; a reload keeps it.
	Fleet shared.Fleet
	// Now is the clock for admission decisions (buckets, backoff); nil
	// means time.Now. A test seam: waits still use real timers.
	Now func() time.Time
}

// state is everything a request reads; it is replaced whole by Update.
type state struct {
	providers map[string]*failover.Provider
	order     []*failover.Provider // config order, for listings
	models    *route.Table
	limits    LimitsConfig
	retry     backoff.Config
	weights   route.Weights
	shedAbove float64
	keys      clientauth.Keys
	created   int64 // unix time the model list reports
	// domains: some provider names a failure domain.
	domains bool
}

// domainDown returns, for now, whether another provider of a provider's
// failure domain is open (docs/ARCHITECTURE.md, "Selection").
func (st *state) domainDown(now time.Time) func(string) bool {
	var open map[string][]string // domain → its open providers
	for _, p := range st.order {
		if d := p.Config.Domain; d != "" {
			if isOpen, _ := p.Up.IsOpen(now); isOpen {
				if open == nil {
					open = make(map[string][]string)
				}
				open[d] = append(open[d], p.Name)
			}
		}
	}
	return func(name string) bool {
		p := st.providers[name]
		for _, o := range open[p.Config.Domain] {
			if o != name {
				return true
			}
		}
		return false
	}
}

// Server serves the OpenAI-compatible API.
type Server struct {
	st     atomic.Pointer[state]
	log    *slog.Logger
	set    *pool.Pool     // the providers' runtimes
	loop   *failover.Loop // the attempt loop
	bodies intake.Budget  // request body bytes held (limits.body_buffer_bytes)
	now    func() time.Time
	m      *metrics
	out    *answer.Writer // the one answer writer

	shedGate *shed.Gate // normal-priority slots while shedding

	mu     sync.Mutex // serializes Update and Close
	closed bool
}

// New returns a Server for opts and starts its providers' prober loops;
// Close stops them.
func New(opts Options) (*Server, error) {
	s := &Server{log: opts.Logger, now: opts.Now, shedGate: shed.New()}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.out = answer.New(s.log, opts.Registerer)
	s.m = newMetrics(opts.Registerer, s)
	s.set = pool.New(upstream.Options{Now: s.now, Logger: s.log, Fleet: opts.Fleet}, opts.Registerer)
	s.loop = failover.New(failover.Options{Now: s.now, Logger: s.log, Freed: s.set.Freed}, opts.Registerer)
	if err := s.Update(opts); err != nil {
		s.set.Close()
		return nil, err
	}
	return s, nil
}

// DefaultShedOpenFraction is routing.shed_open_fraction's default.
const DefaultShedOpenFraction = 0.5

// withDefaults fills zero fields with their packages' defaults.
func (o Options) withDefaults() Options {
	o.Limits = o.Limits.WithDefaults()
	if o.Retry == (backoff.Config{}) {
		o.Retry = backoff.DefaultConfig()
	}
	o.Policy = o.Policy.WithDefaults()
	if o.Weights == (route.Weights{}) {
		o.Weights = route.DefaultWeights()
	}
	if o.ShedOpenFraction == 0 {
		o.ShedOpenFraction = DefaultShedOpenFraction
	}
	return o
}

// ValidateShedOpenFraction checks routing.shed_open_fraction.
func ValidateShedOpenFraction(f float64) error {
	if !(f > 0 && f <= 1) {
		return fmt.Errorf("routing.shed_open_fraction: must be in (0, 1], got %g", f)
	}
	return nil
}

// Update replaces the routing state. Requests in flight finish on the state
// they started with. Providers whose settings did not change keep their
// runtime (breaker, buckets, stats); the others start fresh.
func (s *Server) Update(opts Options) error {
	if opts.Models == nil {
		return errors.New("proxy: no model table")
	}
	opts = opts.withDefaults()
	// The same Validate functions the config loader runs: a Server built
	// without a config file (tests, embedding) is held to the same rules.
	if err := errors.Join(opts.Limits.Validate(), opts.Retry.Validate(), opts.Policy.Validate(), opts.Weights.Validate(),
		ValidateShedOpenFraction(opts.ShedOpenFraction)); err != nil {
		return err
	}
	st := &state{
		providers: make(map[string]*failover.Provider, len(opts.Providers)),
		models:    opts.Models,
		limits:    opts.Limits,
		retry:     opts.Retry,
		weights:   opts.Weights,
		shedAbove: opts.ShedOpenFraction,
		created:   time.Now().Unix(),
	}
	var secrets [][]string
	for _, p := range opts.Providers {
		if p.Adapter == nil {
			return fmt.Errorf("proxy: provider %q has no adapter", p.Name)
		}
		if _, dup := st.providers[p.Name]; dup {
			return fmt.Errorf("proxy: duplicate provider %q", p.Name)
		}
		p.Config = p.Config.WithDefaults()
		p.Config.Name, p.Config.Type = p.Name, p.Type
		u := &failover.Provider{Name: p.Name, Adapter: p.Adapter, Config: p.Config}
		st.providers[p.Name] = u
		st.order = append(st.order, u)
		secrets = append(secrets, p.Secrets)
		st.domains = st.domains || p.Config.Domain != ""
	}
	for _, name := range opts.Models.Names() {
		for _, t := range opts.Models.Lookup(name).Targets {
			if st.providers[t.Provider] == nil {
				return fmt.Errorf("proxy: model %q targets unknown provider %q", name, t.Provider)
			}
		}
	}
	st.keys = clientauth.NewKeys(opts.ClientKeys)

	specs := make([]upstream.Spec, len(st.order))
	for i, p := range st.order {
		specs[i] = upstream.Spec{
			Settings: upstream.Settings{Provider: p.Config, Policy: opts.Policy},
			Secrets:  secrets[i],
		}
		if pr, ok := p.Adapter.(provider.Prober); ok {
			specs[i].Probe = pr.Probe
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("proxy: server closed")
	}
	ups, err := s.set.Update(specs)
	if err != nil {
		return err
	}
	for i, p := range st.order {
		p.Up = ups[i]
	}
	var removedModels, removedProviders []string
	if old := s.st.Load(); old != nil {
		for _, name := range old.models.Names() {
			// A name now served only by a pattern is gone as a label.
			if m := opts.Models.Lookup(name); m == nil || m.Name != name {
				removedModels = append(removedModels, name)
			}
		}
		for name := range old.providers {
			if st.providers[name] == nil {
				removedProviders = append(removedProviders, name)
			}
		}
	}
	s.m.prepare()
	s.out.Prepare(opts.Models.Names(), removedModels)
	names := make([]string, len(st.order))
	for i, p := range st.order {
		names[i] = p.Name
	}
	s.loop.Prepare(names, removedProviders, opts.Models.TierPairs())
	s.st.Store(st)
	return nil
}

// Close stops the prober loops. Requests in flight are not affected; the
// HTTP server's Shutdown drains those.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.set.Close()
}

// Handler returns the API handler of the front door's own routes: the
// chat family and the models (docs/ARCHITECTURE.md, "HTTP surface"). A
// router that serves the Responses API too mounts both on one mux
// (Register, internal/responses/api).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.Register(mux)
	return mux
}

// Register mounts the front door's routes on mux; every path no route
// serves gets the front door's 404 or 405.
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serveOp(w, r, provider.OpChat) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.serveOp(w, r, provider.OpCompletions) })
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) { s.serveOp(w, r, provider.OpEmbeddings) })
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /v1/models/{model...}", s.serveModel)
	mux.HandleFunc("/", s.serveNotFound)
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	st := s.st.Load()
	ex := s.newExchange(r, w, st, provider.OpChat)
	if !st.keys.Allow(r) {
		s.out.Answer(w, ex, answer.Unauthorized(r))
		return
	}
	list := openaiwire.ModelList{Object: openaiwire.ObjectList, Data: make([]openaiwire.Model, 0, len(st.models.Names()))}
	for _, n := range st.models.Names() {
		list.Data = append(list.Data, model(n, st.created))
	}
	b, _ := openaiwire.Append(nil, &list)
	s.out.Answer(w, ex, answer.Result{JSON: append(b, '\n')})
}

func (s *Server) serveModel(w http.ResponseWriter, r *http.Request) {
	st := s.st.Load()
	ex := s.newExchange(r, w, st, provider.OpChat)
	if !st.keys.Allow(r) {
		s.out.Answer(w, ex, answer.Unauthorized(r))
		return
	}
	name := r.PathValue("model")
	if st.models.Lookup(name) == nil {
		s.out.Answer(w, ex, answer.Result{Err: answer.ModelNotFound(name)})
		return
	}
	m := model(name, st.created)
	b, _ := openaiwire.Append(nil, &m)
	s.out.Answer(w, ex, answer.Result{JSON: append(b, '\n')})
}

func model(name string, created int64) openaiwire.Model {
	return openaiwire.Model{ID: name, Object: openaiwire.ObjectModel, Created: created, OwnedBy: "llmrouter"}
}

func (s *Server) serveNotFound(w http.ResponseWriter, r *http.Request) {
	ex := s.newExchange(r, w, s.st.Load(), provider.OpChat)
	// The body of an unknown route is not read: the answer ends the
	// connection.
	e := &answer.Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "not_found",
		Message: "unknown route " + r.Method + " " + answer.Quote(r.URL.Path), EndConn: r.ContentLength != 0}
	switch r.URL.Path {
	case "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/models":
		allow := "POST"
		if r.URL.Path == "/v1/models" {
			allow = "GET"
		}
		w.Header().Set("Allow", allow)
		e.Status, e.Code, e.Message = http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path+": use "+allow
	}
	s.out.Answer(w, ex, answer.Result{Err: e})
}
