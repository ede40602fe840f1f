package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/responses/store"
)

// Options configure a Server.
type Options struct {
	// Config bounds the stored responses (the `responses:` block); zero
	// fields take store.DefaultConfig's.
	Config store.Config
	// Store keeps the stored responses; nil means a store.Memory configured
	// by Config. The store outlives reloads (Configure).
	Store store.Store
	// Logger receives the warnings of a store that fails; nil discards.
	Logger *slog.Logger
	// Registerer receives the stored responses' gauges; nil keeps them
	// private.
	Registerer prometheus.Registerer
	// Now is the clock of the stored responses' expiry; nil means
	// time.Now.
	Now func() time.Time
	// IdleTimeout is how long a WebSocket connection may wait for its
	// next message before it is closed; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// Server serves the Responses API's routes on a front door.
type Server struct {
	stored store.Store
	log    *slog.Logger
	now    func() time.Time
	// storeWarn thins the warnings of a store of responses that fails.
	storeWarn rate.Sometimes

	// The WebSocket connections (websocket.go): idle is their idle
	// timeout; lastBytes what their latest responses hold at once, at most
	// lastMax (responses.max_bytes).
	idle               time.Duration
	lastBytes, lastMax atomic.Int64
	conns              sync.WaitGroup  // the connections open
	base               context.Context // cancelled by stop: cuts their turns
	stop               context.CancelFunc
	mu                 sync.Mutex    // guards drained
	drained            bool          // Drain was called
	draining           chan struct{} // closed by Drain
}

// New returns the Responses API, keeping its responses as opts say;
// Dialect is what a front door mounts.
func New(opts Options) (*Server, error) {
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	a := &Server{stored: opts.Store, log: opts.Logger, now: opts.Now,
		storeWarn: rate.Sometimes{First: 3, Interval: 5 * time.Second},
		idle:      cmp.Or(opts.IdleTimeout, DefaultIdleTimeout), draining: make(chan struct{})}
	a.base, a.stop = context.WithCancel(context.Background())
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.stored == nil {
		a.stored = store.NewMemory(opts.Config, a.now)
	}
	a.configure(opts.Config)
	registerMetrics(opts.Registerer, a.stored)
	return a, nil
}

// Configure applies a reloaded `responses:` block to the store, when it
// takes one (the in-memory store); stored responses are kept.
func (a *Server) Configure(c store.Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	a.configure(c)
	return nil
}

func (a *Server) configure(c store.Config) {
	a.lastMax.Store(c.WithDefaults().MaxBytes)
	if s, ok := a.stored.(interface{ Configure(store.Config) }); ok {
		s.Configure(c)
	}
}

// Dialect is the Responses API's dialect on the front door
// (docs/ARCHITECTURE.md, "Front doors"): POST /v1/responses through the
// attempt loop, GET /v1/responses upgraded to the Responses API over
// WebSocket, and the stored responses' routes.
func (a *Server) Dialect() *proxy.Dialect {
	stored := func(sub string) func(proxy.Request, http.ResponseWriter, *http.Request) {
		return func(q proxy.Request, w http.ResponseWriter, r *http.Request) { a.serveStoredResponse(q, w, r, sub) }
	}
	return &proxy.Dialect{API: answer.APIResponses, Routes: []proxy.Route{
		{Pattern: "POST /v1/responses", Read: a.readResponses},
		{Pattern: "GET /v1/responses", Serve: a.serveWebSocket},
		{Pattern: "GET /v1/responses/{id}", Serve: stored("")},
		{Pattern: "DELETE /v1/responses/{id}", Serve: stored("")},
		{Pattern: "GET /v1/responses/{id}/input_items", Serve: stored("input_items")},
		{Pattern: "POST /v1/responses/{id}/cancel", Serve: stored("cancel")},
	}}
}

// registerMetrics registers the stored responses' gauges on reg (nil: a
// private registry), read at scrape time.
func registerMetrics(reg prometheus.Registerer, stored store.Store) {
	if reg == nil {
		reg = prometheus.NewRegistry() // discarded
	}
	const ns = "llmrouter"
	// The store of responses says what it holds when it can (the
	// in-memory one); a store that cannot reads 0.
	usage := func() (int, int64) {
		if u, ok := stored.(interface{ Usage() (int, int64) }); ok {
			return u.Usage()
		}
		return 0, 0
	}
	storedCount := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "responses_stored",
		Help: "Responses API responses stored now, against responses.max_stored."},
		func() float64 { n, _ := usage(); return float64(n) })
	storedBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "responses_stored_bytes",
		Help: "Estimated memory the stored Responses API responses take now, the earlier turns their conversations keep included, against responses.max_bytes."},
		func() float64 { _, b := usage(); return float64(b) })
	reg.MustRegister(storedCount, storedBytes)
}
