package clientkeys

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/budget"
)

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
	k.rejRate = m.rejections.WithLabelValues(k.name, reasonRate) // a request larger than the whole TPM too
	k.rejBudget = m.rejections.WithLabelValues(k.name, reasonBudget)
}

// drop deletes the series of a key a reload removed.
func (m *metrics) drop(name string) {
	m.spend.DeleteLabelValues(name)
	m.rejections.DeletePartialMatch(prometheus.Labels{"key": name})
}

// remainingCollector reads every budget's remaining amount at scrape time
// (client_budget_remaining_usd{key}).
type remainingCollector struct{ s *Set }

var descRemaining = prometheus.NewDesc("llmrouter_client_budget_remaining_usd",
	"What is left of each client key's budget this period, in US dollars (keys with budget_usd only).", []string{"key"}, nil)

func (c remainingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descRemaining }

func (c remainingCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.s.now()
	for _, k := range c.s.Current().Named() {
		if k.capped {
			ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, budget.USD(k.bud.Snapshot(now).Remaining()), k.name)
		}
	}
}
