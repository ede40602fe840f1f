package route

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Weights are the parts of a target's score (docs/ARCHITECTURE.md,
// "Selection"). They need not sum to 1; the score is their weighted mean.
type Weights struct {
	// Success weighs the windowed success rate. Default 0.6.
	Success float64 `mapstructure:"success"`
	// Latency weighs speed relative to the fastest peer in the tier.
	// Default 0.2.
	Latency float64 `mapstructure:"latency"`
	// Recency weighs how recently the provider last succeeded. Default 0.2.
	Recency float64 `mapstructure:"recency"`
}

// DefaultWeights are 0.6 success, 0.2 latency, 0.2 recency.
func DefaultWeights() Weights { return Weights{Success: 0.6, Latency: 0.2, Recency: 0.2} }

// Validate checks the weights, naming the key under routing.score_weights.
func (w Weights) Validate() error {
	for _, p := range []struct {
		k string
		v float64
	}{{"success", w.Success}, {"latency", w.Latency}, {"recency", w.Recency}} {
		if !(p.v >= 0) || math.IsInf(p.v, 0) {
			return fmt.Errorf("routing.score_weights.%s: must be a finite number >= 0, got %g", p.k, p.v)
		}
	}
	if w.Success+w.Latency+w.Recency <= 0 {
		return fmt.Errorf("routing.score_weights: at least one weight must be positive")
	}
	return nil
}

// Floors exclude a target whatever its other parts: below either, it is
// tried only when nothing else is left in any tier.
const (
	// FloorSuccess is the lowest success rate that still ranks.
	FloorSuccess = 0.25
	// FloorLatency is the lowest latency part (fastest peer's latency over
	// this one's) that still ranks: 20 times slower than the best is out.
	FloorLatency = 0.05
	// steepness is the exponent applied to the score before load is
	// spread in proportion: a provider failing 40% of its calls (score
	// 0.76 with equal other parts) gets about a tenth of the weight of a
	// perfect one instead of three quarters.
	steepness = 8
	// latencySlack is added to both latencies before comparing them.
	latencySlack = 25 * time.Millisecond
)

// Health is what ranking reads about one target. The zero value is an
// unknown, fully available provider.
type Health struct {
	// SuccessRate is the windowed success rate in [0, 1].
	SuccessRate float64
	// Latency is the provider's latency EMA; 0 means no data.
	Latency time.Duration
	// Recency is in [0, 1]: 1 right after a success, decaying.
	Recency float64
	// Capacity is the share of the provider's capacity left now, in
	// [0, 1]: bulkhead headroom times bucket budget.
	Capacity float64
	// Ramp is in [0, 1]: below 1 while a provider whose breaker just
	// closed ramps up to its full share.
	Ramp float64
	// DomainDown: another provider of this one's failure domain is down
	// (its breaker open, or failing: its latest attempts failed with no
	// success since).
	// Within its tier it ranks after the providers of other domains
	// (correlated failures: the same cloud or region tends to fail
	// together).
	DomainDown bool
}

// Score is a target's score and its parts, for /admin/providers.
type Score struct {
	Total    float64 `json:"total"`
	Success  float64 `json:"success"`
	Latency  float64 `json:"latency"`
	Recency  float64 `json:"recency"`
	Capacity float64 `json:"capacity"`
	Ramp     float64 `json:"ramp"`
	// Weight is the share-determining weight: Total^8 × Capacity × Ramp.
	Weight float64 `json:"weight"`
	// Floored is true when a floor excludes the target.
	Floored bool `json:"floored"`
}

// score computes one target's score; fastest is the lowest known latency
// in its tier (0: none known).
func (w Weights) score(h Health, fastest time.Duration) Score {
	lat := 1.0
	if h.Latency > 0 && fastest > 0 {
		// latencySlack keeps differences that are small in absolute terms
		// (0.3ms against 6ms) from reading as "twenty times slower".
		lat = float64(fastest+latencySlack) / float64(h.Latency+latencySlack)
	}
	sum := w.Success + w.Latency + w.Recency
	total := (w.Success*h.SuccessRate + w.Latency*lat + w.Recency*h.Recency) / sum
	s := Score{Total: total, Success: h.SuccessRate, Latency: lat, Recency: h.Recency, Capacity: clamp01(h.Capacity), Ramp: clamp01(h.Ramp)}
	s.Floored = h.SuccessRate < FloorSuccess || lat < FloorLatency
	s.Weight = math.Pow(total, steepness) * s.Capacity * s.Ramp
	return s
}

func clamp01(x float64) float64 { return min(max(x, 0), 1) }

// Rank orders m's targets for one request: tier by tier; within a tier,
// a weighted random order where each target's chance to come first is
// proportional to its weight (so equals share the load); targets with no
// weight left (full, or not yet ramped) follow their tier; floored targets
// go after every tier. hs[i] is target i's health; u draws a uniform
// number in (0, 1). out is reused when large enough. The caller holds the
// healths (it reads them again for affinity): Rank keeps no copy on its
// stack, which a streaming request's goroutine would otherwise grow for.
func (w Weights) Rank(m *Model, hs []Health, u func() float64, out []int) []int {
	out = out[:0]
	n := len(m.Targets)
	var keyBuf [16]float64
	key := keyBuf[:0]
	if n > len(keyBuf) {
		key = make([]float64, 0, n)
	}
	var floored []int
	for start := 0; start < n; {
		end := start
		for end < n && m.Targets[end].Tier == m.Targets[start].Tier {
			end++
		}
		var fastest time.Duration
		for i := start; i < end; i++ {
			if l := hs[i].Latency; l > 0 && (fastest == 0 || l < fastest) {
				fastest = l
			}
		}
		first := len(out)
		for i := start; i < end; i++ {
			s := w.score(hs[i], fastest)
			if s.Floored {
				floored = append(floored, i)
				continue
			}
			// Efraimidis–Spirakis: key = u^(1/w), largest first, samples
			// without replacement in proportion to w. Zero weight keys
			// sort last, in config order.
			k := math.Inf(-1)
			if s.Weight > 0 {
				k = math.Log(u()) / s.Weight // log of u^(1/w); larger is better
			}
			key = append(key, k)
			out = append(out, i)
		}
		sortByKey(out[first:], key)
		domainLast(out[first:], hs)
		key = key[:0]
		start = end
	}
	return append(out, floored...)
}

// domainLast moves the targets whose domain is down after the others,
// keeping each group's order.
func domainLast(idx []int, hs []Health) {
	down := 0
	for _, i := range idx {
		if hs[i].DomainDown {
			down++
		}
	}
	if down == 0 || down == len(idx) {
		return
	}
	var buf [16]int
	tmp := append(buf[:0], idx...)
	j := 0
	for _, i := range tmp {
		if !hs[i].DomainDown {
			idx[j] = i
			j++
		}
	}
	for _, i := range tmp {
		if hs[i].DomainDown {
			idx[j] = i
			j++
		}
	}
}

// sortByKey sorts idx by descending key (stable for equal keys).
func sortByKey(idx []int, key []float64) {
	type pair struct {
		i int
		k float64
	}
	var buf [16]pair
	ps := buf[:0]
	for j, i := range idx {
		ps = append(ps, pair{i, key[j]})
	}
	slices.SortStableFunc(ps, func(a, b pair) int {
		switch {
		case a.k > b.k:
			return -1
		case a.k < b.k:
			return 1
		}
		return 0
	})
	for j := range ps {
		idx[j] = ps[j].i
	}
}

// ScoreOf returns target i's score as Rank sees it (for /admin/providers).
func (w Weights) ScoreOf(m *Model, health func(i int) Health, i int) Score {
	tier := m.Targets[i].Tier
	var fastest time.Duration
	for j, t := range m.Targets {
		if t.Tier == tier {
			if l := health(j).Latency; l > 0 && (fastest == 0 || l < fastest) {
				fastest = l
			}
		}
	}
	return w.score(health(i), fastest)
}
