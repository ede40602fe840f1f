package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/collector"
	"github.com/llmrouter/llmrouter/bench/internal/load"
	"github.com/llmrouter/llmrouter/bench/internal/proc"
	"github.com/llmrouter/llmrouter/bench/internal/targets"
	"github.com/llmrouter/llmrouter/bench/internal/upstream"
)

// row is one measured (mode, concurrency, target).
type row struct {
	mode   load.Mode
	conc   int
	target string
	res    load.Result
	cpu    time.Duration  // proxy CPU over the run; 0 for direct
	rss    int64          // proxy RSS at the end; 0 for direct
	conns  upstream.Stats // upstream connections: accepted during the run, open at its end
	spans  *traceCounts   // for a traced router: what its exporter and the sink counted during the run; nil otherwise
	counts *proc.Counts   // the proxy's system calls and context switches over the run (perf stat); nil when not counted
}

// perReq is n per completed request.
func (r row) perReq(n int64) float64 {
	if r.res.OK == 0 {
		return 0
	}
	return float64(n) / float64(r.res.OK)
}

func (r row) rps() float64 { return float64(r.res.OK) / r.res.Elapsed.Seconds() }
func (r row) p50() time.Duration {
	return load.Percentile(r.res.Lat, 0.50)
}
func (r row) p99() time.Duration {
	return load.Percentile(r.res.Lat, 0.99)
}
func (r row) ttft50() time.Duration { return load.Percentile(r.res.TTFT, 0.50) }
func (r row) ttft99() time.Duration { return load.Percentile(r.res.TTFT, 0.99) }

// cpuPerReq is the proxy's CPU time per completed request.
func (r row) cpuPerReq() time.Duration {
	if r.res.OK == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.res.OK)
}

// sanityCheck sends one request of each mode to each target, so a broken
// setup fails before minutes of load.
func sanityCheck(ctx context.Context, ts []targets.Target, modes ...load.Mode) error {
	var buf bytes.Buffer
	for _, t := range ts {
		client := load.NewClient(1, t.TLS)
		for _, m := range modes {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := load.Once(cctx, client, t.URL, m, m.Body(), &buf)
			cancel()
			if err != nil {
				client.CloseIdleConnections()
				return fmt.Errorf("sanity check of %s (%s): %w", t.Name, m, err)
			}
		}
		client.CloseIdleConnections()
	}
	return nil
}

// measureAll runs every (mode, concurrency) against every target in turn,
// o.rounds times, interleaving targets so slow drift of a shared machine
// spreads over all (roundOrder). It returns the rounds of each (mode,
// concurrency, target) in table order.
func measureAll(ctx context.Context, o options, up *upstream.Handle, sink *collector.Handle, ts []targets.Target, progress io.Writer) ([]rounds, error) {
	if err := sanityCheck(ctx, ts, load.JSON, load.Stream); err != nil {
		return nil, err
	}
	var out []rounds
	for _, m := range o.modes {
		for _, c := range o.conc {
			group := make([]rounds, len(ts))
			for i := range o.rounds {
				for _, k := range roundOrder(len(ts), i) {
					t := ts[k]
					r, err := measure(ctx, o, up, sink, t, m, c)
					if err != nil {
						return nil, err
					}
					round := ""
					if o.rounds > 1 {
						round = fmt.Sprintf("  round %d/%d", i+1, o.rounds)
					}
					fmt.Fprintf(progress, "%-6s c=%-3d %-17s %8.0f req/s  p50 %6d µs  p99 %6d µs  cpu %5s µs/req  conns new %s open %s  errors %d%s%s\n",
						m, c, t.Name, r.rps(), r.p50().Microseconds(), r.p99().Microseconds(), cpuCell(r.target, r.cpuPerReq()),
						connCell(r.conns.Accepted, r.conns.AcceptedBy), connCell(r.conns.Open, r.conns.OpenBy), r.res.Errs, spansNote(r), round)
					if r.res.Errs > 0 {
						fmt.Fprintf(progress, "  last error: %s\n", r.res.LastErr)
					}
					group[k] = append(group[k], r)
				}
			}
			out = append(out, group...)
		}
	}
	return out, nil
}

// measure warms up, then drives the load for o.duration with the proxy's
// CPU read around it. The upstream's connection counters are read around
// both: connections a run opens are mostly opened while warming up. A
// traced router's span counters, and the sink's, are read around the
// measured period, outside the CPU readings (reading /metrics costs the
// router CPU).
func measure(ctx context.Context, o options, up *upstream.Handle, sink *collector.Handle, t targets.Target, m load.Mode, c int) (row, error) {
	client := load.NewClient(c, t.TLS)
	defer client.CloseIdleConnections()
	conns0, err := up.Stats(ctx, t.Name)
	if err != nil {
		return row{}, err
	}
	if o.warmup > 0 {
		load.Drive(ctx, client, t.URL, m, c, o.warmup)
	}
	var spans0 traceCounts
	if t.Tracing.On() {
		if spans0, err = readTraceCounts(ctx, sink, t); err != nil {
			return row{}, err
		}
	}
	var before proc.Usage
	if t.Proc != nil {
		if before, err = proc.GroupUsage(t.Proc.PID()); err != nil {
			return row{}, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	var counter *proc.Counter
	if o.syscalls && t.Proc != nil {
		// Counted outside the CPU reading's window as little as it can
		// be: perf attaches first; a proxy perf cannot attach to is not
		// counted.
		counter, _ = proc.CountGroup(t.Proc.PID())
	}
	res := load.Drive(ctx, client, t.URL, m, c, o.duration)
	var counts *proc.Counts
	if counter != nil {
		if n, err := counter.Stop(); err == nil {
			counts = &n
		}
	}
	if err := ctx.Err(); err != nil {
		return row{}, fmt.Errorf("interrupted: %w", err)
	}
	r := row{mode: m, conc: c, target: t.Name, res: res, counts: counts}
	conns1, err := up.Stats(ctx, t.Name)
	if err != nil {
		return row{}, err
	}
	r.conns = conns1.Sub(conns0)
	if t.Proc != nil {
		after, err := proc.GroupUsage(t.Proc.PID())
		if err != nil || t.Proc.Exited() {
			return row{}, fmt.Errorf("%s died during the run (%v)", t.Name, err)
		}
		r.cpu, r.rss = after.CPU-before.CPU, after.RSS
	}
	if t.Tracing.On() {
		spans1, err := readTraceCounts(ctx, sink, t)
		if err != nil {
			return row{}, err
		}
		d := spans1.sub(spans0)
		r.spans = &d
	}
	return r, nil
}

// cpuCell is CPU per request in µs; "—" for direct, which has no proxy.
func cpuCell(target string, perReq time.Duration) string {
	if target == targets.Direct {
		return "—"
	}
	return fmt.Sprintf("%.1f", float64(perReq.Nanoseconds())/1e3)
}

// The medians over the rounds of the figures the tables print.
func (g rounds) rps() float64             { return med(g, row.rps) }
func (g rounds) p50() time.Duration       { return med(g, row.p50) }
func (g rounds) p99() time.Duration       { return med(g, row.p99) }
func (g rounds) ttft50() time.Duration    { return med(g, row.ttft50) }
func (g rounds) ttft99() time.Duration    { return med(g, row.ttft99) }
func (g rounds) cpuPerReq() time.Duration { return med(g, row.cpuPerReq) }
func (g rounds) cpuCell() string          { return cpuCell(g.id().target, g.cpuPerReq()) }
func (g rounds) rss() int64               { return med(g, func(r row) int64 { return r.rss }) }

// errs are the failed requests of every round, summed: a median would
// hide one round's failures.
func (g rounds) errs() int {
	n := 0
	for _, r := range g {
		n += r.res.Errs
	}
	return n
}

// The perf counts the load table prints; ok is false when perf did not
// count the event.
func syscallsOf(c proc.Counts) (int64, bool)    { return c.Syscalls, true }
func ctxSwitchesOf(c proc.Counts) (int64, bool) { return c.ContextSwitches, true }
func nanosleepOf(c proc.Counts) (int64, bool)   { return c.Nanosleep, c.Sched }
func futexOf(c proc.Counts) (int64, bool)       { return c.Futex, c.Sched }

// countCell is the median per request of one perf count over the rounds
// perf counted, formatted; "—" when it counted none.
func countCell(g rounds, format string, count func(proc.Counts) (int64, bool)) string {
	v, ok := medOK(g, func(r row) (float64, bool) {
		if r.counts == nil {
			return 0, false
		}
		n, ok := count(*r.counts)
		return r.perReq(n), ok
	})
	if !ok {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

// connsCell is connCell of the medians over the rounds of the upstream
// connections the target opened (open false) or held at the end (open
// true), the total and each protocol's count apart.
func connsCell(g rounds, open bool) string {
	var totals []int64
	by := map[string][]int64{}
	for _, r := range g {
		total, m := r.conns.Accepted, r.conns.AcceptedBy
		if open {
			total, m = r.conns.Open, r.conns.OpenBy
		}
		totals = append(totals, total)
		for p, n := range m {
			by[p] = append(by[p], n)
		}
	}
	medBy := map[string]int64{}
	for p, ns := range by {
		// A round without the protocol had none of it.
		medBy[p] = median(append(ns, make([]int64, len(g)-len(ns))...))
	}
	return connCell(median(totals), medBy)
}

// loadTable is the side-by-side table: one line per (mode, concurrency,
// target), with p50 also as the latency added over direct.
func loadTable(gs []rounds) string {
	direct := map[string]time.Duration{}
	for _, g := range gs {
		if r := g.id(); r.target == targets.Direct {
			direct[fmt.Sprint(r.mode, r.conc)] = g.p50()
		}
	}
	header := []string{"mode", "conc", "target", "req/s", "p50 µs", "p99 µs", "+p50 vs direct µs", "CPU µs/req", "syscalls/req", "ctx sw/req", "nanosleep/req", "futex/req", "RSS MB", "new conns", "open conns", "errors"}
	var cells [][]string
	for _, g := range gs {
		r := g.id()
		added, rss := "—", "—"
		if d, ok := direct[fmt.Sprint(r.mode, r.conc)]; ok && r.target != targets.Direct {
			added = strconv.FormatInt((g.p50() - d).Microseconds(), 10)
		}
		if r.target != targets.Direct {
			rss = fmt.Sprintf("%.1f", float64(g.rss())/(1<<20))
		}
		cells = append(cells, []string{string(r.mode), strconv.Itoa(r.conc), r.target,
			fmt.Sprintf("%.0f", g.rps()), strconv.FormatInt(g.p50().Microseconds(), 10),
			strconv.FormatInt(g.p99().Microseconds(), 10), added, g.cpuCell(),
			countCell(g, "%.1f", syscallsOf), countCell(g, "%.2f", ctxSwitchesOf),
			countCell(g, "%.2f", nanosleepOf), countCell(g, "%.2f", futexOf), rss,
			connsCell(g, false), connsCell(g, true), strconv.Itoa(g.errs())})
	}
	right := map[int]bool{}
	for i := 1; i < len(header); i++ {
		right[i] = i != 2
	}
	return markdownTable(header, cells, right)
}

// latencyTable is the latency each proxy adds: its percentiles minus
// direct's in the same (mode, concurrency), of whole requests and, for
// streams, of the time to the first event (TTFT). At concurrency 1 this
// is the figure published comparisons of gateways quote.
func latencyTable(gs []rounds) string {
	direct := map[string]rounds{}
	for _, g := range gs {
		if r := g.id(); r.target == targets.Direct {
			direct[fmt.Sprint(r.mode, r.conc)] = g
		}
	}
	if len(direct) == 0 {
		return ""
	}
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }
	header := []string{"mode", "conc", "target", "p50 µs", "p99 µs", "+p50 µs", "+p99 µs", "TTFT p50 µs", "TTFT p99 µs", "+TTFT p50 µs", "+TTFT p99 µs"}
	var cells [][]string
	for _, g := range gs {
		r := g.id()
		d, ok := direct[fmt.Sprint(r.mode, r.conc)]
		if !ok {
			continue
		}
		c := []string{string(r.mode), strconv.Itoa(r.conc), r.target, us(g.p50()), us(g.p99()), "—", "—", "—", "—", "—", "—"}
		if r.target != targets.Direct {
			c[5], c[6] = us(g.p50()-d.p50()), us(g.p99()-d.p99())
		}
		if r.mode == load.Stream {
			c[7], c[8] = us(g.ttft50()), us(g.ttft99())
			if r.target != targets.Direct {
				c[9], c[10] = us(g.ttft50()-d.ttft50()), us(g.ttft99()-d.ttft99())
			}
		}
		cells = append(cells, c)
	}
	return "\nAdded latency (this target minus direct, same mode and concurrency):\n\n" +
		markdownTable(header, cells, map[int]bool{1: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true, 10: true})
}

// summary compares llmrouter with its two yardsticks: CPU per request
// against nginx, p50 at concurrency 1 against the bare httputil proxy;
// llmrouter with llmrouter-base; and llmrouter+tracing with llmrouter:
// what tracing adds. Each figure is the median over the rounds; with
// more than one round, a CPU ratio is also given per round, taken within
// the round (roundsNote).
func summary(gs []rounds) string {
	find := func(m load.Mode, c int, name string) (rounds, bool) {
		for _, g := range gs {
			if r := g.id(); r.mode == m && r.conc == c && r.target == name {
				return g, true
			}
		}
		return nil, false
	}
	var b strings.Builder
	for _, g := range gs {
		r := g.id()
		if r.target == targets.RouterTracing {
			if u, ok := find(r.mode, r.conc, targets.Router); ok && u.cpuPerReq() > 0 && u.rps() > 0 {
				fmt.Fprintf(&b, "- %s c=%d: tracing on adds %+.1f µs CPU/request to llmrouter (%s vs %s µs, %.2f×), req/s %+.0f%%, p50 %+d µs, p99 %+d µs%s\n",
					r.mode, r.conc, float64((g.cpuPerReq()-u.cpuPerReq()).Nanoseconds())/1e3, g.cpuCell(), u.cpuCell(),
					float64(g.cpuPerReq())/float64(u.cpuPerReq()), 100*(g.rps()/u.rps()-1),
					(g.p50() - u.p50()).Microseconds(), (g.p99() - u.p99()).Microseconds(), roundsNote(cpuRatios(g, u)))
			}
			continue
		}
		if r.target == targets.RouterBase {
			if u, ok := find(r.mode, r.conc, targets.Router); ok && g.cpuPerReq() > 0 {
				fmt.Fprintf(&b, "- %s c=%d: llmrouter vs %s: CPU/request %.2f× (%s vs %s µs)%s, p50 %+d µs, p99 %+d µs%s\n",
					r.mode, r.conc, targets.RouterBase, float64(u.cpuPerReq())/float64(g.cpuPerReq()), u.cpuCell(), g.cpuCell(),
					countsDiff(u, g), (u.p50() - g.p50()).Microseconds(), (u.p99() - g.p99()).Microseconds(), roundsNote(cpuRatios(u, g)))
			}
			continue
		}
		if r.target != targets.Router {
			continue
		}
		if n, ok := find(r.mode, r.conc, targets.Nginx); ok && n.cpuPerReq() > 0 {
			fmt.Fprintf(&b, "- %s c=%d: llmrouter CPU/request %.2f× nginx's (%s vs %s µs)%s\n", r.mode, r.conc,
				float64(g.cpuPerReq())/float64(n.cpuPerReq()), g.cpuCell(), n.cpuCell(), roundsNote(cpuRatios(g, n)))
		}
		if h, ok := find(r.mode, r.conc, targets.HTTPUtil); ok && r.conc == 1 {
			fmt.Fprintf(&b, "- %s c=1: llmrouter p50 minus httputil p50: %+d µs\n", r.mode, (g.p50() - h.p50()).Microseconds())
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n" + b.String()
}

// countsDiff is ", syscalls/req A vs B, ctx sw/req A vs B" when both were
// counted, and ", nanosleep/req A vs B, futex/req A vs B" after it when
// perf counted both's scheduler calls.
func countsDiff(a, b rounds) string {
	pair := func(name, format string, count func(proc.Counts) (int64, bool)) string {
		x, y := countCell(a, format, count), countCell(b, format, count)
		if x == "—" || y == "—" {
			return ""
		}
		return fmt.Sprintf(", %s %s vs %s", name, x, y)
	}
	sys := pair("syscalls/req", "%.1f", syscallsOf)
	if sys == "" {
		return ""
	}
	return sys + pair("ctx sw/req", "%.2f", ctxSwitchesOf) + pair("nanosleep/req", "%.2f", nanosleepOf) + pair("futex/req", "%.2f", futexOf)
}
