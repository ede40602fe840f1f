package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/load"
	"github.com/llmrouter/llmrouter/bench/internal/proc"
	"github.com/llmrouter/llmrouter/bench/internal/targets"
	"github.com/llmrouter/llmrouter/bench/internal/upstream"
)

// streamOpenTimeout bounds how long all streams may take to deliver their
// first event; streamSettle is the pause before measuring, so buffers
// allocated while opening are in place.
const (
	streamOpenTimeout = 60 * time.Second
	streamSettle      = time.Second
)

// streamRow is what o.streams closed-loop stream workers through one
// proxy measured.
type streamRow struct {
	target  string
	opened  int           // workers whose first stream delivered its first event
	idleRSS int64         // before any stream
	rss     int64         // at the end of the hold
	peak    int64         // peak RSS from the first stream to the end of the hold (VmHWM)
	cpu     time.Duration // proxy CPU during the hold
	hold    time.Duration
	whole   int64          // streams read to their [DONE] during the hold
	failed  int64          // streams that failed, from the first opened to the end of the hold
	conns   upstream.Stats // upstream connections: accepted from opening to the end of the hold, open then
}

// holdStreams runs o.streams closed-loop stream workers through each proxy
// in turn, measures it for o.duration, then stops them.
func holdStreams(ctx context.Context, o options, up *upstream.Handle, ts []targets.Target, progress io.Writer) ([]streamRow, error) {
	var rows []streamRow
	for _, t := range ts {
		r, err := holdOne(ctx, o, up, t)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "%-15s %d/%d workers: peak RSS %.1f MB, at the end %.1f MB (idle %.1f MB), CPU %.1f%% of a core, %d whole streams, %d failed, upstream conns new %s open %s\n",
			t.Name, r.opened, o.streams, mb(r.peak), mb(r.rss), mb(r.idleRSS), 100*r.cpu.Seconds()/r.hold.Seconds(), r.whole, r.failed,
			connCell(r.conns.Accepted, r.conns.AcceptedBy), connCell(r.conns.Open, r.conns.OpenBy))
		rows = append(rows, r)
	}
	return rows, nil
}

func holdOne(ctx context.Context, o options, up *upstream.Handle, t targets.Target) (streamRow, error) {
	if err := sanityCheck(ctx, []targets.Target{t}, load.JSON); err != nil {
		return streamRow{}, err
	}
	conns0, err := up.Stats(ctx, t.Name)
	if err != nil {
		return streamRow{}, err
	}
	idle, err := proc.GroupUsage(t.Proc.PID())
	if err != nil {
		return streamRow{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	if err := proc.ResetPeak(t.Proc.PID()); err != nil {
		return streamRow{}, err
	}
	hctx, cancel := context.WithCancel(ctx)
	client := load.NewClient(o.streams, t.TLS)
	var (
		wg     sync.WaitGroup
		counts load.Streams
		opened = make(chan error, o.streams)
	)
	defer func() {
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
	}()
	for range o.streams {
		wg.Go(func() { load.Loop(hctx, client, t.URL, &counts, opened) })
	}
	r := streamRow{target: t.Name, idleRSS: idle.RSS}
	timeout := time.NewTimer(streamOpenTimeout)
	defer timeout.Stop()
	var lastErr error
	for range o.streams {
		select {
		case err := <-opened:
			if err == nil {
				r.opened++
			} else {
				lastErr = err
			}
		case <-timeout.C:
			return streamRow{}, fmt.Errorf("%s: only %d of %d streams opened in %s", t.Name, r.opened, o.streams, streamOpenTimeout)
		case <-ctx.Done():
			return streamRow{}, fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
	if r.opened < o.streams {
		return streamRow{}, fmt.Errorf("%s: %d of %d streams failed to open (last: %w)", t.Name, o.streams-r.opened, o.streams, lastErr)
	}
	if err := pause(ctx, streamSettle); err != nil {
		return streamRow{}, err
	}
	before, err := proc.GroupUsage(t.Proc.PID())
	if err != nil {
		return streamRow{}, fmt.Errorf("%s: %w", t.Name, err)
	}
	w0, t0 := counts.Whole.Load(), time.Now()
	if err := pause(ctx, o.duration); err != nil {
		return streamRow{}, err
	}
	after, err := proc.GroupUsage(t.Proc.PID())
	if err != nil || t.Proc.Exited() {
		return streamRow{}, fmt.Errorf("%s died holding streams (%v)", t.Name, err)
	}
	r.hold = time.Since(t0)
	r.whole, r.failed = counts.Whole.Load()-w0, counts.Failed.Load()
	conns1, err := up.Stats(ctx, t.Name)
	if err != nil {
		return streamRow{}, err
	}
	r.conns = conns1.Sub(conns0)
	r.cpu, r.rss, r.peak = after.CPU-before.CPU, after.RSS, after.Peak
	return r, nil
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// streamsTable reports each proxy's memory with o.streams streams open
// at once and its CPU while relaying them.
func streamsTable(o options, rows []streamRow) string {
	header := []string{"target", "workers", "idle RSS MB", "peak RSS MB", "RSS MB at the end", "KB per stream (peak)", "CPU % of a core", "CPU µs/stream", "whole streams", "failed", "new conns", "open conns"}
	var cells [][]string
	for _, r := range rows {
		perStream := "—"
		if r.whole > 0 {
			perStream = fmt.Sprintf("%.0f", float64(r.cpu.Nanoseconds())/1e3/float64(r.whole))
		}
		cells = append(cells, []string{r.target, strconv.Itoa(r.opened), fmt.Sprintf("%.1f", mb(r.idleRSS)),
			fmt.Sprintf("%.1f", mb(r.peak)), fmt.Sprintf("%.1f", mb(r.rss)), fmt.Sprintf("%.1f", float64(r.peak-r.idleRSS)/1024/float64(o.streams)),
			fmt.Sprintf("%.1f", 100*r.cpu.Seconds()/r.hold.Seconds()), perStream, strconv.FormatInt(r.whole, 10), strconv.FormatInt(r.failed, 10),
			connCell(r.conns.Accepted, r.conns.AcceptedBy), connCell(r.conns.Open, r.conns.OpenBy)})
	}
	return markdownTable(header, cells, map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true, 10: true, 11: true})
}
