package pool

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// Buckets of the provider latency histogram: LLM calls take from tens of
// milliseconds to minutes.
var latencyBuckets = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}

// tokenBuckets are the GenAI token histogram's: 1 … 262144.
var tokenBuckets = prometheus.ExponentialBuckets(1, 4, 10)

// metrics are the per-provider families (docs/ARCHITECTURE.md,
// "Metrics"). Every label value is bounded: provider from the config,
// kind from outcome.Kind, to from the breaker's states.
type metrics struct {
	upstream       *prometheus.CounterVec   // provider, kind
	duration       *prometheus.HistogramVec // provider
	transitions    *prometheus.CounterVec   // provider, to
	probes         *prometheus.CounterVec   // provider, result
	bulkRejections *prometheus.CounterVec   // provider
	throttled      *prometheus.CounterVec   // provider
	tokens         *prometheus.CounterVec   // provider, type
	cachedInput    *prometheus.CounterVec   // provider
	genAITokens    *prometheus.HistogramVec // gen_ai_provider_name, gen_ai_token_type
}

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns = "llmrouter"
	m := &metrics{
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "upstream_requests_total",
			Help: "Attempts sent to providers, by outcome kind."}, []string{"provider", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "upstream_duration_seconds",
			Help: "Provider time per successful attempt: to the answer (non-stream) or the first content (stream).", Buckets: latencyBuckets}, []string{"provider"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "breaker_transitions_total",
			Help: "Circuit breaker state changes, by the state entered."}, []string{"provider", "to"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "breaker_probes_total",
			Help: "Health probes sent by half-open breakers."}, []string{"provider", "result"}),
		bulkRejections: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "bulkhead_rejections_total",
			Help: "Attempts skipped because the provider was at max_concurrency."}, []string{"provider"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "throttled_requests_total",
			Help: "Attempts refused locally by the provider's rate buckets, a Retry-After block or adaptive throttling."}, []string{"provider"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tokens_total",
			Help: "Tokens providers reported, summed: input (prompt) and output (completion)."}, []string{"provider", "type"}),
		cachedInput: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "cached_input_tokens_total",
			Help: "Input tokens providers reported read from their prompt cache (part of tokens_total's input), summed."}, []string{"provider"}),
		genAITokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_client_token_usage",
			Help: "OpenTelemetry GenAI: the distribution of tokens per call, one observation per call and token type (llmrouter_tokens_total holds the sums).", Buckets: tokenBuckets}, []string{"gen_ai_provider_name", "gen_ai_token_type"}),
	}
	if reg != nil {
		reg.MustRegister(m.upstream, m.duration, m.transitions, m.probes, m.bulkRejections, m.throttled, m.tokens, m.cachedInput, m.genAITokens)
	}
	return m
}

// providerMetrics are one provider's children of the families, created
// with its runtime so every series exists from start-up; they are the
// runtime's upstream.Observer.
type providerMetrics struct {
	m              *metrics
	name           string
	bulkRejections prometheus.Counter
	throttled      prometheus.Counter
	duration       prometheus.Observer
	byKind         []prometheus.Counter // by outcome.Kind
	transitions    [breaker.Open + 1]prometheus.Counter
	probeOK        prometheus.Counter
	probeFailed    prometheus.Counter
	tokensIn       prometheus.Counter
	tokensOut      prometheus.Counter
	cachedIn       prometheus.Counter
	// genAIIn and genAIOut are the provider's gen_ai_client_token_usage
	// series, created at their first observation (as before they were
	// kept) and then kept: no label lookup per request.
	genAIIn, genAIOut func() prometheus.Observer
}

func (m *metrics) forProvider(name string) *providerMetrics {
	pm := &providerMetrics{
		m: m, name: name,
		bulkRejections: m.bulkRejections.WithLabelValues(name),
		throttled:      m.throttled.WithLabelValues(name),
		duration:       m.duration.WithLabelValues(name),
		probeOK:        m.probes.WithLabelValues(name, "success"),
		probeFailed:    m.probes.WithLabelValues(name, "failure"),
		tokensIn:       m.tokens.WithLabelValues(name, "input"),
		tokensOut:      m.tokens.WithLabelValues(name, "output"),
		cachedIn:       m.cachedInput.WithLabelValues(name),
		genAIIn:        sync.OnceValue(func() prometheus.Observer { return m.genAITokens.WithLabelValues(name, "input") }),
		genAIOut:       sync.OnceValue(func() prometheus.Observer { return m.genAITokens.WithLabelValues(name, "output") }),
	}
	for _, k := range outcome.Kinds() {
		pm.byKind = append(pm.byKind, m.upstream.WithLabelValues(name, k.String()))
	}
	for s := breaker.Closed; s <= breaker.Open; s++ {
		pm.transitions[s] = m.transitions.WithLabelValues(name, s.String())
	}
	return pm
}

// delete removes every series of the provider name.
func (m *metrics) delete(name string) {
	for _, v := range []*prometheus.MetricVec{m.upstream.MetricVec, m.duration.MetricVec, m.transitions.MetricVec,
		m.probes.MetricVec, m.bulkRejections.MetricVec, m.throttled.MetricVec, m.tokens.MetricVec, m.cachedInput.MetricVec} {
		v.DeletePartialMatch(prometheus.Labels{"provider": name})
	}
	m.genAITokens.DeletePartialMatch(prometheus.Labels{"gen_ai_provider_name": name})
}

var _ upstream.Observer = (*providerMetrics)(nil)

// Refused counts a bulkhead rejection (Full) or a local throttling
// (Limited, Throttled).
func (pm *providerMetrics) Refused(r upstream.Reason) {
	switch r {
	case upstream.Full:
		pm.bulkRejections.Inc()
	case upstream.Limited, upstream.Throttled:
		pm.throttled.Inc()
	}
}

// Transition counts a breaker state change; it runs under the breaker's
// lock, so it only bumps a counter.
func (pm *providerMetrics) Transition(to breaker.State) {
	if int(to) < len(pm.transitions) && pm.transitions[to] != nil {
		pm.transitions[to].Inc()
	}
}

func (pm *providerMetrics) probe(ok bool) {
	if ok {
		pm.probeOK.Inc()
	} else {
		pm.probeFailed.Inc()
	}
}

// Done records a released attempt.
func (pm *providerMetrics) Done(r upstream.Result) {
	if int(r.Kind) < len(pm.byKind) && pm.byKind[r.Kind] != nil {
		pm.byKind[r.Kind].Inc()
	} else {
		pm.m.upstream.WithLabelValues(pm.name, r.Kind.String()).Inc()
	}
	if r.Kind == outcome.OK {
		pm.duration.Observe(r.Latency.Seconds())
	}
	if n := r.Usage.PromptTokens; n > 0 {
		pm.tokensIn.Add(float64(n))
		pm.genAIIn().Observe(float64(n))
	}
	if n := r.Usage.CachedInput; n > 0 {
		pm.cachedIn.Add(float64(n))
	}
	if n := r.Usage.CompletionTokens; n > 0 {
		pm.tokensOut.Add(float64(n))
		pm.genAIOut().Observe(float64(n))
	}
}
