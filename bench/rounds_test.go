package main

import (
	"slices"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/load"
	"github.com/llmrouter/llmrouter/bench/internal/proc"
	"github.com/llmrouter/llmrouter/bench/internal/targets"
	"github.com/llmrouter/llmrouter/bench/internal/upstream"
)

// oneRound is rows as the tables get them from a run of -rounds 1.
func oneRound(rows ...row) []rounds {
	var gs []rounds
	for _, r := range rows {
		gs = append(gs, rounds{r})
	}
	return gs
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{61.8}, 61.8},
		{"odd, unsorted", []float64{94.5, 61.8, 69.7}, 69.7},
		{"even: the mean of the middle two", []float64{85.5, 61.5, 65.5, 69.5}, 67.5},
		{"an outlier does not move it", []float64{63.3, 65.9, 1000, 64, 62}, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := median(in); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("the input was reordered: %v, was %v", in, tt.in)
			}
		})
	}
	t.Run("durations, even", func(t *testing.T) {
		if got, want := median([]time.Duration{3 * time.Microsecond, time.Microsecond}), 2*time.Microsecond; got != want {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

func TestRoundOrder(t *testing.T) {
	tests := []struct {
		n, round int
		want     []int
	}{
		{3, 0, []int{0, 1, 2}},
		{3, 1, []int{2, 1, 0}},
		{3, 2, []int{0, 1, 2}},
		{4, 3, []int{3, 2, 1, 0}},
		{1, 1, []int{0}},
	}
	for _, tt := range tests {
		if got := roundOrder(tt.n, tt.round); !slices.Equal(got, tt.want) {
			t.Errorf("roundOrder(%d, %d): got %v, want %v", tt.n, tt.round, got, tt.want)
		}
	}
}

func TestRoundsNote(t *testing.T) {
	tests := []struct {
		name   string
		ratios []float64
		want   string
	}{
		{"one round: nothing", []float64{3.07}, ""},
		{"none", nil, ""},
		{"in round order, with their median", []float64{3.1, 2.9, 3.0}, "; per round 3.10×, 2.90×, 3.00× (median 3.00×)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := roundsNote(tt.ratios); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// measured is one round of a target at json c=16: ok requests in 1 s,
// the proxy's CPU over them, p50 and p99 in µs.
func measured(target string, ok int, cpu time.Duration, p50, p99 int) row {
	return row{mode: load.JSON, conc: 16, target: target, cpu: cpu,
		res: load.Result{OK: ok, Elapsed: time.Second, Lat: []time.Duration{time.Duration(p50) * time.Microsecond, time.Duration(p99) * time.Microsecond}}}
}

// threeRounds: nginx and llmrouter over three rounds whose CPU per
// request moves as on the shared machine (nginx 20, 25, 22 µs; llmrouter
// 62, 75, 70 µs), perf failing once for llmrouter and counting the
// scheduler's calls once.
func threeRounds() []rounds {
	h1 := func(n int64) map[string]int64 { return map[string]int64{upstream.ProtoH1: n} }
	ng := rounds{
		measured(targets.Nginx, 1000, 20*time.Millisecond, 300, 900),
		measured(targets.Nginx, 1200, 30*time.Millisecond, 320, 700),
		measured(targets.Nginx, 900, 19800*time.Microsecond, 310, 800),
	}
	lr := rounds{
		measured(targets.Router, 500, 31*time.Millisecond, 500, 1500),
		measured(targets.Router, 400, 30*time.Millisecond, 520, 1100),
		measured(targets.Router, 450, 31500*time.Microsecond, 480, 1300),
	}
	for i := range ng {
		ng[i].rss = int64(4+i) << 20
		ng[i].counts = &proc.Counts{Syscalls: int64(ng[i].res.OK) * 11 / 2, ContextSwitches: int64(ng[i].res.OK) / 2, Sched: true}
		ng[i].conns = upstream.Stats{Open: 2, OpenBy: h1(2)}
	}
	ng[0].conns = upstream.Stats{Accepted: 2, AcceptedBy: h1(2), Open: 2, OpenBy: h1(2)}
	for i := range lr {
		lr[i].rss = int64(10+i) << 20
		lr[i].conns = upstream.Stats{Open: 16, OpenBy: h1(16)}
	}
	lr[0].conns = upstream.Stats{Accepted: 16, AcceptedBy: h1(16), Open: 16, OpenBy: h1(16)}
	lr[1].res.Errs = 2
	// lr[0]: perf failed. lr[1]: 9 syscalls, 1.5 switches, 0.1 nanosleep
	// and 2 futex a request. lr[2]: 8 and 1, the tracepoints refused.
	lr[1].counts = &proc.Counts{Syscalls: 3600, ContextSwitches: 600, Nanosleep: 40, Futex: 800, Sched: true}
	lr[2].counts = &proc.Counts{Syscalls: 3600, ContextSwitches: 450}
	return []rounds{ng, lr}
}

// TestLoadTableOverRounds: every figure is its median over the rounds
// (perf counts over the rounds perf counted, "—" when none), errors are
// summed.
func TestLoadTableOverRounds(t *testing.T) {
	want := "" +
		"| mode | conc | target    | req/s | p50 µs | p99 µs | +p50 vs direct µs | CPU µs/req | syscalls/req | ctx sw/req | nanosleep/req | futex/req | RSS MB | new conns | open conns | errors |\n" +
		"| ---- | ---: | --------- | ----: | -----: | -----: | ----------------: | ---------: | -----------: | ---------: | ------------: | --------: | -----: | --------: | ---------: | -----: |\n" +
		"| json |   16 | nginx     |  1000 |    310 |    800 |                 — |       22.0 |          5.5 |       0.50 |          0.00 |      0.00 |    5.0 |         0 |       2 h1 |      0 |\n" +
		"| json |   16 | llmrouter |   450 |    500 |   1300 |                 — |       70.0 |          8.5 |       1.25 |          0.10 |      2.00 |   11.0 |         0 |      16 h1 |      2 |\n"
	if got := loadTable(threeRounds()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestSummaryOverRounds: the CPU ratio of the medians, then each round's
// ratio taken within the round, in round order, and their median; with
// one round, the line as it was before -rounds.
func TestSummaryOverRounds(t *testing.T) {
	gs := threeRounds()
	base := rounds{
		measured(targets.RouterBase, 500, 30*time.Millisecond, 510, 1400),
		measured(targets.RouterBase, 400, 32*time.Millisecond, 530, 1000),
		measured(targets.RouterBase, 450, 31500*time.Microsecond, 490, 1200),
	}
	tests := []struct {
		name string
		gs   []rounds
		want string
	}{
		{
			name: "three rounds",
			gs:   append(gs, base),
			want: "\n- json c=16: llmrouter CPU/request 3.18× nginx's (70.0 vs 22.0 µs); per round 3.10×, 3.00×, 3.18× (median 3.10×)\n" +
				"- json c=16: llmrouter vs llmrouter-base: CPU/request 1.00× (70.0 vs 70.0 µs), p50 -10 µs, p99 +100 µs; per round 1.03×, 0.94×, 1.00× (median 1.00×)\n",
		},
		{
			name: "one round",
			gs:   oneRound(gs[0][0], gs[1][0], base[0]),
			want: "\n- json c=16: llmrouter CPU/request 3.10× nginx's (62.0 vs 20.0 µs)\n" +
				"- json c=16: llmrouter vs llmrouter-base: CPU/request 1.03× (62.0 vs 60.0 µs), p50 -10 µs, p99 +100 µs\n",
		},
		{
			name: "perf counts of both, the scheduler's where both had them",
			gs:   oneRound(gs[1][1], withCounts(base[1], proc.Counts{Syscalls: 4000, ContextSwitches: 400, Nanosleep: 80, Futex: 1200, Sched: true})),
			want: "\n- json c=16: llmrouter vs llmrouter-base: CPU/request 0.94× (75.0 vs 80.0 µs), syscalls/req 9.0 vs 10.0, ctx sw/req 1.50 vs 1.00, nanosleep/req 0.10 vs 0.20, futex/req 2.00 vs 3.00, p50 -10 µs, p99 +100 µs\n",
		},
		{
			name: "the scheduler's calls left out when one was not counted",
			gs:   oneRound(gs[1][2], withCounts(base[2], proc.Counts{Syscalls: 4500, ContextSwitches: 450, Nanosleep: 1, Futex: 2, Sched: true})),
			want: "\n- json c=16: llmrouter vs llmrouter-base: CPU/request 1.00× (70.0 vs 70.0 µs), syscalls/req 8.0 vs 10.0, ctx sw/req 1.00 vs 1.00, p50 -10 µs, p99 +100 µs\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(tt.gs); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func withCounts(r row, c proc.Counts) row {
	r.counts = &c
	return r
}
