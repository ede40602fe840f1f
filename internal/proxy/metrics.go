package proxy

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Histogram buckets. LLM calls take from tens of milliseconds to minutes;
// the router's own overhead is tens of microseconds.
var (
	latencyBuckets  = []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	ttftBuckets     = []float64{.01, .025, .05, .1, .25, .5, 1, 2, 5, 10, 20, 60}
	overheadBuckets = []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 50e-3, 100e-3}
	backoffBuckets  = []float64{.05, .1, .25, .5, 1, 2, 4, 8, 16, 32, 60}
	tokenBuckets    = prometheus.ExponentialBuckets(1, 4, 10) // 1 … 262144
)

// metrics are the proxy's Prometheus series (DESIGN §6). Labels are
// bounded: model and provider come from the config, kind from
// outcome.Kind, tier from the config, code from the statuses this package
// writes, priority from three values.
type metrics struct {
	requests       *prometheus.CounterVec   // model, code
	duration       *prometheus.HistogramVec // model
	ttft           *prometheus.HistogramVec // model
	overhead       prometheus.Histogram
	degraded       *prometheus.CounterVec   // model
	upstream       *prometheus.CounterVec   // provider, kind
	upDuration     *prometheus.HistogramVec // provider
	retries        *prometheus.CounterVec   // provider
	backoff        prometheus.Histogram
	fallbacks      *prometheus.CounterVec // from_tier, to_tier
	transitions    *prometheus.CounterVec // provider, to
	probes         *prometheus.CounterVec // provider, result
	bulkRejections *prometheus.CounterVec // provider
	throttled      *prometheus.CounterVec // provider
	tokens         *prometheus.CounterVec // provider, type
	shed           *prometheus.CounterVec // priority
	genAITokens    *prometheus.HistogramVec
	writeTimeouts  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, s *Server) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry() // discarded
	}
	const ns = "llmrouter"
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "requests_total",
			Help: "Client requests by model and the HTTP status they were answered with."}, []string{"model", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "request_duration_seconds",
			Help: "Whole client request duration, all attempts and the whole stream included.", Buckets: latencyBuckets}, []string{"model"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_token_seconds",
			Help: "Time from the request's arrival to the first content sent to the client (streams).", Buckets: ttftBuckets}, []string{"model"}),
		overhead: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "overhead_seconds",
			Help: "Time spent in the router itself, not waiting on providers, up to the commit point.", Buckets: overheadBuckets}),
		degraded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "degraded_responses_total",
			Help: "Responses served by a tier below the model's best."}, []string{"model"}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "upstream_requests_total",
			Help: "Attempts sent to providers, by outcome kind."}, []string{"provider", "kind"}),
		upDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "upstream_duration_seconds",
			Help: "Provider time per attempt: to the answer (non-stream) or the first content (stream).", Buckets: latencyBuckets}, []string{"provider"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "retries_total",
			Help: "Attempts after a request's first, by the provider retried or failed over to."}, []string{"provider"}),
		backoff: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "retry_backoff_seconds",
			Help: "Waits before retrying (backoff, Retry-After, bucket refill, free slot).", Buckets: backoffBuckets}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "fallbacks_total",
			Help: "Attempts that moved from one tier to another."}, []string{"from_tier", "to_tier"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "breaker_transitions_total",
			Help: "Circuit breaker state changes, by the state entered."}, []string{"provider", "to"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "breaker_probes_total",
			Help: "Health probes sent by half-open breakers."}, []string{"provider", "result"}),
		bulkRejections: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "bulkhead_rejections_total",
			Help: "Attempts skipped because the provider was at max_concurrency."}, []string{"provider"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "throttled_requests_total",
			Help: "Attempts refused locally by the provider's rate buckets or a Retry-After block."}, []string{"provider"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tokens_total",
			Help: "Tokens reported by providers."}, []string{"provider", "type"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "shed_requests_total",
			Help: "Requests refused by priority shedding while most providers were open."}, []string{"priority"}),
		genAITokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gen_ai_client_token_usage",
			Help: "OpenTelemetry GenAI: tokens per call.", Buckets: tokenBuckets}, []string{"gen_ai_provider_name", "gen_ai_token_type"}),
		writeTimeouts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "client_write_timeouts_total",
			Help: "Responses cut because the client stopped reading for limits.client_write_timeout; their provider calls were cancelled."}),
	}
	bodyBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "body_buffer_bytes",
		Help: "Memory held by request bodies now, against limits.body_buffer_bytes."},
		func() float64 { return float64(s.bodies.used.Load()) })
	reg.MustRegister(m.requests, m.duration, m.ttft, m.overhead, m.degraded, m.upstream, m.upDuration,
		m.retries, m.backoff, m.fallbacks, m.transitions, m.probes, m.bulkRejections, m.throttled, m.tokens,
		m.genAITokens, m.shed, m.writeTimeouts, bodyBytes, &stateCollector{s: s})
	return m
}

// onStateChange is the breakers' hook: it runs under the breaker's lock,
// so it only bumps a counter.
func (m *metrics) onStateChange(name string, _, to breaker.State) {
	m.transitions.WithLabelValues(name, to.String()).Inc()
}

func (m *metrics) usage(provider string, u outcome.Usage) {
	if u.PromptTokens > 0 {
		m.tokens.WithLabelValues(provider, "input").Add(float64(u.PromptTokens))
		m.genAITokens.WithLabelValues(provider, "input").Observe(float64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		m.tokens.WithLabelValues(provider, "output").Add(float64(u.CompletionTokens))
		m.genAITokens.WithLabelValues(provider, "output").Observe(float64(u.CompletionTokens))
	}
}

func (m *metrics) fallback(from, to int) {
	m.fallbacks.WithLabelValues(strconv.Itoa(from), strconv.Itoa(to)).Inc()
}

// stateCollector reads the live per-provider state at scrape time, so the
// gauges are never stale (breaker transitions into half-open are lazy).
type stateCollector struct{ s *Server }

var (
	descBreakerState = prometheus.NewDesc("llmrouter_breaker_state",
		"Circuit breaker state: 0 closed, 1 half-open, 2 open.", []string{"provider"}, nil)
	descInFlight = prometheus.NewDesc("llmrouter_bulkhead_in_flight",
		"Attempts in flight to the provider.", []string{"provider"}, nil)
	descRemaining = prometheus.NewDesc("llmrouter_ratelimit_remaining",
		"Requests or tokens the provider's buckets hold now (-1 unknown).", []string{"provider", "limit"}, nil)
	descScore = prometheus.NewDesc("llmrouter_provider_score",
		"The provider's health score in [0, 1] (success, latency relative to the fastest provider, recency).", []string{"provider"}, nil)
	descHealth = prometheus.NewDesc("llmrouter_system_health",
		"Share of providers whose breaker is not open.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBreakerState
	ch <- descInFlight
	ch <- descRemaining
	ch <- descHealth
	ch <- descScore
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.st.Load()
	if st == nil {
		return
	}
	now := c.s.now()
	up := 0
	for i, score := range c.s.scores(st, now) {
		ch <- prometheus.MustNewConstMetric(descScore, prometheus.GaugeValue, score.Total, st.order[i].Name)
	}
	for _, u := range st.order {
		g := u.guard.Snapshot(now)
		ch <- prometheus.MustNewConstMetric(descBreakerState, prometheus.GaugeValue, float64(g.Breaker.State), u.Name)
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(g.InFlight), u.Name)
		ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(g.Limits.RemainingRequests), u.Name, "requests")
		ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(g.Limits.RemainingTokens), u.Name, "tokens")
		if g.Breaker.State != breaker.Open {
			up++
		}
	}
	health := 1.0
	if len(st.order) > 0 {
		health = float64(up) / float64(len(st.order))
	}
	ch <- prometheus.MustNewConstMetric(descHealth, prometheus.GaugeValue, health)
}
