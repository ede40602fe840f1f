package route

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

func model(tiers ...int) *Model {
	m := &Model{Name: "m"}
	for i, t := range tiers {
		m.Targets = append(m.Targets, Target{Provider: fmt.Sprintf("p%d", i), Model: "x", Tier: t})
	}
	return m
}

func healthy() Health { return Health{SuccessRate: 1, Recency: 1, Capacity: 1, Ramp: 1} }

func TestScore(t *testing.T) {
	w := DefaultWeights()
	tests := []struct {
		name    string
		h       Health
		fastest time.Duration
		total   float64
		floored bool
	}{
		{"perfect", healthy(), 0, 1, false},
		{"fails 40%", Health{SuccessRate: 0.6, Recency: 1, Capacity: 1, Ramp: 1}, 0, 0.76, false},
		{"ten times slower", Health{SuccessRate: 1, Latency: time.Second, Recency: 1, Capacity: 1, Ramp: 1}, 100 * time.Millisecond, 0.8 + 0.2*125.0/1025, false},
		{"sub-millisecond differences barely count", Health{SuccessRate: 1, Latency: 6 * time.Millisecond, Recency: 1, Capacity: 1, Ramp: 1}, 300 * time.Microsecond, 0.8 + 0.2*25.3/31, false},
		{"below success floor", Health{SuccessRate: 0.2, Recency: 1, Capacity: 1, Ramp: 1}, 0, 0.52, true},
		{"below latency floor", Health{SuccessRate: 1, Latency: 30 * time.Second, Recency: 1, Capacity: 1, Ramp: 1}, time.Second, 0.8 + 0.2*1.025/30.025, true},
		{"no recent success", Health{SuccessRate: 1, Recency: 0.5, Capacity: 1, Ramp: 1}, 0, 0.9, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := w.score(tt.h, tt.fastest)
			if d := s.Total - tt.total; d > 1e-9 || d < -1e-9 {
				t.Errorf("total = %.4f, want %.4f", s.Total, tt.total)
			}
			if s.Floored != tt.floored {
				t.Errorf("floored = %v, want %v", s.Floored, tt.floored)
			}
		})
	}
}

func TestRankDeterministic(t *testing.T) {
	w := DefaultWeights()
	half := func() float64 { return 0.5 }
	tests := []struct {
		name   string
		tiers  []int
		health map[int]Health
		want   []int
	}{
		{"tiers in order", []int{0, 0, 1, 2}, nil, nil},
		{"better first within a tier", []int{0, 0}, map[int]Health{0: {SuccessRate: 0.7, Recency: 1, Capacity: 1, Ramp: 1}}, []int{1, 0}},
		{"floored after every tier", []int{0, 0, 1}, map[int]Health{0: {SuccessRate: 0.1, Recency: 1, Capacity: 1, Ramp: 1}}, []int{1, 2, 0}},
		{"all floored keep config order", []int{0, 1}, map[int]Health{0: {SuccessRate: 0.1, Capacity: 1, Ramp: 1}, 1: {SuccessRate: 0.1, Capacity: 1, Ramp: 1}}, []int{0, 1}},
		{"full provider after its tier peers", []int{0, 0, 1}, map[int]Health{0: {SuccessRate: 1, Recency: 1, Capacity: 0, Ramp: 1}}, []int{1, 0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := model(tt.tiers...)
			got := w.Rank(m, healths(m, func(i int) Health {
				if h, ok := tt.health[i]; ok {
					return h
				}
				return healthy()
			}), half, nil)
			want := tt.want
			if want == nil {
				for i := range tt.tiers {
					want = append(want, i)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rank = %v, want %v", got, want)
			}
		})
	}
}

// share returns how often each target is ranked first over n picks.
func share(m *Model, w Weights, h func(int) Health, n int) []float64 {
	r := rand.New(rand.NewPCG(1, 2))
	u := func() float64 { return 1 - r.Float64() } // (0, 1]
	counts := make([]float64, len(m.Targets))
	var buf []int
	for range n {
		buf = w.Rank(m, healths(m, h), u, buf)
		counts[buf[0]]++
	}
	for i := range counts {
		counts[i] /= float64(n)
	}
	return counts
}

func TestDistribution(t *testing.T) {
	w := DefaultWeights()
	m := model(0, 0)
	const n = 20000
	t.Run("equals share within 3 points", func(t *testing.T) {
		s := share(m, w, func(int) Health { return healthy() }, n)
		if s[0] < 0.47 || s[0] > 0.53 {
			t.Errorf("shares %.3f / %.3f, want 0.5 ± 0.03", s[0], s[1])
		}
	})
	t.Run("half the capacity, about half the traffic", func(t *testing.T) {
		s := share(m, w, func(i int) Health {
			h := healthy()
			if i == 1 {
				h.Capacity = 0.5
			}
			return h
		}, n)
		if r := s[1] / s[0]; r < 0.45 || r > 0.55 {
			t.Errorf("shares %.3f / %.3f: ratio %.3f, want 0.5 ± 0.05", s[0], s[1], r)
		}
	})
	t.Run("failing 40% gets clearly less than a linear split", func(t *testing.T) {
		s := share(m, w, func(i int) Health {
			h := healthy()
			if i == 1 {
				h.SuccessRate = 0.6
			}
			return h
		}, n)
		linear := 0.76 / 1.76
		if s[1] > linear/2 {
			t.Errorf("failing provider share %.3f, want well under the linear %.3f", s[1], linear)
		}
	})
	t.Run("ten times slower gets clearly less", func(t *testing.T) {
		s := share(m, w, func(i int) Health {
			h := healthy()
			h.Latency = 100 * time.Millisecond
			if i == 1 {
				h.Latency = time.Second
			}
			return h
		}, n)
		linear := 0.82 / 1.82
		if s[1] > linear/2 {
			t.Errorf("slow provider share %.3f, want well under the linear %.3f", s[1], linear)
		}
	})
	t.Run("ramping provider's share grows", func(t *testing.T) {
		var prev float64
		for _, ramp := range []float64{0.1, 0.4, 0.7, 1} {
			s := share(m, w, func(i int) Health {
				h := healthy()
				if i == 1 {
					h.Ramp = ramp
				}
				return h
			}, n)
			if s[1] <= prev {
				t.Errorf("ramp %.1f: share %.3f did not grow from %.3f", ramp, s[1], prev)
			}
			prev = s[1]
		}
		if prev < 0.47 {
			t.Errorf("fully ramped share %.3f, want about half", prev)
		}
	})
}

func TestWeightsValidate(t *testing.T) {
	if err := DefaultWeights().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []Weights{{Success: -1}, {}, {Success: 1, Latency: -0.1}} {
		if w.Validate() == nil {
			t.Errorf("%+v accepted", w)
		}
	}
}

func BenchmarkRank(b *testing.B) {
	for _, n := range []int{2, 8, 32} {
		b.Run(fmt.Sprintf("providers=%d", n), func(b *testing.B) {
			tiers := make([]int, n)
			for i := range tiers {
				tiers[i] = i * 3 / n // three tiers
			}
			m := model(tiers...)
			w := DefaultWeights()
			r := rand.New(rand.NewPCG(1, 2))
			u := func() float64 { return 1 - r.Float64() }
			h := func(i int) Health {
				return Health{SuccessRate: 0.9 + float64(i%3)/30, Latency: time.Duration(100+i) * time.Millisecond, Recency: 0.8, Capacity: 0.9, Ramp: 1}
			}
			buf := make([]int, 0, n)
			hs := healths(m, h)
			b.ReportAllocs()
			for b.Loop() {
				buf = w.Rank(m, hs, u, buf)
			}
		})
	}
}

// healths is each of m's targets' health as h gives it.
func healths(m *Model, h func(int) Health) []Health {
	hs := make([]Health, len(m.Targets))
	for i := range hs {
		hs[i] = h(i)
	}
	return hs
}
