package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// row is one measured (mode, concurrency, target).
type row struct {
	mode   mode
	conc   int
	target string
	res    loadResult
	cpu    time.Duration // proxy CPU over the run; 0 for direct
	rss    int64         // proxy RSS at the end; 0 for direct
}

func (r row) rps() float64 { return float64(r.res.ok) / r.res.elapsed.Seconds() }
func (r row) p50() time.Duration {
	return percentile(r.res.lat, 0.50)
}
func (r row) p99() time.Duration {
	return percentile(r.res.lat, 0.99)
}

// cpuPerReq is the proxy's CPU time per completed request.
func (r row) cpuPerReq() time.Duration {
	if r.res.ok == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.res.ok)
}

// sanityCheck sends one request of each mode to each target, so a broken
// setup fails before minutes of load.
func sanityCheck(ctx context.Context, targets []target, modes ...mode) error {
	client := newClient(1)
	defer client.CloseIdleConnections()
	var buf bytes.Buffer
	for _, t := range targets {
		for _, m := range modes {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := once(cctx, client, t.url, m, m.body(), &buf)
			cancel()
			if err != nil {
				return fmt.Errorf("sanity check of %s (%s): %w", t.name, m, err)
			}
		}
	}
	return nil
}

// measureAll runs every (mode, concurrency) against every target in turn,
// interleaving targets so slow drift of a shared machine spreads over all.
func measureAll(ctx context.Context, o options, targets []target, progress io.Writer) ([]row, error) {
	if err := sanityCheck(ctx, targets, modeJSON, modeStream); err != nil {
		return nil, err
	}
	var rows []row
	for _, m := range o.modes {
		for _, c := range o.conc {
			for _, t := range targets {
				r, err := measure(ctx, o, t, m, c)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(progress, "%-6s c=%-3d %-9s %8.0f req/s  p50 %6d µs  p99 %6d µs  cpu %5s µs/req  errors %d\n",
					m, c, t.name, r.rps(), r.p50().Microseconds(), r.p99().Microseconds(), cpuCell(r), r.res.errs)
				if r.res.errs > 0 {
					fmt.Fprintf(progress, "  last error: %s\n", r.res.lastErr)
				}
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

// measure warms up, then drives the load for o.duration with the proxy's
// CPU read around it.
func measure(ctx context.Context, o options, t target, m mode, c int) (row, error) {
	client := newClient(c)
	defer client.CloseIdleConnections()
	if o.warmup > 0 {
		drive(ctx, client, t.url, m, c, o.warmup)
	}
	var before usage
	var err error
	if t.proc != nil {
		if before, err = groupUsage(t.proc.pid()); err != nil {
			return row{}, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	res := drive(ctx, client, t.url, m, c, o.duration)
	if err := ctx.Err(); err != nil {
		return row{}, fmt.Errorf("interrupted: %w", err)
	}
	r := row{mode: m, conc: c, target: t.name, res: res}
	if t.proc != nil {
		after, err := groupUsage(t.proc.pid())
		if err != nil || t.proc.exited() {
			return row{}, fmt.Errorf("%s died during the run (%v)", t.name, err)
		}
		r.cpu, r.rss = after.cpu-before.cpu, after.rss
	}
	return r, nil
}

func cpuCell(r row) string {
	if r.target == nameDirect {
		return "—"
	}
	return fmt.Sprintf("%.1f", float64(r.cpuPerReq().Nanoseconds())/1e3)
}

// loadTable is the side-by-side table: one line per (mode, concurrency,
// target), with p50 also as the latency added over direct.
func loadTable(rows []row) string {
	direct := map[string]time.Duration{}
	for _, r := range rows {
		if r.target == nameDirect {
			direct[fmt.Sprint(r.mode, r.conc)] = r.p50()
		}
	}
	header := []string{"mode", "conc", "target", "req/s", "p50 µs", "p99 µs", "+p50 vs direct µs", "CPU µs/req", "RSS MB", "errors"}
	var cells [][]string
	for _, r := range rows {
		added, rss := "—", "—"
		if d, ok := direct[fmt.Sprint(r.mode, r.conc)]; ok && r.target != nameDirect {
			added = strconv.FormatInt((r.p50() - d).Microseconds(), 10)
		}
		if r.target != nameDirect {
			rss = fmt.Sprintf("%.1f", float64(r.rss)/(1<<20))
		}
		cells = append(cells, []string{string(r.mode), strconv.Itoa(r.conc), r.target,
			fmt.Sprintf("%.0f", r.rps()), strconv.FormatInt(r.p50().Microseconds(), 10),
			strconv.FormatInt(r.p99().Microseconds(), 10), added, cpuCell(r), rss, strconv.Itoa(r.res.errs)})
	}
	return markdownTable(header, cells, map[int]bool{1: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true})
}

// summary compares llmrouter with its two yardsticks: CPU per request
// against nginx, p50 at concurrency 1 against the bare httputil proxy.
func summary(rows []row) string {
	find := func(m mode, c int, name string) (row, bool) {
		for _, r := range rows {
			if r.mode == m && r.conc == c && r.target == name {
				return r, true
			}
		}
		return row{}, false
	}
	var b strings.Builder
	for _, r := range rows {
		if r.target != nameRouter {
			continue
		}
		if n, ok := find(r.mode, r.conc, nameNginx); ok && n.cpuPerReq() > 0 {
			fmt.Fprintf(&b, "- %s c=%d: llmrouter CPU/request %.2f× nginx's (%s vs %s µs)\n", r.mode, r.conc,
				float64(r.cpuPerReq())/float64(n.cpuPerReq()), cpuCell(r), cpuCell(n))
		}
		if h, ok := find(r.mode, r.conc, nameHTTPUtil); ok && r.conc == 1 {
			fmt.Fprintf(&b, "- %s c=1: llmrouter p50 minus httputil p50: %+d µs\n", r.mode, (r.p50() - h.p50()).Microseconds())
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n" + b.String()
}
