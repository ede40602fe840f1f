package upstream

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/bulkhead"
)

// Set owns the Upstreams of the configuration in force: it builds them,
// keeps their state across reloads, runs their probers and renders their
// gauges at scrape time.
type Set struct {
	opts    Options
	freed   *bulkhead.Signal
	changed *changeSignal

	mu     sync.Mutex // guards list and closed; serializes Update and Close
	list   []*Upstream
	closed bool
}

// NewSet returns an empty Set whose Upstreams share opts; reg receives
// the per-provider metrics (nil keeps them private).
func NewSet(opts Options, reg prometheus.Registerer) *Set {
	s := &Set{freed: bulkhead.NewSignal(), changed: newChangeSignal()}
	opts.Freed = s.freed
	opts.changed = s.changed
	opts.metrics = newMetrics(reg)
	s.opts = opts
	if reg != nil {
		reg.MustRegister(&collector{s: s})
	}
	return s
}

// Freed returns a channel closed the next time any bulkhead of the Set
// frees a slot.
func (s *Set) Freed() <-chan struct{} { return s.freed.C() }

// Update replaces the Set's Upstreams with one per spec, in order. An
// Upstream whose Settings did not change is kept with all it has learned
// (breaker, buckets, stats); the others start fresh. Every prober restarts
// with its spec's Probe; the series of providers no longer configured are
// deleted. Names must be unique; every Breaker must pass Validate (the
// caller's config checks ran it; New panics otherwise).
func (s *Set) Update(specs []Spec) ([]*Upstream, error) {
	seen := make(map[string]bool, len(specs))
	var errs []error
	for _, sp := range specs {
		if seen[sp.Provider.Name] {
			errs = append(errs, fmt.Errorf("providers: duplicate provider %q", sp.Provider.Name))
		}
		seen[sp.Provider.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("upstream: set closed")
	}
	prev := make(map[string]*Upstream, len(s.list))
	for _, u := range s.list {
		prev[u.name] = u
	}
	next := make([]*Upstream, 0, len(specs))
	for _, sp := range specs {
		u := prev[sp.Provider.Name]
		if u == nil || u.spec.Settings != sp.Settings {
			u = New(sp, s.opts)
		} else {
			u.secrets.Store(&sp.Secrets) // same state; maybe a new key
		}
		next = append(next, u)
	}
	for _, u := range s.list {
		u.stopProber()
	}
	for i, u := range next {
		u.start(specs[i].Probe)
	}
	kept := make(map[*Upstream]bool, len(next))
	for _, u := range next {
		kept[u] = true
	}
	for _, u := range s.list {
		if !kept[u] {
			u.closeShared()
		}
	}
	for name := range prev {
		if !seen[name] {
			s.opts.metrics.delete(name)
		}
	}
	s.list = next
	return next, nil
}

// Close stops every prober. Attempts in flight are not affected.
func (s *Set) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for _, u := range s.list {
		u.stopProber()
		u.closeShared()
	}
}

func (s *Set) current() []*Upstream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list
}

// collector reads the providers' live state at scrape time, so the gauges
// are never stale (breaker transitions into half-open are lazy).
type collector struct{ s *Set }

var (
	descBreakerState = prometheus.NewDesc("llmrouter_breaker_state",
		"Circuit breaker state: 0 closed, 1 half-open, 2 open.", []string{"provider"}, nil)
	descInFlight = prometheus.NewDesc("llmrouter_bulkhead_in_flight",
		"Attempts in flight to the provider.", []string{"provider"}, nil)
	descRemaining = prometheus.NewDesc("llmrouter_ratelimit_remaining",
		"Requests or tokens the provider's buckets hold now (-1 unknown).", []string{"provider", "limit"}, nil)
	descTargetsOff = prometheus.NewDesc("llmrouter_targets_disabled",
		"The provider's targets (models) disabled because it answered that they do not exist.", []string{"provider"}, nil)
	descQuota = prometheus.NewDesc("llmrouter_provider_out_of_quota",
		"1 while the provider is off for quota (until its reset, a reload, an enable or the next check).", []string{"provider"}, nil)
	descInfo = prometheus.NewDesc("llmrouter_provider_info",
		"Always 1: the provider's type and failure domain.", []string{"provider", "type", "domain"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBreakerState
	ch <- descInFlight
	ch <- descRemaining
	ch <- descTargetsOff
	ch <- descQuota
	ch <- descInfo
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	now := c.s.opts.Now
	if now == nil {
		now = time.Now
	}
	t := now()
	for _, u := range c.s.current() {
		b := u.breaker.Snapshot(t)
		l := u.limits.Snapshot(t)
		ch <- prometheus.MustNewConstMetric(descBreakerState, prometheus.GaugeValue, float64(b.State), u.name)
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(u.bulk.InFlight()), u.name)
		ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(l.RemainingRequests), u.name, "requests")
		ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(l.RemainingTokens), u.name, "tokens")
		ch <- prometheus.MustNewConstMetric(descTargetsOff, prometheus.GaugeValue, float64(u.targetsN.Load()), u.name)
		quota := 0.0
		if u.quota.Off() {
			quota = 1
		}
		ch <- prometheus.MustNewConstMetric(descQuota, prometheus.GaugeValue, quota, u.name)
		ch <- prometheus.MustNewConstMetric(descInfo, prometheus.GaugeValue, 1, u.name, u.spec.Provider.Type, u.spec.Provider.Domain)
	}
}
