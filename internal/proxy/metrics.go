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
	reg.MustRegister(m.shed, bodyBytes, &stateCollector{s: s})
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
