package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// streamOpenTimeout bounds how long all streams may take to deliver their
// first chunk; streamSettle is the pause before measuring, so buffers
// allocated while opening are in place.
const (
	streamOpenTimeout = 60 * time.Second
	streamSettle      = time.Second
)

// streamRow is what holding o.streams streams through one proxy measured.
type streamRow struct {
	target  string
	opened  int           // streams that delivered their first chunk
	idleRSS int64         // before any stream
	rss     int64         // with the streams open, after the hold
	cpu     time.Duration // proxy CPU during the hold
	hold    time.Duration
	chunks  int64 // content chunks the clients received during the hold
}

// holdStreams opens o.streams slow streams through each proxy in turn,
// measures it while they are held for o.duration, then closes them.
func holdStreams(ctx context.Context, o options, targets []target, progress io.Writer) ([]streamRow, error) {
	var rows []streamRow
	for _, t := range targets {
		r, err := holdOne(ctx, o, t)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "%-9s %d/%d streams open: RSS %.1f MB (idle %.1f MB), CPU %.1f%% of a core\n",
			t.name, r.opened, o.streams, mb(r.rss), mb(r.idleRSS), 100*r.cpu.Seconds()/r.hold.Seconds())
		rows = append(rows, r)
	}
	return rows, nil
}

func holdOne(ctx context.Context, o options, t target) (streamRow, error) {
	if err := sanityCheck(ctx, []target{t}, modeJSON); err != nil {
		return streamRow{}, err
	}
	idle, err := groupUsage(t.proc.pid())
	if err != nil {
		return streamRow{}, fmt.Errorf("%s: %w", t.name, err)
	}
	hctx, cancel := context.WithCancel(ctx)
	client := newClient(o.streams)
	var (
		wg     sync.WaitGroup
		bytesN atomic.Int64
		opened = make(chan error, o.streams)
	)
	defer func() {
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
	}()
	for range o.streams {
		wg.Go(func() { holdStream(hctx, client, t.url, &bytesN, opened) })
	}
	r := streamRow{target: t.name, idleRSS: idle.rss}
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
			return streamRow{}, fmt.Errorf("%s: only %d of %d streams opened in %s", t.name, r.opened, o.streams, streamOpenTimeout)
		case <-ctx.Done():
			return streamRow{}, fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
	if r.opened < o.streams {
		return streamRow{}, fmt.Errorf("%s: %d of %d streams failed to open (last: %w)", t.name, o.streams-r.opened, o.streams, lastErr)
	}
	if err := pause(ctx, streamSettle); err != nil {
		return streamRow{}, err
	}
	before, err := groupUsage(t.proc.pid())
	if err != nil {
		return streamRow{}, fmt.Errorf("%s: %w", t.name, err)
	}
	b0, t0 := bytesN.Load(), time.Now()
	if err := pause(ctx, o.duration); err != nil {
		return streamRow{}, err
	}
	after, err := groupUsage(t.proc.pid())
	if err != nil || t.proc.exited() {
		return streamRow{}, fmt.Errorf("%s died holding streams (%v)", t.name, err)
	}
	r.hold = time.Since(t0)
	r.chunks = (bytesN.Load() - b0) / int64(len(textEvent))
	r.cpu, r.rss = after.cpu-before.cpu, after.rss
	return r, nil
}

// holdStream opens one stream, reports on opened its first chunk (nil) or
// its failure, then reads until ctx ends or the stream does.
func holdStream(ctx context.Context, client *http.Client, url string, n *atomic.Int64, opened chan<- error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(streamRequest)))
	if err != nil {
		opened <- err
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		opened <- err
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		opened <- fmt.Errorf("status %d: %s", resp.StatusCode, b)
		return
	}
	br := bufio.NewReaderSize(resp.Body, 4096)
	line, err := br.ReadSlice('\n')
	if err != nil || !bytes.HasPrefix(line, []byte("data: ")) {
		opened <- errors.Join(errors.New("no first chunk"), err)
		return
	}
	opened <- nil
	// Until the test cancels ctx (the transport then ends the body).
	_, _ = io.Copy(counter{n}, br)
}

// counter counts bytes written to it.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	return len(b), nil
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

// streamsTable reports each proxy's memory with o.streams open streams
// and its CPU while relaying their chunks.
func streamsTable(o options, rows []streamRow) string {
	header := []string{"target", "streams", "idle RSS MB", "RSS MB with streams", "KB per stream", "CPU % of a core", "CPU µs/chunk"}
	var cells [][]string
	for _, r := range rows {
		perChunk := "—"
		if r.chunks > 0 {
			perChunk = fmt.Sprintf("%.1f", float64(r.cpu.Nanoseconds())/1e3/float64(r.chunks))
		}
		cells = append(cells, []string{r.target, strconv.Itoa(r.opened), fmt.Sprintf("%.1f", mb(r.idleRSS)),
			fmt.Sprintf("%.1f", mb(r.rss)), fmt.Sprintf("%.1f", float64(r.rss-r.idleRSS)/1024/float64(o.streams)),
			fmt.Sprintf("%.1f", 100*r.cpu.Seconds()/r.hold.Seconds()), perChunk})
	}
	return markdownTable(header, cells, map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true})
}
