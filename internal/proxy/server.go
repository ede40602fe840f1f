package proxy

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/recent"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/shed"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// Options configure a front door.
type Options struct {
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// Registerer receives the front door's metrics; nil keeps them
	// private.
	Registerer prometheus.Registerer
	// Tracer makes every request's span and its attempts'
	// (docs/ARCHITECTURE.md, "Tracing"); nil is tracing off.
	Tracer *tracing.Tracer
	// Recent receives a record of every answered request, for the status
	// page (docs/ARCHITECTURE.md, "Status page"); nil keeps none.
	Recent *recent.Ring
}

// Server is the HTTP front door: the dialects' routes on the routing
// state in force.
type Server struct {
	routes *routing.Routes
	own    bool // Open built routes: Close closes them
	log    *slog.Logger
	trace  *tracing.Tracer // nil: tracing off
	loop   *failover.Loop  // the attempt loop
	bodies intake.Budget   // request body bytes held (limits.body_buffer_bytes)
	now    func() time.Time
	m      *metrics
	out    *answer.Writer // the one answer writer

	shedGate *shed.Gate // normal-priority slots while shedding

	mu       sync.Mutex // guards dialects
	dialects []*Dialect // mounted, the chat family's first
}

// New returns the front door on rt. Its metrics follow rt's model
// table and providers across reloads.
func New(rt *routing.Routes, opts Options) *Server {
	s := &Server{routes: rt, log: opts.Logger, trace: opts.Tracer, now: rt.Now, shedGate: shed.New()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.out = answer.New(s.log, opts.Registerer)
	s.out.KeepRecent(opts.Recent)
	s.m = newMetrics(opts.Registerer, s)
	s.loop = failover.New(failover.Options{Now: rt.Now, Rand: rt.Rand(), Logger: s.log, Freed: rt.Freed,
		SharedAffinity: rt.SharedAffinity()}, opts.Registerer)
	rt.OnUpdate(s.prepare)
	return s
}

// Open returns a front door on routing state of its own built from opts
// (tests, embedding); Close closes both.
func Open(opts routing.Options) (*Server, error) {
	rt, err := routing.New(opts)
	if err != nil {
		return nil, err
	}
	s := New(rt, Options{Logger: opts.Logger, Registerer: opts.Registerer})
	s.own = true
	return s, nil
}

// Routes is the routing state the front door serves.
func (s *Server) Routes() *routing.Routes { return s.routes }

// Update replaces the routing state (routing.Routes.Update).
func (s *Server) Update(opts routing.Options) error { return s.routes.Update(opts) }

// Close closes routing state Open built; a front door on routes of the
// daemon's leaves them to it.
func (s *Server) Close() {
	if s.own {
		s.routes.Close()
	}
}

// prepare keeps the series of every configured model and provider, and
// drops those of models and providers a reload removed.
func (s *Server) prepare(prev, next *routing.State) {
	var removedModels, removedProviders []string
	if prev != nil {
		for _, name := range prev.Models.Names() {
			if next.Models.Lookup(name) == nil || next.Models.Lookup(name).Name != name {
				removedModels = append(removedModels, name)
			}
		}
		for name := range prev.Providers {
			if next.Providers[name] == nil {
				removedProviders = append(removedProviders, name)
			}
		}
	}
	s.m.prepare()
	s.out.Prepare(next.Models.Names(), removedModels)
	s.out.PrepareCosts(next.Models, next.Prices)
	names := make([]string, len(next.Order))
	for i, p := range next.Order {
		names[i] = p.Name
	}
	s.loop.Prepare(names, removedProviders, next.Models.TierPairs())
	s.loop.PrepareModels(next.Models.Names(), removedModels)
}

// Handler returns the API handler: the chat family, the models list and
// the dialects ds (docs/ARCHITECTURE.md, "Front doors").
func (s *Server) Handler(ds ...*Dialect) http.Handler {
	mux := http.NewServeMux()
	s.Register(mux, ds...)
	return mux
}
