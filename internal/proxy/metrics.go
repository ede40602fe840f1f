package proxy

import "github.com/prometheus/client_golang/prometheus"

// metrics are the proxy's Prometheus series (docs/ARCHITECTURE.md,
// "Metrics"); the request families live with the answer writer
// (internal/answer), the per-provider ones with the providers' runtimes
// (internal/upstream). Labels are bounded: provider comes from the
// config, priority from three values.
type metrics struct {
	shed *prometheus.CounterVec // priority
}

func newMetrics(reg prometheus.Registerer, s *Server) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry() // discarded
	}
	const ns = "llmrouter"
	m := &metrics{
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "shed_requests_total",
			Help: "Requests refused by priority shedding while most providers were open."}, []string{"priority"}),
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
	reg.MustRegister(m.shed, bodyBytes, storedCount, storedBytes, &stateCollector{s: s})
	return m
}

// prepare creates the series of every priority, so that rate() and the
// alert rules work before their first shed request.
func (m *metrics) prepare() {
	for _, p := range []string{"high", "normal", "low"} {
		m.shed.WithLabelValues(p)
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
