package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/bulkhead"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// Pool owns the provider runtimes of the configuration in force: it
// builds them, keeps their state across reloads, runs their probers,
// counts them and renders their gauges at scrape time.
type Pool struct {
	opts    upstream.Options
	log     *slog.Logger
	freed   *bulkhead.Signal
	changed chan struct{}
	m       *metrics

	mu     sync.Mutex // guards list and closed; serializes Update and Close
	list   []*member
	closed bool
}

// member is one runtime of the pool, with its counters and its prober.
type member struct {
	up   *upstream.Upstream
	m    *providerMetrics
	stop context.CancelFunc // ends the prober
	done chan struct{}      // closed when the prober has returned
}

// New returns an empty Pool whose runtimes share opts (its Freed, Changed
// and Observer are the Pool's own); reg receives the per-provider metrics
// (nil keeps them private).
func New(opts upstream.Options, reg prometheus.Registerer) *Pool {
	p := &Pool{freed: bulkhead.NewSignal(), changed: make(chan struct{}, 1), m: newMetrics(reg), log: opts.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	opts.Freed = p.freed
	opts.Changed = p.notify
	p.opts = opts
	if reg != nil {
		reg.MustRegister(&collector{p: p})
	}
	return p
}

// Freed returns a channel closed the next time any bulkhead of the Pool
// frees a slot.
func (p *Pool) Freed() <-chan struct{} { return p.freed.C() }

// Changed returns a channel that receives after anything worth keeping
// across a restart changed in one of the Pool's runtimes: a breaker
// transition, a rate-limit block set or extended (Retry-After, an
// announced empty budget), a quota block set or lifted, a target disabled
// or enabled. Signals coalesce: at most one is pending, however many
// changes it stands for. The channel is the same for the Pool's life.
func (p *Pool) Changed() <-chan struct{} { return p.changed }

// notify never blocks, so it may run under a lock (the breaker's
// OnStateChange): one pending signal already says "changed".
func (p *Pool) notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Update replaces the Pool's runtimes with one per provider of ds, in
// order, under pol. A runtime whose description is Equal and whose policy
// did not change is kept with all it has learned (breaker, buckets,
// stats), renewed with the new description (its adapter, its secrets);
// the others start fresh. Every prober restarts with its Descriptor's
// Probe; the series of providers no longer configured are deleted. Names
// must be unique; pol.Breaker must pass Validate (the caller's config
// checks ran it; upstream.New panics otherwise).
func (p *Pool) Update(ds []provider.Descriptor, pol shared.Policy) ([]*upstream.Upstream, error) {
	seen := make(map[string]bool, len(ds))
	var errs []error
	for _, d := range ds {
		if seen[d.Config.Name] {
			errs = append(errs, fmt.Errorf("providers: duplicate provider %q", d.Config.Name))
		}
		seen[d.Config.Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("pool: closed")
	}
	prev := make(map[string]*member, len(p.list))
	for _, m := range p.list {
		prev[m.up.Name()] = m
	}
	next := make([]*member, 0, len(ds))
	for _, d := range ds {
		m := prev[d.Config.Name]
		if m == nil || !m.up.Same(d, pol) {
			pm := p.m.forProvider(d.Config.Name)
			opts := p.opts
			opts.Observer = pm
			m = &member{up: upstream.New(d, pol, opts), m: pm}
		} else {
			m.up.Renew(d) // same state; a new adapter, maybe a new key
		}
		next = append(next, m)
	}
	for _, m := range p.list {
		m.stopProber()
	}
	for i, m := range next {
		next[i] = p.start(m, ds[i].Probe())
	}
	kept := make(map[*upstream.Upstream]bool, len(next))
	for _, m := range next {
		kept[m.up] = true
	}
	for _, m := range p.list {
		if !kept[m.up] {
			m.up.Close()
		}
	}
	for name := range prev {
		if !seen[name] {
			p.m.delete(name)
		}
	}
	p.list = next
	ups := make([]*upstream.Upstream, len(next))
	for i, m := range next {
		ups[i] = m.up
	}
	return ups, nil
}

// Close stops every prober and closes the runtimes' fleet handles.
// Attempts in flight are not affected.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, m := range p.list {
		m.stopProber()
		m.up.Close()
	}
}

func (p *Pool) current() []*member {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.list
}

// start runs m's prober loop until stopProber: whenever the breaker's
// cooldown has passed, one probe at a time, bounded by the provider's
// first_token_timeout, logged and counted. It returns m with its new
// prober (m's previous one has stopped).
func (p *Pool) start(m *member, probe func(context.Context) error) *member {
	if probe == nil {
		probe = func(context.Context) error { return nil }
	}
	u := m.up
	logged := func(ctx context.Context) error {
		err := probe(ctx)
		if err != nil {
			p.log.Warn("probe failed", "provider", u.Name(), "error", u.Redact(err.Error()))
		} else {
			p.log.Info("probe succeeded", "provider", u.Name())
		}
		m.m.probe(err == nil)
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stop, m.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		u.RunProber(ctx, logged)
	}(m.done)
	return m
}

// stopProber ends m's prober loop and waits for it.
func (m *member) stopProber() {
	if m.stop != nil {
		m.stop()
		<-m.done
		m.stop, m.done = nil, nil
	}
}

// collector reads the providers' live state at scrape time, so the gauges
// are never stale (breaker transitions into half-open are lazy).
type collector struct{ p *Pool }

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
	now := c.p.opts.Now
	if now == nil {
		now = time.Now
	}
	t := now()
	for _, m := range c.p.current() {
		u, name := m.up, m.up.Name()
		g := u.Gauges(t)
		ch <- prometheus.MustNewConstMetric(descBreakerState, prometheus.GaugeValue, float64(g.Breaker), name)
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(g.InFlight), name)
		ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(g.RemainingRequests), name, "requests")
		ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(g.RemainingTokens), name, "tokens")
		ch <- prometheus.MustNewConstMetric(descTargetsOff, prometheus.GaugeValue, float64(g.TargetsOff), name)
		quota := 0.0
		if g.OutOfQuota {
			quota = 1
		}
		ch <- prometheus.MustNewConstMetric(descQuota, prometheus.GaugeValue, quota, name)
		pc := u.Descriptor().Config
		ch <- prometheus.MustNewConstMetric(descInfo, prometheus.GaugeValue, 1, name, pc.Type, pc.Domain)
	}
}
