package main

import (
	"fmt"
	"slices"
	"strings"
)

// rounds are the rows of one (mode, concurrency, target), one per round
// of -rounds, in round order. The tables print, for every figure, its
// median over the rounds: on a shared machine one round's CPU per request
// moves 20-40% between runs minutes apart, the median of several far
// less. A ratio between two targets is also taken within each round, the
// two measured minutes apart at most (ratios).
type rounds []row

// id is the (mode, concurrency, target) every round shares.
func (g rounds) id() row { return g[0] }

// number is what a median is taken of.
type number interface{ ~int | ~int64 | ~float64 }

// median is the middle value of xs, the mean of the two middle values
// when there is an even number; 0 for none. xs is left as it was.
func median[T number](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// med is the median of f over the rounds.
func med[T number](g rounds, f func(row) T) T {
	xs := make([]T, 0, len(g))
	for _, r := range g {
		xs = append(xs, f(r))
	}
	return median(xs)
}

// medOK is the median of f over the rounds where f has a value; ok is
// false when it has none (perf counted no round).
func medOK[T number](g rounds, f func(row) (T, bool)) (v T, ok bool) {
	var xs []T
	for _, r := range g {
		if x, ok := f(r); ok {
			xs = append(xs, x)
		}
	}
	return median(xs), len(xs) > 0
}

// roundOrder is the order in which round i measures n targets: table
// order in even rounds, reversed in odd ones, so a drift of the machine
// during the run reaches every target alike rather than the last ones
// most.
func roundOrder(n, i int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = k
		if i%2 == 1 {
			order[k] = n - 1 - k
		}
	}
	return order
}

// cpuRatios is a's CPU per request over b's in each round where b used
// any, both measured in the same round.
func cpuRatios(a, b rounds) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i].cpuPerReq() > 0 {
			out = append(out, float64(a[i].cpuPerReq())/float64(b[i].cpuPerReq()))
		}
	}
	return out
}

// roundsNote is a summary line's per-round ratios, in round order, and
// their median: "; per round 2.92×, 3.10×, 2.81× (median 2.92×)". With
// one round there is nothing to add.
func roundsNote(ratios []float64) string {
	if len(ratios) < 2 {
		return ""
	}
	each := make([]string, len(ratios))
	for i, x := range ratios {
		each[i] = fmt.Sprintf("%.2f×", x)
	}
	return fmt.Sprintf("; per round %s (median %.2f×)", strings.Join(each, ", "), median(ratios))
}
