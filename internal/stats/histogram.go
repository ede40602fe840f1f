package stats

import (
	"math"
	"time"
)

// The latency histogram has nBins fixed log-scale bins:
//
//	bin 0            (0, histMin)              underflow
//	bin i, 1..126    [histMin·r^(i-1), histMin·r^i)   r = (histMax/histMin)^(1/126) ≈ 1.111
//	bin 127          [histMax, ∞)              overflow
//
// A percentile read from it lies in the same bin as the true sample, so its
// relative error is below r−1 (about 11%) between histMin and histMax.
const (
	nBins   = 128
	histMin = time.Millisecond
	histMax = 10 * time.Minute
)

// binLow[i] is the lower bound of bin i in nanoseconds; binLow[nBins] is
// +Inf. Read-only after package initialisation.
var binLow = makeBinLow()

// invLogRatio is 1/ln(r), turning ln(d/histMin) into a bin offset.
var invLogRatio = float64(nBins-2) / math.Log(float64(histMax)/float64(histMin))

func makeBinLow() [nBins + 1]float64 {
	var b [nBins + 1]float64
	ratio := math.Pow(float64(histMax)/float64(histMin), 1/float64(nBins-2))
	for i := 1; i < nBins-1; i++ {
		b[i] = float64(histMin) * math.Pow(ratio, float64(i-1))
	}
	b[nBins-1] = float64(histMax) // exact, whatever Pow rounded to
	b[nBins] = math.Inf(1)
	return b
}

// binOf returns the bin of a positive latency.
func binOf(d time.Duration) int {
	switch {
	case d < histMin:
		return 0
	case d >= histMax:
		return nBins - 1
	}
	f := float64(d)
	i := 1 + int(math.Log(f/float64(histMin))*invLogRatio)
	i = min(max(i, 1), nBins-2)
	// Log and Pow round differently; the table is the truth at the edges.
	if f < binLow[i] {
		i--
	} else if f >= binLow[i+1] {
		i++
	}
	return i
}

// binValue is the bin's representative latency: the geometric middle of a
// log bin, half of histMin for the underflow bin, histMax for the overflow
// bin. binOf(binValue(i)) == i.
func binValue(i int) time.Duration {
	switch i {
	case 0:
		return histMin / 2
	case nBins - 1:
		return histMax
	}
	return time.Duration(math.Sqrt(binLow[i] * binLow[i+1]))
}

// quantiles are the ones Snapshot reports, in increasing order.
var quantiles = [...]float64{0.50, 0.90, 0.95, 0.99}

// histogram counts latencies per bin. It also keeps the sum of each group
// of groupSize bins, so that a percentile is found in at most
// nGroups + groupSize steps instead of nBins.
type histogram struct {
	n      uint64 // samples, the sum of bins
	groups [nGroups]uint64
	bins   [nBins]uint64
}

const (
	groupSize = 8
	nGroups   = nBins / groupSize
)

func (h *histogram) add(bin int, c uint64) {
	h.n += c
	h.groups[bin/groupSize] += c
	h.bins[bin] += c
}

func (h *histogram) sub(bin int, c uint64) {
	h.n -= c
	h.groups[bin/groupSize] -= c
	h.bins[bin] -= c
}

// percentiles reads quantiles in one forward pass. The q-quantile is the
// k-th smallest sample, k = ceil(q·n) (nearest rank); within its bin the
// value is interpolated linearly at the sample's position among the bin's
// count, so one sample alone reads as the middle of its bin. With no
// samples every result is 0.
func (h *histogram) percentiles() (out [len(quantiles)]time.Duration) {
	if h.n == 0 {
		return out
	}
	g, before := 0, uint64(0) // the group being looked at; samples in the groups below it
	for q, quantile := range quantiles {
		rank := nearestRank(quantile, h.n)
		for g < nGroups-1 && before+h.groups[g] < rank {
			before += h.groups[g]
			g++
		}
		cum := before
		for i := g * groupSize; i < (g+1)*groupSize; i++ {
			c := h.bins[i]
			if cum+c >= rank {
				out[q] = interpolate(i, float64(rank-cum)-0.5, float64(c))
				break
			}
			cum += c
		}
	}
	return out
}

func nearestRank(q float64, n uint64) uint64 {
	k := uint64(math.Ceil(q * float64(n)))
	return min(max(k, 1), n)
}

// interpolate places position pos (in [0, count)) within bin i.
func interpolate(i int, pos, count float64) time.Duration {
	frac := pos / count
	switch i {
	case 0:
		return time.Duration(float64(histMin) * frac)
	case nBins - 1:
		return histMax
	}
	// Linear within a bin this narrow is within 0.2% of geometric, and
	// spares a math.Exp per percentile.
	lo, hi := binLow[i], binLow[i+1]
	return time.Duration(lo + (hi-lo)*frac)
}
