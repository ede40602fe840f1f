package clientkeys

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/budget"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
)

// Spec is one named key as configured.
type Spec struct {
	Name   string
	Limits Limits
}

// Keys are the keys of one configuration, by name; the anonymous key is
// the one named "". A Keys is immutable.
type Keys struct {
	byName map[string]*Key
	order  []*Key // named keys in config order
}

// Lookup returns the key named name ("" the anonymous key); nil when
// there is none (then the request is the anonymous key's without
// counters).
func (ks *Keys) Lookup(name string) *Key {
	if ks == nil {
		return nil
	}
	return ks.byName[name]
}

// Named returns the named keys in config order.
func (ks *Keys) Named() []*Key {
	if ks == nil {
		return nil
	}
	return ks.order
}

// Set owns the client keys' runtimes across reloads: a key that keeps its
// name keeps its buckets (unless its RPM or TPM changed), so a reload
// never hands a key a fresh minute. Build it with NewSet.
type Set struct {
	m   *metrics
	now func() time.Time
	sh  Shared // nil: no fleet

	mu   sync.Mutex // guards keys; serializes Update
	keys *Keys
}

// NewSet returns an empty Set whose metrics are registered on reg (nil
// keeps them private); now is the clock its gauges read the budgets at
// (nil: time.Now); sh, when not nil, shares the budgets' spend across a
// fleet.
func NewSet(reg prometheus.Registerer, now func() time.Time, sh Shared) *Set {
	if now == nil {
		now = time.Now
	}
	s := &Set{m: newMetrics(reg), now: now, sh: sh}
	s.keys = s.Update(nil)
	if reg != nil {
		reg.MustRegister(remainingCollector{s})
	}
	return s
}

// Current returns the keys in force.
func (s *Set) Current() *Keys {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys
}

// Update replaces the named keys with specs (names unique, limits
// valid) and returns the keys in force. Counters of removed keys are
// deleted.
func (s *Set) Update(specs []Spec) *Keys {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.keys
	next := &Keys{byName: make(map[string]*Key, len(specs)+1)}
	next.byName[""] = s.build(prev.Lookup(""), Spec{})
	for _, sp := range specs {
		k := s.build(prev.Lookup(sp.Name), sp)
		next.byName[sp.Name] = k
		next.order = append(next.order, k)
	}
	for _, k := range prev.Named() {
		if next.byName[k.name] == nil {
			s.m.drop(k.name)
		}
	}
	s.keys = next
	return next
}

// build returns the runtime of sp, keeping what it may of old (the same
// name's runtime in the previous configuration, or nil).
func (s *Set) build(old *Key, sp Spec) *Key {
	k := &Key{name: sp.Name, limits: sp.Limits, allow: newAllowList(sp.Limits.Models)}
	if sp.Limits.RPM > 0 || sp.Limits.TPM > 0 {
		if old != nil && old.lim != nil && old.limits.RPM == sp.Limits.RPM && old.limits.TPM == sp.Limits.TPM {
			k.lim = old.lim
		} else {
			k.lim = ratelimit.New(sp.Limits.RPM, sp.Limits.TPM)
		}
	}
	if sp.Name != "" {
		// Every named key counts its spend this period (/admin/keys); one
		// with budget_usd is capped by it, and only that one is shared.
		limit, period := budget.ToNano(sp.Limits.BudgetUSD), sp.Limits.period()
		k.capped = limit > 0
		if old != nil && old.bud != nil && old.bud.Period() == period && old.capped == k.capped {
			// The same period: what was spent and is in flight stays.
			k.bud = old.bud
			k.bud.SetLimit(limit)
		} else if k.capped && s.sh != nil {
			k.bud = budget.NewShared(limit, period)
		} else {
			k.bud = budget.New(limit, period)
		}
		if k.capped || k.lim != nil {
			k.sh = s.sh
		}
	}
	s.m.bind(k)
	return k
}

// Export returns the budgets' state at now, by key name, for the state
// file (docs/ARCHITECTURE.md, "Warm restart").
func (ks *Keys) Export(now time.Time) map[string]budget.Saved {
	out := make(map[string]budget.Saved)
	for _, k := range ks.Named() {
		if k.bud != nil {
			out[k.name] = k.bud.Export(now)
		}
	}
	return out
}

// Restore loads saved budgets into the keys of the same name that still
// have a budget of the same period, and returns the names it restored.
func (ks *Keys) Restore(now time.Time, saved map[string]budget.Saved) []string {
	var out []string
	for _, k := range ks.Named() {
		if in, ok := saved[k.name]; ok && k.bud != nil && k.bud.Restore(now, in) {
			out = append(out, k.name)
		}
	}
	return out
}
