package clientkeys

import "github.com/prometheus/client_golang/prometheus"

// Reasons of client_rejections_total.
const (
	reasonBudget = "budget"
	reasonRate   = "rate"
	reasonModel  = "model"
)

// metrics are the keys' families (docs/ARCHITECTURE.md, "Metrics"). The
// key label takes configured names only ("" for anonymous keys), so
// cardinality is bounded by the config.
type metrics struct {
	spend      *prometheus.CounterVec // key
	rejections *prometheus.CounterVec // key, reason
}

func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry() // discarded
	}
	const ns = "llmrouter"
	m := &metrics{
		spend: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "client_spend_usd_total",
			Help: "What the requests of each client key cost, in US dollars at the configured prices (key=\"\": anonymous keys)."}, []string{"key"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "client_rejections_total",
			Help: "Requests refused by their client key's own limits: budget spent, RPM/TPM, a model outside the allow-list."}, []string{"key", "reason"}),
	}
	reg.MustRegister(m.spend, m.rejections)
	return m
}

// bind gives k its series, created at 0 so that rate() and alerts work
// before the first event; the anonymous key has only its spend.
func (m *metrics) bind(k *Key) {
	k.spent = m.spend.WithLabelValues(k.name)
	if k.name == "" {
		return
	}
	k.rejModel = m.rejections.WithLabelValues(k.name, reasonModel)
	k.rejRate = m.rejections.WithLabelValues(k.name, reasonRate)
	k.rejBig = k.rejRate // a request larger than the whole TPM is a rate refusal too
	m.rejections.WithLabelValues(k.name, reasonBudget)
}

// drop deletes the series of a key a reload removed.
func (m *metrics) drop(name string) {
	m.spend.DeleteLabelValues(name)
	m.rejections.DeletePartialMatch(prometheus.Labels{"key": name})
}
