package stats

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// nSlots is the number of time buckets in the window ring.
const nSlots = 12

// FailingStreak is how many counted failures in a row, with no success
// since, make a provider failing (Stats.Failing): two, so that one bad
// answer among good ones is not a warning, while a provider that fails
// every request warns after its second, long before its breaker's
// failure_threshold (docs/ARCHITECTURE.md, "Selection").
const FailingStreak = 2

// priorSuccesses is the number of virtual successes added to every window
// (a Beta(priorSuccesses+1, 1)-style prior): an idle provider reads 1, and
// one failure out of one request reads 2/3, not 0.
const priorSuccesses = 2

// Stats holds the live statistics of one provider. It is safe for
// concurrent use; it starts no goroutines and reads no clock: every method
// takes now, which should be a monotonic reading (time.Now(); see
// docs/ARCHITECTURE.md, "Time").
// The zero value is not usable; call New.
type Stats struct {
	width    time.Duration // Window / nSlots
	alpha    float64       // EMAAlpha
	halfLife time.Duration // RecencyHalfLife

	// mu guards every field below. Invariants while started: slots hold
	// the epochs head-nSlots+1 … head, epoch e in slots[slotOf(e)];
	// ok, fail and hist are the sums over the slots.
	mu          sync.Mutex
	started     bool      // origin and head are set
	origin      time.Time // epoch e covers [origin+e·width, origin+(e+1)·width)
	head        int64     // newest epoch seen
	slots       [nSlots]slot
	ok, fail    int64
	hist        histogram
	ema         float64 // latency EMA in nanoseconds; meaningful when hasEMA
	hasEMA      bool
	lastSuccess time.Time // meaningful when hasSuccess
	hasSuccess  bool
	// streak counts the failures observed since the last success (in the
	// order Observe was called); fails are the times of the latest
	// FailingStreak of them, newest first.
	streak int64
	fails  [FailingStreak]time.Time
}

// slot is one time bucket of the ring.
type slot struct {
	ok, fail int64
	n        uint32 // samples in hist
	hist     [nBins]uint32
}

// New returns empty statistics for one provider. Zero fields of cfg take
// their defaults (DefaultConfig). New panics if cfg fails Validate: the
// config layer validates first.
func New(cfg Config) *Stats {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("stats: invalid config: %v", err))
	}
	cfg = cfg.withDefaults()
	return &Stats{
		width:    cfg.Window / nSlots,
		alpha:    cfg.EMAAlpha,
		halfLife: cfg.RecencyHalfLife,
	}
}

// Snapshot is what the selector reads: the provider's statistics at one
// instant. The zero value is not a valid reading; an idle provider reads
// Requests 0, SuccessRate 1, SinceSuccess -1, Recency 0.5, latencies 0.
type Snapshot struct {
	// Requests and Failures count the outcomes in the window that count
	// (outcome.Kind.Counts); Requests includes the Failures.
	Requests, Failures int64
	// SuccessRate is (successes + 2) / (Requests + 2) over the window, in
	// (0, 1]: two virtual successes are an optimistic prior, so an idle
	// provider reads 1 and one failure out of one request reads 2/3. The
	// prior fades as requests accumulate (60 of 100 reads 0.61).
	SuccessRate float64
	// LatencyEMA is the exponential moving average of success latencies
	// (Config.EMAAlpha); not windowed. 0 means no latency ever observed.
	LatencyEMA time.Duration
	// P50, P90, P95 and P99 are success-latency percentiles over the window,
	// read from a log-scale histogram: within about 11% of the true value
	// between 1ms and 10min; below 1ms they read between 0 and 1ms, at or
	// above 10min exactly 10min. 0 means no latency in the window.
	P50, P90, P95, P99 time.Duration
	// SinceSuccess is how long ago the last success was observed (never
	// negative); -1 if there was none. Not windowed.
	SinceSuccess time.Duration
	// Recency is 2^(−SinceSuccess/RecencyHalfLife) in (0, 1]: 1 right after
	// a success, 0.5 one half-life later. With no success ever it is 0.5,
	// neutral: a new provider ranks with one that last succeeded one
	// half-life ago, above one silent for longer.
	Recency float64
}

// idle is the Snapshot of a provider with no data at all.
var idle = Snapshot{SuccessRate: 1, SinceSuccess: -1, Recency: 0.5}

// Observe records the outcome of one attempt that ended at now. Only kinds
// that count (outcome.Kind.Counts) are recorded: OK is a success, every
// other counted kind a failure; client errors and cancellations are
// ignored. latency is taken from successes only (the caller picks time to
// first token for streams, total time otherwise); 0 or less means not
// measured. An outcome whose now is already older than the window is left
// out of the window but still feeds LatencyEMA and SinceSuccess.
// Observe does not allocate.
func (s *Stats) Observe(now time.Time, kind outcome.Kind, latency time.Duration) {
	if !kind.Counts() {
		return
	}
	success := kind == outcome.OK
	bin := -1
	if success && latency > 0 {
		bin = binOf(latency)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.advanceLocked(now)
	if e > s.head-nSlots {
		sl := &s.slots[slotOf(e)]
		if success {
			sl.ok++
			s.ok++
		} else {
			sl.fail++
			s.fail++
		}
		if bin >= 0 {
			sl.hist[bin]++
			sl.n++
			s.hist.add(bin, 1)
		}
	}
	if !success {
		s.streak++
		copy(s.fails[1:], s.fails[:])
		s.fails[0] = now
		return
	}
	s.streak = 0
	if bin >= 0 {
		if s.hasEMA {
			s.ema += s.alpha * (float64(latency) - s.ema)
		} else {
			s.ema, s.hasEMA = float64(latency), true
		}
	}
	if !s.hasSuccess || now.After(s.lastSuccess) {
		s.lastSuccess, s.hasSuccess = now, true
	}
}

// Snapshot returns the statistics as of now, first dropping the time
// buckets that fell out of the window. A now earlier than one already seen
// reads the newer window. Snapshot does not allocate.
func (s *Stats) Snapshot(now time.Time) Snapshot { return s.snapshot(now, true) }

// Ranking is Snapshot without the percentiles (P50 … P99 are 0): what
// ranking reads on every request, without walking the histogram.
func (s *Stats) Ranking(now time.Time) Snapshot { return s.snapshot(now, false) }

func (s *Stats) snapshot(now time.Time, percentiles bool) Snapshot {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return idle
	}
	s.advanceLocked(now)
	snap := Snapshot{Requests: s.ok + s.fail, Failures: s.fail}
	var p [len(quantiles)]time.Duration
	if percentiles {
		p = s.hist.percentiles()
	}
	ok := s.ok
	ema, hasEMA := s.ema, s.hasEMA
	last, hasSuccess := s.lastSuccess, s.hasSuccess
	s.mu.Unlock()

	snap.P50, snap.P90, snap.P95, snap.P99 = p[0], p[1], p[2], p[3]
	snap.SuccessRate = float64(ok+priorSuccesses) / float64(snap.Requests+priorSuccesses)
	if hasEMA {
		snap.LatencyEMA = time.Duration(math.Round(ema))
	}
	snap.SinceSuccess, snap.Recency = idle.SinceSuccess, idle.Recency
	if hasSuccess {
		snap.SinceSuccess = max(now.Sub(last), 0)
		snap.Recency = math.Exp2(-float64(snap.SinceSuccess) / float64(s.halfLife))
	}
	return snap
}

// Failing reports whether the provider is failing at now: its latest
// FailingStreak outcomes that count were failures, with no success since,
// and the earliest of them is still within the window. A failing provider
// counts as down for its failure domain even while too few failures have
// come to trip its breaker. Failing does not allocate.
func (s *Stats) Failing(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streak >= FailingStreak && now.Sub(s.fails[FailingStreak-1]) < s.width*nSlots
}

// advanceLocked returns the epoch of now and moves head up to it, emptying
// the slots of the epochs that left the window. The first call sets the
// origin at now.
func (s *Stats) advanceLocked(now time.Time) int64 {
	if !s.started {
		s.started, s.origin, s.head = true, now, 0
		return 0
	}
	e := floorDiv(int64(now.Sub(s.origin)), int64(s.width))
	if e <= s.head {
		return e
	}
	if e-s.head >= nSlots {
		s.slots = [nSlots]slot{}
		s.ok, s.fail = 0, 0
		s.hist = histogram{}
	} else {
		for k := s.head + 1; k <= e; k++ {
			s.clearSlotLocked(slotOf(k))
		}
	}
	s.head = e
	return e
}

// clearSlotLocked empties slot i, taking its counts out of the sums.
func (s *Stats) clearSlotLocked(i int) {
	sl := &s.slots[i]
	s.ok -= sl.ok
	s.fail -= sl.fail
	if sl.n > 0 {
		for b, c := range sl.hist {
			if c > 0 {
				s.hist.sub(b, uint64(c))
			}
		}
	}
	*sl = slot{}
}

func slotOf(epoch int64) int {
	i := epoch % nSlots
	if i < 0 {
		i += nSlots
	}
	return int(i)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
