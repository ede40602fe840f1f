package answer

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/route"
)

// Histogram buckets. LLM calls take from tens of milliseconds to minutes;
// the router's own overhead is tens of microseconds.
var (
	latencyBuckets  = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	ttftBuckets     = []float64{.01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 20, 60}
	overheadBuckets = []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 50e-3, 100e-3}
)

// metrics are the request families (docs/ARCHITECTURE.md, "Metrics"); the
// per-provider families live with the providers' runtimes
// (internal/upstream), shedding's with the front door (internal/proxy).
// Labels are bounded: model comes from the config, api from four values,
// code from the statuses this package writes.
type metrics struct {
	requests      *prometheus.CounterVec   // api, model, code
	duration      *prometheus.HistogramVec // api, model
	ttft          *prometheus.HistogramVec // api, model
	overhead      prometheus.Histogram
	degraded      *prometheus.CounterVec // api, model
	recovered     *prometheus.CounterVec // api, model
	writeTimeouts prometheus.Counter
	cost          *prometheus.CounterVec // model, provider
	unpriced      *prometheus.CounterVec // provider, model (the provider's)

	// children are the series requests used, by model and then family
	// and the other label values: a request's observations skip the
	// vector's label checks, hashing and read lock (one string-keyed map
	// lookup and a short scan instead). Read without a lock, copied on
	// write; Prepare and PrepareCosts empty it after deleting series, so
	// it never hands out a deleted one.
	children   atomic.Pointer[map[string][]childEntry]
	childrenMu sync.Mutex // serializes writers of children and their lookups in the vectors
}

// family names one of the request families in a childKey.
type family uint8

const (
	famRequests  family = iota // api, model, code
	famDuration                // api, model
	famTTFT                    // api, model
	famDegraded                // api, model
	famRecovered               // api, model
	famCost                    // model, provider
	famUnpriced                // provider, model (the provider's)
)

// childKey is one series: its family, its model label and the other
// label values (a: api or provider; c: requests_total's code).
type childKey struct {
	fam   family
	model string
	a, c  string
}

// childEntry is one series of a model in children.
type childEntry struct {
	fam  family
	a, c string
	child
}

// child is one series: a counter or an observer, by its family.
type child struct {
	counter  prometheus.Counter
	observer prometheus.Observer
}

// child returns the series k, creating it as WithLabelValues does (so a
// series appears when first used, as before the cache).
func (m *metrics) child(k childKey) child {
	if cs := m.children.Load(); cs != nil {
		for _, e := range (*cs)[k.model] {
			if e.fam == k.fam && e.a == k.a && e.c == k.c {
				return e.child
			}
		}
	}
	m.childrenMu.Lock()
	defer m.childrenMu.Unlock()
	var c child
	switch k.fam {
	case famRequests:
		c.counter = m.requests.WithLabelValues(k.a, k.model, k.c)
	case famDuration:
		c.observer = m.duration.WithLabelValues(k.a, k.model)
	case famTTFT:
		c.observer = m.ttft.WithLabelValues(k.a, k.model)
	case famDegraded:
		c.counter = m.degraded.WithLabelValues(k.a, k.model)
	case famRecovered:
		c.counter = m.recovered.WithLabelValues(k.a, k.model)
	case famCost:
		c.counter = m.cost.WithLabelValues(k.model, k.a)
	case famUnpriced:
		c.counter = m.unpriced.WithLabelValues(k.a, k.model)
	}
	next := make(map[string][]childEntry)
	if cs := m.children.Load(); cs != nil {
		for model, es := range *cs {
			next[model] = es
		}
	}
	es := next[k.model]
	next[k.model] = append(es[:len(es):len(es)], childEntry{fam: k.fam, a: k.a, c: k.c, child: c})
	m.children.Store(&next)
	return c
}

// forget empties the series cache; called after series were deleted,
// under the writers' lock so that no lookup begun before the deletion
// stores its (deleted) series after it.
func (m *metrics) forget() {
	m.childrenMu.Lock()
	m.children.Store(nil)
	m.childrenMu.Unlock()
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry() // discarded
	}
	const ns = "llmrouter"
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "Client requests by API (chat, completions, embeddings, responses), model and the HTTP status they were answered with."}, []string{"api", "model", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "request_duration_seconds",
			Help: "Whole client request duration, all attempts and the whole stream included.", Buckets: latencyBuckets}, []string{"api", "model"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_token_seconds",
			Help: "Time from the request's arrival to the first content sent to the client (streams).", Buckets: ttftBuckets}, []string{"api", "model"}),
		overhead: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "overhead_seconds",
			Help: "Time spent in the router itself, not waiting on providers, up to the commit point.", Buckets: overheadBuckets}),
		degraded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "degraded_responses_total",
			Help: "Responses served by a tier below the model's best."}, []string{"api", "model"}),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "recovered_requests_total",
			Help: "Requests served only after a retry or a failover."}, []string{"api", "model"}),
		writeTimeouts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "client_write_timeouts_total",
			Help: "Responses cut because the client stopped reading for limits.client_write_timeout; their provider calls were cancelled."}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cost_usd_total",
			Help: "What served requests cost, in US dollars at the configured or embedded prices, by the model asked for and the provider that served it."}, []string{"model", "provider"}),
		unpriced: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "unpriced_requests_total",
			Help: "Requests served by a provider's model that has no price (counted as costing 0): add a pricing: entry."}, []string{"provider", "model"}),
	}
	reg.MustRegister(m.requests, m.duration, m.ttft, m.overhead, m.degraded, m.recovered, m.writeTimeouts, m.cost, m.unpriced)
	return m
}

// APIResponses is the api label of the Responses API's requests.
const APIResponses = "responses"

// APIs sets the api label's values: the front-door dialects mounted
// (docs/ARCHITECTURE.md, "Front doors"). The series of every api and
// configured model are created at once.
func (s *Writer) APIs(apis ...string) {
	s.mu.Lock()
	s.apis = apis
	models := s.models
	s.mu.Unlock()
	s.Prepare(models, nil)
}

// Prepare creates the series of every configured model, so that rate()
// and the alert rules work before their first event, and deletes those of
// models a reload removed.
func (s *Writer) Prepare(models, removed []string) {
	s.mu.Lock()
	s.models = models
	apis := s.apis
	s.mu.Unlock()
	m := s.m
	for _, name := range removed {
		for _, v := range []*prometheus.MetricVec{m.requests.MetricVec, m.duration.MetricVec, m.ttft.MetricVec,
			m.degraded.MetricVec, m.recovered.MetricVec} {
			v.DeletePartialMatch(prometheus.Labels{"model": name})
		}
	}
	if len(removed) > 0 {
		m.forget()
	}
	for _, name := range models {
		for _, api := range apis {
			m.degraded.WithLabelValues(api, name)
			m.recovered.WithLabelValues(api, name)
			m.duration.WithLabelValues(api, name)
			m.ttft.WithLabelValues(api, name)
		}
	}
}

// PrepareCosts creates the cost series of every model and provider that
// serves it, and the unpriced series of every target without a price, so
// that rate() and alerts work before their first request; it deletes the
// series of pairs a reload removed.
func (s *Writer) PrepareCosts(models *route.Table, prices *pricing.Table) {
	next := make(map[[2]string]bool)
	unpriced := make(map[[2]string]bool)
	for _, name := range models.Names() {
		for _, tg := range models.Lookup(name).Targets {
			next[[2]string{name, tg.Provider}] = true
			if _, ok := prices.Lookup(tg.Provider, tg.Model); !ok {
				unpriced[[2]string{tg.Provider, tg.Model}] = true
			}
		}
	}
	s.mu.Lock()
	prev, prevUnpriced := s.costs, s.unpricedSet
	s.costs, s.unpricedSet = next, unpriced
	s.mu.Unlock()
	for k := range prev {
		if !next[k] {
			s.m.cost.DeleteLabelValues(k[0], k[1])
		}
	}
	for k := range next {
		s.m.cost.WithLabelValues(k[0], k[1])
	}
	// A target removed, or priced by the reload, stops counting.
	for k := range prevUnpriced {
		if !unpriced[k] {
			s.m.unpriced.DeleteLabelValues(k[0], k[1])
		}
	}
	s.m.forget()
	for k := range unpriced {
		s.m.unpriced.WithLabelValues(k[0], k[1])
	}
}
