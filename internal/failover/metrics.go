package failover

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// backoffBuckets are the retry wait histogram's.
var backoffBuckets = []float64{.05, .1, .25, .5, 1, 2, 4, 8, 16, 32, 60}

// metrics are the loop's series (docs/ARCHITECTURE.md, "Metrics").
type metrics struct {
	retries   *prometheus.CounterVec // provider
	backoff   prometheus.Histogram
	fallbacks *prometheus.CounterVec // from_tier, to_tier
	hedges    *prometheus.CounterVec // model, outcome
	rescues   *prometheus.CounterVec // model, outcome
}

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns = "llmrouter"
	m := &metrics{
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "retries_total",
			Help: "Attempts after a request's first, by the provider retried or failed over to."}, []string{"provider"}),
		backoff: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "retry_backoff_seconds",
			Help: "Waits before retrying (backoff, Retry-After, bucket refill, free slot).", Buckets: backoffBuckets}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "fallbacks_total",
			Help: "Attempts that moved from one tier to another."}, []string{"from_tier", "to_tier"}),
		hedges: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "hedges_total",
			Help: "Hedges sent (routing.hedge), by the model asked for and whether the hedge answered (won) or not (lost)."}, []string{"model", "outcome"}),
		rescues: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "stream_rescues_total",
			Help: "Streams that failed after their first content with routing.stream.rescue on and a candidate that continues, by the model asked for and whether a continuation was relayed (continued), a target refused the prefix (refused) or none could continue (impossible)."}, []string{"model", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.retries, m.backoff, m.fallbacks, m.hedges, m.rescues)
	}
	return m
}

// Prepare creates the series of the configured providers and tier pairs
// (so rate() and alerts work before the first retry or fallback) and
// deletes those of providers a reload removed.
func (l *Loop) Prepare(providers, removed []string, tierPairs [][2]int) {
	for _, name := range removed {
		l.m.retries.DeleteLabelValues(name)
	}
	for _, name := range providers {
		l.m.retries.WithLabelValues(name)
	}
	for _, p := range tierPairs {
		l.m.fallbacks.WithLabelValues(strconv.Itoa(p[0]), strconv.Itoa(p[1]))
	}
}

func (m *metrics) fallback(from, to int) {
	m.fallbacks.WithLabelValues(strconv.Itoa(from), strconv.Itoa(to)).Inc()
}

// hedgeOutcomes are hedges_total's outcome values.
var hedgeOutcomes = [...]string{"lost", "won"}

// PrepareModels creates the hedge and stream rescue series of every
// configured model, every outcome (so rate() and alerts work before the first hedge), and
// deletes those of models a reload removed.
func (l *Loop) PrepareModels(models, removed []string) {
	for _, name := range removed {
		l.m.hedges.DeletePartialMatch(prometheus.Labels{"model": name})
		l.m.rescues.DeletePartialMatch(prometheus.Labels{"model": name})
	}
	for _, name := range models {
		for _, o := range hedgeOutcomes {
			l.m.hedges.WithLabelValues(name, o)
		}
		for _, o := range rescueOutcomes {
			l.m.rescues.WithLabelValues(name, o)
		}
	}
}

// rescued counts one rescue of model's stream, by outcome.
func (m *metrics) rescued(model, outcome string) {
	m.rescues.WithLabelValues(model, outcome).Inc()
}

// hedged counts one hedge of model: won when it answered.
func (m *metrics) hedged(model string, won bool) {
	m.hedges.WithLabelValues(model, hedgeOutcomes[b2i(won)]).Inc()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
