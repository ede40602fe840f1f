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
// interleaving targets so slow drift of a shared machine spreads over all.
func measureAll(ctx context.Context, o options, up *upstream.Handle, sink *collector.Handle, ts []targets.Target, progress io.Writer) ([]row, error) {
	if err := sanityCheck(ctx, ts, load.JSON, load.Stream); err != nil {
		return nil, err
	}
	var rows []row
	for _, m := range o.modes {
		for _, c := range o.conc {
			for _, t := range ts {
				r, err := measure(ctx, o, up, sink, t, m, c)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(progress, "%-6s c=%-3d %-17s %8.0f req/s  p50 %6d µs  p99 %6d µs  cpu %5s µs/req  conns new %s open %s  errors %d%s\n",
					m, c, t.Name, r.rps(), r.p50().Microseconds(), r.p99().Microseconds(), cpuCell(r),
					connCell(r.conns.Accepted, r.conns.AcceptedBy), connCell(r.conns.Open, r.conns.OpenBy), r.res.Errs, spansNote(r))
				if r.res.Errs > 0 {
					fmt.Fprintf(progress, "  last error: %s\n", r.res.LastErr)
				}
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
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

func cpuCell(r row) string {
	if r.target == targets.Direct {
		return "—"
	}
	return fmt.Sprintf("%.1f", float64(r.cpuPerReq().Nanoseconds())/1e3)
}

// loadTable is the side-by-side table: one line per (mode, concurrency,
// target), with p50 also as the latency added over direct.
func loadTable(rows []row) string {
	direct := map[string]time.Duration{}
	for _, r := range rows {
		if r.target == targets.Direct {
			direct[fmt.Sprint(r.mode, r.conc)] = r.p50()
		}
	}
	header := []string{"mode", "conc", "target", "req/s", "p50 µs", "p99 µs", "+p50 vs direct µs", "CPU µs/req", "syscalls/req", "ctx sw/req", "RSS MB", "new conns", "open conns", "errors"}
	var cells [][]string
	for _, r := range rows {
		added, rss, sys, csw := "—", "—", "—", "—"
		if r.counts != nil {
			sys, csw = fmt.Sprintf("%.1f", r.perReq(r.counts.Syscalls)), fmt.Sprintf("%.2f", r.perReq(r.counts.ContextSwitches))
		}
		if d, ok := direct[fmt.Sprint(r.mode, r.conc)]; ok && r.target != targets.Direct {
			added = strconv.FormatInt((r.p50() - d).Microseconds(), 10)
		}
		if r.target != targets.Direct {
			rss = fmt.Sprintf("%.1f", float64(r.rss)/(1<<20))
		}
		cells = append(cells, []string{string(r.mode), strconv.Itoa(r.conc), r.target,
			fmt.Sprintf("%.0f", r.rps()), strconv.FormatInt(r.p50().Microseconds(), 10),
			strconv.FormatInt(r.p99().Microseconds(), 10), added, cpuCell(r), sys, csw, rss,
			connCell(r.conns.Accepted, r.conns.AcceptedBy), connCell(r.conns.Open, r.conns.OpenBy), strconv.Itoa(r.res.Errs)})
	}
	return markdownTable(header, cells, map[int]bool{1: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true, 10: true, 11: true, 12: true, 13: true})
}

// latencyTable is the latency each proxy adds: its percentiles minus
// direct's in the same (mode, concurrency), of whole requests and, for
// streams, of the time to the first event (TTFT). At concurrency 1 this
// is the figure published comparisons of gateways quote.
func latencyTable(rows []row) string {
	direct := map[string]row{}
	for _, r := range rows {
		if r.target == targets.Direct {
			direct[fmt.Sprint(r.mode, r.conc)] = r
		}
	}
	if len(direct) == 0 {
		return ""
	}
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }
	header := []string{"mode", "conc", "target", "p50 µs", "p99 µs", "+p50 µs", "+p99 µs", "TTFT p50 µs", "TTFT p99 µs", "+TTFT p50 µs", "+TTFT p99 µs"}
	var cells [][]string
	for _, r := range rows {
		d, ok := direct[fmt.Sprint(r.mode, r.conc)]
		if !ok {
			continue
		}
		c := []string{string(r.mode), strconv.Itoa(r.conc), r.target, us(r.p50()), us(r.p99()), "—", "—", "—", "—", "—", "—"}
		if r.target != targets.Direct {
			c[5], c[6] = us(r.p50()-d.p50()), us(r.p99()-d.p99())
		}
		if r.mode == load.Stream {
			t50, t99 := load.Percentile(r.res.TTFT, 0.50), load.Percentile(r.res.TTFT, 0.99)
			c[7], c[8] = us(t50), us(t99)
			if r.target != targets.Direct {
				c[9] = us(t50 - load.Percentile(d.res.TTFT, 0.50))
				c[10] = us(t99 - load.Percentile(d.res.TTFT, 0.99))
			}
		}
		cells = append(cells, c)
	}
	return "\nAdded latency (this target minus direct, same mode and concurrency):\n\n" +
		markdownTable(header, cells, map[int]bool{1: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true, 10: true})
}

// summary compares llmrouter with its two yardsticks: CPU per request
// against nginx, p50 at concurrency 1 against the bare httputil proxy;
// and llmrouter+tracing with llmrouter: what tracing adds.
func summary(rows []row) string {
	find := func(m load.Mode, c int, name string) (row, bool) {
		for _, r := range rows {
			if r.mode == m && r.conc == c && r.target == name {
				return r, true
			}
		}
		return row{}, false
	}
	var b strings.Builder
	for _, r := range rows {
		if r.target == targets.RouterTracing {
			if u, ok := find(r.mode, r.conc, targets.Router); ok && u.cpuPerReq() > 0 && u.rps() > 0 {
				fmt.Fprintf(&b, "- %s c=%d: tracing on adds %+.1f µs CPU/request to llmrouter (%s vs %s µs, %.2f×), req/s %+.0f%%, p50 %+d µs, p99 %+d µs\n",
					r.mode, r.conc, float64((r.cpuPerReq()-u.cpuPerReq()).Nanoseconds())/1e3, cpuCell(r), cpuCell(u),
					float64(r.cpuPerReq())/float64(u.cpuPerReq()), 100*(r.rps()/u.rps()-1),
					(r.p50() - u.p50()).Microseconds(), (r.p99() - u.p99()).Microseconds())
			}
			continue
		}
		if r.target == targets.RouterBase {
			if u, ok := find(r.mode, r.conc, targets.Router); ok && r.cpuPerReq() > 0 {
				fmt.Fprintf(&b, "- %s c=%d: llmrouter vs %s: CPU/request %.2f× (%s vs %s µs)%s, p50 %+d µs, p99 %+d µs\n",
					r.mode, r.conc, targets.RouterBase, float64(u.cpuPerReq())/float64(r.cpuPerReq()), cpuCell(u), cpuCell(r),
					countsDiff(u, r), (u.p50() - r.p50()).Microseconds(), (u.p99() - r.p99()).Microseconds())
			}
			continue
		}
		if r.target != targets.Router {
			continue
		}
		if n, ok := find(r.mode, r.conc, targets.Nginx); ok && n.cpuPerReq() > 0 {
			fmt.Fprintf(&b, "- %s c=%d: llmrouter CPU/request %.2f× nginx's (%s vs %s µs)\n", r.mode, r.conc,
				float64(r.cpuPerReq())/float64(n.cpuPerReq()), cpuCell(r), cpuCell(n))
		}
		if h, ok := find(r.mode, r.conc, targets.HTTPUtil); ok && r.conc == 1 {
			fmt.Fprintf(&b, "- %s c=1: llmrouter p50 minus httputil p50: %+d µs\n", r.mode, (r.p50() - h.p50()).Microseconds())
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n" + b.String()
}

// countsDiff is ", syscalls/req A vs B, ctx sw/req A vs B" when both rows
// were counted.
func countsDiff(a, b row) string {
	if a.counts == nil || b.counts == nil {
		return ""
	}
	return fmt.Sprintf(", syscalls/req %.1f vs %.1f, ctx sw/req %.2f vs %.2f",
		a.perReq(a.counts.Syscalls), b.perReq(b.counts.Syscalls), a.perReq(a.counts.ContextSwitches), b.perReq(b.counts.ContextSwitches))
}
