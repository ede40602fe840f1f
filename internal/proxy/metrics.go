package proxy

import "github.com/prometheus/client_golang/prometheus"

// metrics are the proxy's Prometheus series (docs/ARCHITECTURE.md,
// "Metrics"); the request families live with the answer writer
// (internal/answer), the per-provider ones with the providers' runtimes
// (internal/upstream), the score and health gauges with the admin
// listener (internal/admin). Labels are bounded: priority has three
// values.
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
	reg.MustRegister(m.shed, bodyBytes)
	return m
}

// prepare creates the series of every priority, so that rate() and the
// alert rules work before their first shed request.
func (m *metrics) prepare() {
	for _, p := range []string{"high", "normal", "low"} {
		m.shed.WithLabelValues(p)
	}
}
