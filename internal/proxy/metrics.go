package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// Histogram buckets. LLM calls take from tens of milliseconds to minutes;
// the router's own overhead is tens of microseconds.
var (
	latencyBuckets  = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	ttftBuckets     = []float64{.01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 20, 60}
	overheadBuckets = []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 50e-3, 100e-3}
)

// metrics are the proxy's Prometheus series (docs/ARCHITECTURE.md,
// "Metrics"); the per-provider families live with the providers' runtimes
// (internal/upstream). Labels are bounded: model and provider come from the
// config, tier from the config, code from the statuses this package
// writes, priority from three values.
type metrics struct {
	requests      *prometheus.CounterVec   // api, model, code
	duration      *prometheus.HistogramVec // api, model
	ttft          *prometheus.HistogramVec // api, model
	overhead      prometheus.Histogram
	degraded      *prometheus.CounterVec // api, model
	recovered     *prometheus.CounterVec // api, model
	shed          *prometheus.CounterVec // priority
	writeTimeouts prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, s *Server) *metrics {
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
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "shed_requests_total",
			Help: "Requests refused by priority shedding while most providers were open."}, []string{"priority"}),
		writeTimeouts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "client_write_timeouts_total",
			Help: "Responses cut because the client stopped reading for limits.client_write_timeout; their provider calls were cancelled."}),
	}
	bodyBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "body_buffer_bytes",
		Help: "Memory held by request bodies now, against limits.body_buffer_bytes."},
		func() float64 { return float64(s.bodies.Used()) })
	// The store of responses says what it holds when it can (the
	// in-memory one); a store that cannot reads 0.
	stored := func() (int, int64) {
		if u, ok := s.stored.(interface{ Usage() (int, int64) }); ok {
			return u.Usage()
		}
		return 0, 0
	}
	storedCount := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "responses_stored",
		Help: "Responses API responses stored now, against responses.max_stored."},
		func() float64 { n, _ := stored(); return float64(n) })
	storedBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "responses_stored_bytes",
		Help: "Estimated memory the stored Responses API responses take now, the earlier turns their conversations keep included, against responses.max_bytes."},
		func() float64 { _, b := stored(); return float64(b) })
	reg.MustRegister(m.requests, m.duration, m.ttft, m.overhead, m.degraded, m.recovered,
		m.shed, m.writeTimeouts, bodyBytes, storedCount, storedBytes, &stateCollector{s: s})
	return m
}

// apis are the api label's values.
var apis = [...]string{provider.OpChat.String(), provider.OpCompletions.String(), provider.OpEmbeddings.String(), apiResponses}

// prepare creates the series of every configured model and priority, so
// that rate() and the alert rules work before their first event, and
// deletes those of models a reload removed.
func (m *metrics) prepare(models, removed []string) {
	for _, p := range []string{"high", "normal", "low"} {
		m.shed.WithLabelValues(p)
	}
	for _, name := range removed {
		for _, v := range []*prometheus.MetricVec{m.requests.MetricVec, m.duration.MetricVec, m.ttft.MetricVec,
			m.degraded.MetricVec, m.recovered.MetricVec} {
			v.DeletePartialMatch(prometheus.Labels{"model": name})
		}
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

// stateCollector reads the score and the system's health at scrape time.
type stateCollector struct{ s *Server }

var (
	descScore = prometheus.NewDesc("llmrouter_provider_score",
		"The provider's health score in [0, 1] (success, latency relative to the fastest provider, recency).", []string{"provider"}, nil)
	descHealth = prometheus.NewDesc("llmrouter_system_health",
		"Share of providers whose breaker is not open.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHealth
	ch <- descScore
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.st.Load()
	if st == nil {
		return
	}
	now := c.s.now()
	for i, score := range c.s.scores(st, now) {
		ch <- prometheus.MustNewConstMetric(descScore, prometheus.GaugeValue, score.Total, st.order[i].Name)
	}
	share, _ := c.s.openShare(st, now)
	ch <- prometheus.MustNewConstMetric(descHealth, prometheus.GaugeValue, 1-share)
}
