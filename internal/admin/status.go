package admin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// ProviderStatus is one row of GET /admin/providers.
type ProviderStatus = upstream.Status

// scores returns every provider's score (latency relative to the fastest
// provider overall), in config order.
func scores(v routing.View, now time.Time) []route.Score {
	m := &route.Model{}
	for _, p := range v.Providers {
		m.Targets = append(m.Targets, route.Target{Provider: p.Name})
	}
	hs := make([]route.Health, len(v.Providers))
	for i, p := range v.Providers {
		hs[i] = p.Up.Health(now)
	}
	out := make([]route.Score, len(v.Providers))
	for i := range v.Providers {
		out[i] = v.Weights.ScoreOf(m, func(j int) route.Health { return hs[j] }, i)
	}
	return out
}

// Providers returns rt's live per-provider status, in config order.
func Providers(rt *routing.Routes) []ProviderStatus {
	v := rt.View()
	now := v.At
	out := make([]ProviderStatus, 0, len(v.Providers))
	scores := scores(v, now)
	for i, p := range v.Providers {
		row := p.Up.Status(now)
		row.Score = scores[i]
		out = append(out, row)
	}
	return out
}

// Register registers on reg the gauges read from rt at scrape time:
// every provider's score and the system's health.
func Register(reg prometheus.Registerer, rt *routing.Routes) {
	reg.MustRegister(&stateCollector{rt: rt})
}

// stateCollector reads the score and the system's health at scrape time.
type stateCollector struct{ rt *routing.Routes }

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
	v := c.rt.View()
	for i, score := range scores(v, v.At) {
		ch <- prometheus.MustNewConstMetric(descScore, prometheus.GaugeValue, score.Total, v.Providers[i].Name)
	}
	share, _ := v.OpenShare()
	ch <- prometheus.MustNewConstMetric(descHealth, prometheus.GaugeValue, 1-share)
}
