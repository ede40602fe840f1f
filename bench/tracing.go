package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/collector"
	"github.com/llmrouter/llmrouter/bench/internal/targets"
)

// parseRatio is -tracing-ratio: a tracing.sample_ratio, from 0 to 1.
func parseRatio(s string) (float64, error) {
	r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
		return 0, fmt.Errorf("%q: want a number from 0 to 1", s)
	}
	return r, nil
}

// The traced router's series the bench reads from its /metrics.
const (
	metricRequests     = "llmrouter_requests_total"
	metricExported     = "llmrouter_tracing_spans_exported_total"
	metricQueueFull    = `llmrouter_tracing_spans_dropped_total{reason="queue_full"}`
	metricExportFailed = `llmrouter_tracing_spans_dropped_total{reason="export_failed"}`
)

// traceCounts is what a traced router and the trace sink had counted at
// one moment, or (sub) between two.
type traceCounts struct {
	sink collector.Stats // what the sink received, from every traced router
	// The router's own counts: requests answered (every series of
	// llmrouter_requests_total), spans the sink took, spans dropped
	// because the export queue was full or an export failed.
	requests, exported, queueFull, exportFailed float64
}

func (c traceCounts) sub(before traceCounts) traceCounts {
	return traceCounts{sink: c.sink.Sub(before.sink), requests: c.requests - before.requests,
		exported: c.exported - before.exported, queueFull: c.queueFull - before.queueFull,
		exportFailed: c.exportFailed - before.exportFailed}
}

// dropped is every span the router dropped.
func (c traceCounts) dropped() float64 { return c.queueFull + c.exportFailed }

// scrapeTimeout bounds one read of a router's /metrics.
const scrapeTimeout = 5 * time.Second

// readTraceCounts reads the sink's counts and the router t's.
func readTraceCounts(ctx context.Context, sink *collector.Handle, t targets.Target) (traceCounts, error) {
	s, err := sink.Stats(ctx)
	if err != nil {
		return traceCounts{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Admin+"/metrics", nil)
	if err != nil {
		return traceCounts{}, err
	}
	// Its own connection, closed after: the router's client connection
	// gauge and pools are left as the load made them.
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return traceCounts{}, fmt.Errorf("reading %s's metrics: %w", t.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return traceCounts{}, fmt.Errorf("reading %s's metrics: status %d", t.Name, resp.StatusCode)
	}
	m, err := parseMetrics(resp.Body)
	if err != nil {
		return traceCounts{}, fmt.Errorf("reading %s's metrics: %w", t.Name, err)
	}
	return traceCounts{sink: s, requests: m.sum(metricRequests), exported: m[metricExported],
		queueFull: m[metricQueueFull], exportFailed: m[metricExportFailed]}, nil
}

// samples are the values of a Prometheus text exposition by series, as
// written: `name` or `name{label="value",...}`.
type samples map[string]float64

// sum adds up every series of the metric name.
func (s samples) sum(name string) float64 {
	var v float64
	for series, x := range s {
		if series == name || strings.HasPrefix(series, name+"{") {
			v += x
		}
	}
	return v
}

// parseMetrics reads the text exposition format as promhttp writes it
// (one sample a line, no timestamps); comments and blank lines are
// skipped.
func parseMetrics(r io.Reader) (samples, error) {
	out := samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// Label values may hold spaces; the value follows the last one.
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics line without a value: %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[strings.TrimSpace(line[:i])] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading metrics: %w", err)
	}
	return out, nil
}

// spansNote is a traced row's addition to its progress line.
func spansNote(r row) string {
	if r.spans == nil {
		return ""
	}
	return fmt.Sprintf("  spans %s/req, dropped %.0f", spansPerReq(r), r.spans.dropped())
}

func spansPerReq(r row) string {
	if r.res.OK == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(r.spans.sink.Spans)/float64(r.res.OK))
}

// traceTable is one line per traced (mode, concurrency, target): what
// the sink received and the router dropped while it was measured, the
// median over the rounds. The exporter sends a batch when 512 spans are
// waiting or every OTEL_BSP_SCHEDULE_DELAY (5 s), so the spans of a
// run's last moments arrive in the next one and spans/req is near, not
// exactly, the spans a request makes.
func traceTable(gs []rounds) string {
	header := []string{"mode", "conc", "target", "req/s", "spans received", "spans/req", "exports", "bytes/span", "dropped: queue full", "dropped: export failed"}
	var cells [][]string
	for _, g := range gs {
		r := g.id()
		if r.spans == nil {
			continue
		}
		sink := func(f func(collector.Stats) int64) int64 {
			return med(g, func(r row) int64 { return f(r.spans.sink) })
		}
		perReq, perSpan := "—", "—"
		if v, ok := medOK(g, func(r row) (float64, bool) { return r.perReq(r.spans.sink.Spans), r.res.OK > 0 }); ok {
			perReq = fmt.Sprintf("%.2f", v)
		}
		if v, ok := medOK(g, func(r row) (int64, bool) {
			return r.spans.sink.Bytes / max(1, r.spans.sink.Spans), r.spans.sink.Spans > 0
		}); ok {
			perSpan = strconv.FormatInt(v, 10)
		}
		cells = append(cells, []string{string(r.mode), strconv.Itoa(r.conc), r.target, fmt.Sprintf("%.0f", g.rps()),
			strconv.FormatInt(sink(func(s collector.Stats) int64 { return s.Spans }), 10), perReq,
			strconv.FormatInt(sink(func(s collector.Stats) int64 { return s.Exports }), 10), perSpan,
			fmt.Sprintf("%.0f", med(g, func(r row) float64 { return r.spans.queueFull })),
			fmt.Sprintf("%.0f", med(g, func(r row) float64 { return r.spans.exportFailed }))})
	}
	if len(cells) == 0 {
		return ""
	}
	return "\n" + markdownTable(header, cells, map[int]bool{1: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true})
}

// traceTotals waits for the traced routers' last batches, then prints
// what each router counted over the whole run (sanity checks and
// warm-ups included) beside what the sink received from all of them.
func traceTotals(ctx context.Context, sink *collector.Handle, ts []targets.Target, stdout, progress io.Writer) error {
	if sink == nil {
		return nil
	}
	fmt.Fprintln(progress, "waiting for the traced router's last spans ...")
	s, err := settle(ctx, sink, scheduleDelay()+time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nThe trace sink received %d spans in %d exports, %.1f MB", s.Spans, s.Exports, float64(s.Bytes)/1e6)
	if s.Errors > 0 {
		fmt.Fprintf(stdout, ", and refused %d exports it could not read", s.Errors)
	}
	fmt.Fprintln(stdout, ".")
	for _, t := range ts {
		if !t.Tracing.On() {
			continue
		}
		c, err := readTraceCounts(ctx, sink, t)
		if err != nil {
			return err
		}
		perReq := 0.0
		if c.requests > 0 {
			perReq = c.exported / c.requests
		}
		fmt.Fprintf(stdout, "- %s (sample_ratio %v): %.0f requests answered, %.0f spans exported (%.2f a request), %.0f dropped (queue full %.0f, export failed %.0f)\n",
			t.Name, t.Tracing.SampleRatio, c.requests, c.exported, perReq, c.dropped(), c.queueFull, c.exportFailed)
	}
	return nil
}

// scheduleDelay is the longest a sampled span waits in the router's batch
// processor before an export: OTEL_BSP_SCHEDULE_DELAY (milliseconds),
// which the router inherits from the bench, else the SDK's 5 s.
func scheduleDelay() time.Duration {
	if ms, err := strconv.Atoi(os.Getenv("OTEL_BSP_SCHEDULE_DELAY")); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return 5 * time.Second
}

// settle polls the sink until it has received nothing for quiet (every
// span ended before has been exported, or dropped), within 3×quiet.
func settle(ctx context.Context, sink *collector.Handle, quiet time.Duration) (collector.Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*quiet)
	defer cancel()
	tick := time.NewTicker(quiet / 10)
	defer tick.Stop()
	last, err := sink.Stats(ctx)
	if err != nil {
		return collector.Stats{}, err
	}
	since := time.Now()
	for {
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("the trace sink still receiving spans after %s: %w", 3*quiet, ctx.Err())
		case now := <-tick.C:
			s, err := sink.Stats(ctx)
			if err != nil {
				return collector.Stats{}, err
			}
			if s != last {
				last, since = s, now
			} else if now.Sub(since) >= quiet {
				return s, nil
			}
		}
	}
}
