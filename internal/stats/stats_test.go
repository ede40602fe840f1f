package stats

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// t0 is an arbitrary start; tests build every now from it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none means valid
	}{
		{name: "zero means defaults", cfg: Config{}},
		{name: "defaults", cfg: DefaultConfig()},
		{name: "alpha 1", cfg: Config{EMAAlpha: 1}},
		{name: "window 1s", cfg: Config{Window: time.Second}},
		{name: "window too short", cfg: Config{Window: 500 * ms},
			want: []string{"stats.window: must be >= 1s (or 0 for the default), got 500ms"}},
		{name: "negative window", cfg: Config{Window: -time.Second}, want: []string{"stats.window:"}},
		{name: "alpha above 1", cfg: Config{EMAAlpha: 1.5},
			want: []string{"stats.ema_alpha: must be in (0, 1] (or 0 for the default), got 1.5"}},
		{name: "alpha negative", cfg: Config{EMAAlpha: -0.1}, want: []string{"stats.ema_alpha:"}},
		{name: "alpha NaN", cfg: Config{EMAAlpha: math.NaN()}, want: []string{"stats.ema_alpha:"}},
		{name: "negative half-life", cfg: Config{RecencyHalfLife: -time.Second},
			want: []string{"stats.recency_half_life: must be > 0 (or 0 for the default), got -1s"}},
		{name: "every error reported", cfg: Config{Window: 1, EMAAlpha: 2, RecencyHalfLife: -1},
			want: []string{"stats.window:", "stats.ema_alpha:", "stats.recency_half_life:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got error %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got nil error, want one containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestNewPanicsOnInvalidConfig(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("got no panic, want one for alpha 2")
		}
	}()
	New(Config{EMAAlpha: 2})
}

// step is one line of a step table: observe count outcomes of kind at at
// (count 0: observe nothing), then, when check is set, compare the Snapshot
// at at with want.
type step struct {
	at      time.Duration
	kind    outcome.Kind
	latency time.Duration
	count   int
	check   bool
	want    Snapshot
}

func runSteps(t *testing.T, s *Stats, steps []step, compare func(t *testing.T, got, want Snapshot)) {
	t.Helper()
	for i, st := range steps {
		for range st.count {
			s.Observe(at(st.at), st.kind, st.latency)
		}
		if st.check {
			got := s.Snapshot(at(st.at))
			t.Run(fmt.Sprintf("%02d_at_%v", i, st.at), func(t *testing.T) { compare(t, got, st.want) })
		}
	}
}

func compareCounts(t *testing.T, got, want Snapshot) {
	t.Helper()
	if got.Requests != want.Requests || got.Failures != want.Failures {
		t.Errorf("got requests %d failures %d, want %d and %d", got.Requests, got.Failures, want.Requests, want.Failures)
	}
	if math.Abs(got.SuccessRate-want.SuccessRate) > 1e-12 {
		t.Errorf("got success rate %v, want %v", got.SuccessRate, want.SuccessRate)
	}
}

func TestSuccessRateOverWindow(t *testing.T) {
	sec := time.Second
	snap := func(req, fail int64) Snapshot {
		return Snapshot{Requests: req, Failures: fail, SuccessRate: float64(req-fail+2) / float64(req+2)}
	}
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			name: "default 60s window in 5s buckets",
			steps: []step{
				{at: 0, check: true, want: idle},
				{at: 0, kind: outcome.OK, latency: 100 * ms, count: 8},
				{at: sec, kind: outcome.ServerError, count: 2, check: true, want: snap(10, 2)},
				{at: 30 * sec, kind: outcome.Timeout, count: 3, check: true, want: snap(13, 5)},
				// The first bucket, [0, 5s), leaves the window at 60s.
				{at: 60*sec - 1, check: true, want: snap(13, 5)},
				{at: 60 * sec, check: true, want: snap(3, 3)},
				{at: 61 * sec, kind: outcome.OK, count: 1, check: true, want: snap(4, 3)},
				// The 30s bucket leaves at 90s.
				{at: 90 * sec, check: true, want: snap(1, 0)},
				{at: 121 * sec, check: true, want: snap(0, 0)},
			},
		},
		{
			name: "a jump of an hour empties everything",
			steps: []step{
				{at: 0, kind: outcome.Network, count: 5, check: true, want: snap(5, 5)},
				{at: 20 * sec, kind: outcome.OK, count: 5, check: true, want: snap(10, 5)},
				{at: time.Hour, check: true, want: snap(0, 0)},
				{at: time.Hour, kind: outcome.Overloaded, count: 1, check: true, want: snap(1, 1)},
			},
		},
		{
			name: "10s window in 833ms buckets",
			cfg:  Config{Window: 10 * sec},
			steps: []step{
				{at: 0, kind: outcome.OK, count: 1}, // the origin
				{at: 800 * ms, kind: outcome.OK, count: 1},
				{at: 900 * ms, kind: outcome.RateLimited, count: 1, check: true, want: snap(3, 1)},
				// 800ms is in [0, 833ms), gone at 10s; 900ms is in the next.
				{at: 9999 * ms, check: true, want: snap(3, 1)}, // Window/12 is rounded down to the ns
				{at: 10 * sec, check: true, want: snap(1, 1)},
				{at: 11 * sec, check: true, want: snap(0, 0)},
			},
		},
		{
			name: "an outcome older than the window is not counted",
			steps: []step{
				{at: 100 * sec, kind: outcome.OK, count: 1},
				{at: 35 * sec, kind: outcome.ServerError, count: 1, check: false},
				{at: 100 * sec, check: true, want: snap(1, 0)},
				// Out of order but inside the window: counted.
				{at: 45 * sec, kind: outcome.ServerError, count: 1},
				{at: 100 * sec, check: true, want: snap(2, 1)},
				// A Snapshot with an older now reads the newer window.
				{at: 50 * sec, check: true, want: snap(2, 1)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, New(tt.cfg), tt.steps, compareCounts)
		})
	}
}

func TestWindowExpiryBounds(t *testing.T) {
	// Whatever its place in its bucket, an outcome stays for at least
	// 11/12 Window and at most Window.
	const window = 60 * time.Second
	for _, offset := range []time.Duration{0, 1, 2500 * ms, 5*time.Second - 1, 17 * time.Second} {
		t.Run(offset.String(), func(t *testing.T) {
			s := New(Config{Window: window})
			s.Observe(at(0), outcome.Unknown, 0) // the first call puts a bucket boundary at t0
			s.Observe(at(offset), outcome.OK, 0)
			if got := s.Snapshot(at(offset + window*11/12 - 1)); got.Requests-got.Failures != 1 {
				t.Errorf("got %d successes just before 11/12 of the window, want 1", got.Requests-got.Failures)
			}
			if got := s.Snapshot(at(offset + window)); got.Requests != 0 {
				t.Errorf("got %d requests one window later, want 0", got.Requests)
			}
		})
	}
}

func TestPrior(t *testing.T) {
	tests := []struct {
		name     string
		ok, fail int
		want     float64
	}{
		{name: "idle reads 1", want: 1},
		{name: "one success", ok: 1, want: 1},
		{name: "one failure of one", fail: 1, want: 2.0 / 3},
		{name: "ten failures", fail: 10, want: 2.0 / 12},
		{name: "40% failing", ok: 60, fail: 40, want: 62.0 / 102},
		{name: "all good", ok: 1000, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{})
			for range tt.ok {
				s.Observe(at(0), outcome.OK, 0)
			}
			for range tt.fail {
				s.Observe(at(0), outcome.ServerError, 0)
			}
			got := s.Snapshot(at(time.Second))
			if math.Abs(got.SuccessRate-tt.want) > 1e-12 {
				t.Errorf("got success rate %v, want %v", got.SuccessRate, tt.want)
			}
			if got.SuccessRate <= 0 || got.SuccessRate > 1 {
				t.Errorf("got success rate %v, want it in (0, 1]", got.SuccessRate)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	for _, k := range outcome.Kinds() {
		t.Run(k.String(), func(t *testing.T) {
			s := New(Config{})
			s.Observe(at(0), k, 300*ms)
			got := s.Snapshot(at(0))
			var want Snapshot
			switch {
			case !k.Counts():
				want = idle
			case k == outcome.OK:
				want = Snapshot{Requests: 1, SuccessRate: 1, LatencyEMA: 300 * ms, SinceSuccess: 0, Recency: 1}
				want.P50, want.P90, want.P95, want.P99 = got.P50, got.P50, got.P50, got.P50
			default:
				// A failure's latency is not recorded.
				want = Snapshot{Requests: 1, Failures: 1, SuccessRate: 2.0 / 3, SinceSuccess: -1, Recency: 0.5}
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if k == outcome.OK && got.P50 == 0 {
				t.Errorf("got P50 0 after a 300ms success, want about 300ms")
			}
		})
	}
}

func TestLatencyEMA(t *testing.T) {
	compare := func(t *testing.T, got, want Snapshot) {
		t.Helper()
		if got.LatencyEMA != want.LatencyEMA {
			t.Errorf("got EMA %v, want %v", got.LatencyEMA, want.LatencyEMA)
		}
	}
	ema := func(d time.Duration) Snapshot { return Snapshot{LatencyEMA: d} }
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			name: "alpha 0.2",
			steps: []step{
				{at: 0, check: true, want: ema(0)},
				{at: 0, kind: outcome.OK, latency: 100 * ms, count: 1, check: true, want: ema(100 * ms)},
				{at: 1, kind: outcome.OK, latency: 200 * ms, count: 1, check: true, want: ema(120 * ms)},
				{at: 2, kind: outcome.OK, latency: 200 * ms, count: 1, check: true, want: ema(136 * ms)},
				{at: 3, kind: outcome.OK, latency: 36 * ms, count: 1, check: true, want: ema(116 * ms)},
				// Failures and unmeasured successes leave it alone.
				{at: 4, kind: outcome.Timeout, latency: 20 * time.Second, count: 1, check: true, want: ema(116 * ms)},
				{at: 5, kind: outcome.OK, latency: 0, count: 1, check: true, want: ema(116 * ms)},
				// It is not windowed.
				{at: time.Hour, check: true, want: ema(116 * ms)},
			},
		},
		{
			name: "alpha 1 is the last latency",
			cfg:  Config{EMAAlpha: 1},
			steps: []step{
				{at: 0, kind: outcome.OK, latency: 100 * ms, count: 1, check: true, want: ema(100 * ms)},
				{at: 1, kind: outcome.OK, latency: 7 * ms, count: 1, check: true, want: ema(7 * ms)},
			},
		},
		{
			name: "alpha 0.5 converges",
			cfg:  Config{EMAAlpha: 0.5},
			steps: []step{
				{at: 0, kind: outcome.OK, latency: 1000 * ms, count: 1, check: true, want: ema(1000 * ms)},
				{at: 1, kind: outcome.OK, latency: 200 * ms, count: 1, check: true, want: ema(600 * ms)},
				{at: 2, kind: outcome.OK, latency: 200 * ms, count: 1, check: true, want: ema(400 * ms)},
				{at: 3, kind: outcome.OK, latency: 200 * ms, count: 1, check: true, want: ema(300 * ms)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, New(tt.cfg), tt.steps, compare)
		})
	}
}

// binError is the relative width of one log bin, r−1.
var binError = binLow[2]/binLow[1] - 1

func TestPercentiles(t *testing.T) {
	uniform := make([]time.Duration, 1000)
	for i := range uniform {
		uniform[i] = time.Duration(i+1) * ms
	}
	// Exponential with mean 400ms, sampled at evenly spaced probabilities.
	exponential := make([]time.Duration, 2000)
	for i := range exponential {
		p := (float64(i) + 0.5) / float64(len(exponential))
		exponential[i] = time.Duration(-math.Log(1-p) * float64(400*ms))
	}
	// Log-normal-ish: a fast mode and a slow tail.
	bimodal := make([]time.Duration, 0, 1000)
	for i := range 900 {
		bimodal = append(bimodal, 80*ms+time.Duration(i)*50*time.Microsecond)
	}
	for i := range 100 {
		bimodal = append(bimodal, 3*time.Second+time.Duration(i)*100*ms)
	}
	tests := []struct {
		name    string
		samples []time.Duration
	}{
		{name: "single", samples: []time.Duration{420 * ms}},
		{name: "constant", samples: slices.Repeat([]time.Duration{250 * ms}, 100)},
		{name: "uniform 1ms to 1s", samples: uniform},
		{name: "exponential", samples: exponential},
		{name: "bimodal", samples: bimodal},
		{name: "two values", samples: []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 2 * time.Second}},
		{name: "near the top", samples: []time.Duration{9 * time.Minute, 9*time.Minute + 59*time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{})
			n := len(tt.samples)
			for i := range n {
				// Shuffled (7919 is prime to every n here) and spread
				// over 50s of the window.
				j := (i * 7919) % n
				s.Observe(at(time.Duration(i)*50*time.Second/time.Duration(n)), outcome.OK, tt.samples[j])
			}
			got := s.Snapshot(at(55 * time.Second))
			sorted := slices.Sorted(slices.Values(tt.samples))
			for i, p := range []time.Duration{got.P50, got.P90, got.P95, got.P99} {
				q := quantiles[i]
				want := sorted[int(math.Ceil(q*float64(len(sorted))))-1]
				if rel := math.Abs(float64(p-want)) / float64(want); rel > binError {
					t.Errorf("got p%v %v, want %v within %.1f%% (off by %.1f%%)", q*100, p, want, binError*100, rel*100)
				}
			}
			if !(got.P50 <= got.P90 && got.P90 <= got.P95 && got.P95 <= got.P99) {
				t.Errorf("got p50 %v p90 %v p95 %v p99 %v, want them non-decreasing", got.P50, got.P90, got.P95, got.P99)
			}
		})
	}
}

func TestPercentileEdges(t *testing.T) {
	tests := []struct {
		name    string
		latency time.Duration
		lo, hi  time.Duration // got P50 must be in [lo, hi]
	}{
		{name: "below 1ms", latency: 300 * time.Microsecond, lo: 1, hi: ms},
		{name: "1ns", latency: 1, lo: 1, hi: ms},
		{name: "exactly 1ms", latency: ms, lo: ms, hi: time.Duration(float64(ms) * (1 + binError))},
		{name: "10min", latency: 10 * time.Minute, lo: 10 * time.Minute, hi: 10 * time.Minute},
		{name: "an hour reads 10min", latency: time.Hour, lo: 10 * time.Minute, hi: 10 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{})
			s.Observe(at(0), outcome.OK, tt.latency)
			if got := s.Snapshot(at(0)).P50; got < tt.lo || got > tt.hi {
				t.Errorf("got p50 %v, want it in [%v, %v]", got, tt.lo, tt.hi)
			}
		})
	}
}

func TestPercentilesFollowTheWindow(t *testing.T) {
	s := New(Config{})
	for i := range 100 {
		s.Observe(at(time.Duration(i)*10*ms), outcome.OK, 2*time.Second)
	}
	for i := range 100 {
		s.Observe(at(30*time.Second+time.Duration(i)*10*ms), outcome.OK, 100*ms)
	}
	if got := s.Snapshot(at(31 * time.Second)).P90; got < time.Second {
		t.Errorf("got p90 %v with half the window at 2s, want about 2s", got)
	}
	got := s.Snapshot(at(61 * time.Second))
	if math.Abs(float64(got.P99-100*ms))/float64(100*ms) > binError {
		t.Errorf("got p99 %v after the slow bucket expired, want about 100ms", got.P99)
	}
	got = s.Snapshot(at(91 * time.Second))
	if got.P50 != 0 || got.P99 != 0 {
		t.Errorf("got p50 %v p99 %v with no latency in the window, want 0", got.P50, got.P99)
	}
	if got.LatencyEMA == 0 {
		t.Errorf("got EMA %v after the window emptied, want it kept", got.LatencyEMA)
	}
}

func TestBins(t *testing.T) {
	for i := range nBins {
		if got := binOf(binValue(i)); got != i {
			t.Errorf("got bin %d for bin %d's value %v, want %d", got, i, binValue(i), i)
		}
		if i == 0 {
			continue
		}
		low := time.Duration(math.Ceil(binLow[i]))
		if got := binOf(low); got != i {
			t.Errorf("got bin %d for %v, the lower edge of bin %d, want %d", got, low, i, i)
		}
		if got := binOf(low - 1); got != i-1 {
			t.Errorf("got bin %d for %v, just below bin %d, want %d", got, low-1, i, i-1)
		}
	}
	if binError > 0.12 {
		t.Errorf("got bin ratio %v, want at most 1.12", 1+binError)
	}
}

func TestRecency(t *testing.T) {
	compare := func(t *testing.T, got, want Snapshot) {
		t.Helper()
		if got.SinceSuccess != want.SinceSuccess {
			t.Errorf("got since success %v, want %v", got.SinceSuccess, want.SinceSuccess)
		}
		if math.Abs(got.Recency-want.Recency) > 1e-12 {
			t.Errorf("got recency %v, want %v", got.Recency, want.Recency)
		}
	}
	rec := func(since time.Duration, r float64) Snapshot { return Snapshot{SinceSuccess: since, Recency: r} }
	sec := time.Second
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			name: "default half-life 60s",
			steps: []step{
				{at: 0, check: true, want: rec(-1, 0.5)},
				{at: sec, kind: outcome.ServerError, count: 1, check: true, want: rec(-1, 0.5)},
				{at: 10 * sec, kind: outcome.OK, count: 1, check: true, want: rec(0, 1)},
				{at: 40 * sec, check: true, want: rec(30*sec, math.Sqrt2/2)},
				{at: 70 * sec, check: true, want: rec(60*sec, 0.5)},
				// Failures do not reset it; it outlives the window.
				{at: 130 * sec, kind: outcome.Timeout, count: 1, check: true, want: rec(120*sec, 0.25)},
				{at: 190 * sec, kind: outcome.OK, count: 1, check: true, want: rec(0, 1)},
				// An older success does not move it back.
				{at: 150 * sec, kind: outcome.OK, count: 1},
				{at: 200 * sec, check: true, want: rec(10*sec, math.Exp2(-10.0/60))},
			},
		},
		{
			name: "half-life 10s",
			cfg:  Config{RecencyHalfLife: 10 * sec},
			steps: []step{
				{at: 0, kind: outcome.OK, count: 1},
				{at: 30 * sec, check: true, want: rec(30*sec, 0.125)},
				// A Snapshot from before the success reads 0 since, 1.
				{at: -sec, check: true, want: rec(0, 1)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, New(tt.cfg), tt.steps, compare)
		})
	}
}

func TestNoAllocations(t *testing.T) {
	s := New(Config{})
	var i time.Duration
	if got := testing.AllocsPerRun(1000, func() {
		i += 7 * ms
		s.Observe(at(i), outcome.OK, 120*ms+i%time.Second)
	}); got != 0 {
		t.Errorf("got %v allocations per Observe, want 0", got)
	}
	if got := testing.AllocsPerRun(1000, func() {
		i += 7 * ms
		_ = s.Snapshot(at(i))
	}); got != 0 {
		t.Errorf("got %v allocations per Snapshot, want 0", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	defer goleak.VerifyNone(t)
	const (
		workers = 8
		each    = 2000
	)
	s := New(Config{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				now := at(time.Duration(i) * time.Millisecond) // all in the first bucket
				kind := outcome.OK
				if i%4 == 0 {
					kind = outcome.ServerError
				}
				s.Observe(now, kind, time.Duration(w+1)*10*ms)
				if i%16 == 0 {
					snap := s.Snapshot(now)
					if snap.SuccessRate <= 0 || snap.SuccessRate > 1 || snap.Failures > snap.Requests {
						t.Errorf("got inconsistent snapshot %+v", snap)
					}
				}
				if i%500 == 0 {
					_ = s.Export(now)
				}
			}
		})
	}
	wg.Wait()
	got := s.Snapshot(at(2 * time.Second))
	if got.Requests != workers*each || got.Failures != workers*each/4 {
		t.Errorf("got requests %d failures %d, want %d and %d", got.Requests, got.Failures, workers*each, workers*each/4)
	}
	if got.P50 < 10*ms || got.P99 > 90*ms {
		t.Errorf("got p50 %v p99 %v, want them within the observed 10ms..80ms", got.P50, got.P99)
	}
}

func BenchmarkObserve(b *testing.B) {
	s := New(Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var i time.Duration
		for pb.Next() {
			i += 100 * time.Microsecond // crosses a 5s bucket every 50k calls
			s.Observe(at(i), outcome.OK, 50*ms+i%(500*ms))
		}
	})
}

func BenchmarkSnapshot(b *testing.B) {
	s := New(Config{})
	for i := range 100_000 {
		d := time.Duration(i) * 500 * time.Microsecond
		s.Observe(at(d), outcome.OK, time.Duration(i%2000+1)*ms)
	}
	now := at(50 * time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = s.Snapshot(now)
		}
	})
}

// checkSums fails unless the running sums equal the sums over the slots.
func checkSums(tb testing.TB, s *Stats) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var ok, fail int64
	var want histogram
	for _, sl := range s.slots {
		ok += sl.ok
		fail += sl.fail
		var n uint32
		for b, c := range sl.hist {
			want.add(b, uint64(c))
			n += c
		}
		if n != sl.n {
			tb.Fatalf("got slot sample count %d, want %d", sl.n, n)
		}
	}
	if ok != s.ok || fail != s.fail || want != s.hist {
		tb.Fatalf("got sums ok %d fail %d n %d, want %d, %d and %d", s.ok, s.fail, s.hist.n, ok, fail, want.n)
	}
}

func TestRunningSums(t *testing.T) {
	// A fixed pseudo-random walk through time: small steps, jumps, steps
	// back, restores; the sums must hold after every call.
	s := New(Config{Window: 12 * time.Second})
	now := time.Duration(0)
	x := uint64(12345)
	for i := range 5000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		switch r := x % 100; {
		case r < 70:
			now += time.Duration(x%400) * ms
		case r < 75:
			now -= time.Duration(x%3000) * ms
		case r < 77:
			now += time.Duration(x%30) * time.Second
		}
		switch r := (x >> 8) % 100; {
		case r < 80:
			s.Observe(at(now), outcome.Kind(x%uint64(len(outcome.Kinds()))), time.Duration(x>>20)%(20*time.Second))
		case r < 98:
			s.Snapshot(at(now))
		default:
			s.Restore(at(now+time.Duration(x%5000)*ms), s.Export(at(now)))
		}
		checkSums(t, s)
		if t.Failed() {
			t.Fatalf("after step %d", i)
		}
	}
}

// TestFailing is the failing rule's step table: FailingStreak counted
// failures in a row, with no success since, the earliest of them within
// the window.
func TestFailing(t *testing.T) {
	type obs struct {
		at   time.Duration
		kind outcome.Kind
	}
	tests := []struct {
		name string
		obs  []obs
		at   time.Duration
		want bool
	}{
		{"idle", nil, 0, false},
		{"one failure", []obs{{0, outcome.ServerError}}, time.Second, false},
		{"two failures", []obs{{0, outcome.ServerError}, {time.Second, outcome.Timeout}}, 2 * time.Second, true},
		{"two failures after successes", []obs{{0, outcome.OK}, {0, outcome.OK}, {time.Second, outcome.Network}, {time.Second, outcome.Auth}}, 2 * time.Second, true},
		{"a success since", []obs{{0, outcome.ServerError}, {0, outcome.ServerError}, {time.Second, outcome.OK}}, 2 * time.Second, false},
		{"a success between", []obs{{0, outcome.ServerError}, {time.Second, outcome.OK}, {2 * time.Second, outcome.ServerError}}, 3 * time.Second, false},
		{"what does not count changes nothing", []obs{{0, outcome.ServerError}, {0, outcome.ClientError}, {0, outcome.Canceled}, {0, outcome.TargetMissing}, {time.Second, outcome.ServerError}}, 2 * time.Second, true},
		{"not counted between failures", []obs{{0, outcome.ServerError}, {0, outcome.ClientError}}, time.Second, false},
		{"the earlier failure left the window", []obs{{0, outcome.ServerError}, {50 * time.Second, outcome.ServerError}}, 61 * time.Second, false},
		{"a third keeps it failing", []obs{{0, outcome.ServerError}, {50 * time.Second, outcome.ServerError}, {61 * time.Second, outcome.ServerError}}, 62 * time.Second, true},
		{"both within the window", []obs{{0, outcome.ServerError}, {0, outcome.ServerError}}, 59 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{})
			for _, o := range tt.obs {
				s.Observe(at(o.at), o.kind, 10*ms)
			}
			if got := s.Failing(at(tt.at)); got != tt.want {
				t.Errorf("Failing at %s = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

// TestRanking: Ranking reads what Snapshot does but the percentiles, at
// every step of a mixed history (window expiry, EMA, recency, failures).
func TestRanking(t *testing.T) {
	s := New(Config{})
	kinds := []outcome.Kind{outcome.OK, outcome.OK, outcome.ServerError, outcome.OK, outcome.Timeout, outcome.RateLimited}
	sawPercentiles := false
	for i := range 200 {
		now := at(time.Duration(i) * 700 * ms)
		s.Observe(now, kinds[i%len(kinds)], time.Duration(1+i%37)*13*ms)
		later := now.Add(time.Duration(i%5) * time.Second)
		want := s.Snapshot(later)
		sawPercentiles = sawPercentiles || want.P50 > 0
		want.P50, want.P90, want.P95, want.P99 = 0, 0, 0, 0
		if got := s.Ranking(later); got != want {
			t.Fatalf("step %d: Ranking %+v, want %+v", i, got, want)
		}
	}
	if !sawPercentiles {
		t.Fatal("no step had percentiles: the history does not exercise the difference")
	}
	if got := New(Config{}).Ranking(t0); got != idle {
		t.Errorf("idle: Ranking %+v, want %+v", got, idle)
	}
}

func BenchmarkHealthRead(b *testing.B) {
	s := New(Config{})
	for i := range 1000 {
		s.Observe(at(time.Duration(i)*ms), outcome.OK, time.Duration(1+i%37)*13*ms)
	}
	now := at(time.Second)
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			s.Snapshot(now)
		}
	})
	b.Run("ranking", func(b *testing.B) {
		for b.Loop() {
			s.Ranking(now)
		}
	})
}
