package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Request bodies. The stream asks for the usage chunk itself, so the
// router forwards the body as the client wrote it and every target sees
// the same bytes.
const (
	jsonRequest   = `{"model":"` + benchModel + `","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."}],"temperature":0.3,"max_tokens":64}`
	streamRequest = `{"model":"` + benchModel + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."}],"temperature":0.3,"max_tokens":64}`
)

// mode is non-stream ("json") or stream.
type mode string

const (
	modeJSON   mode = "json"
	modeStream mode = "stream"
)

func (m mode) body() []byte {
	if m == modeStream {
		return []byte(streamRequest)
	}
	return []byte(jsonRequest)
}

// loadResult is what one closed-loop run measured.
type loadResult struct {
	ok      int           // requests answered 200 with a whole body
	errs    int           // transport errors, other statuses, cut bodies
	elapsed time.Duration // from the first request to the last answer
	lat     []time.Duration
	lastErr string
}

// newClient is a keep-alive client with an idle pool larger than conc,
// so a closed loop never opens a connection after its warm-up.
func newClient(conc int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        conc + 16,
		MaxIdleConnsPerHost: conc + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// drive runs conc closed-loop workers against url for d: each sends its
// next request when it has read the previous answer to the end. A request
// counts when it ends; none starts after d (or after ctx ends).
func drive(ctx context.Context, client *http.Client, url string, m mode, conc int, d time.Duration) loadResult {
	body := m.body()
	deadline := time.Now().Add(d)
	results := make([]loadResult, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Go(func() {
			r := &results[w]
			r.lat = make([]time.Duration, 0, 4096)
			var buf bytes.Buffer
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				err := once(ctx, client, url, m, body, &buf)
				if err != nil {
					if ctx.Err() == nil {
						r.errs++
						r.lastErr = err.Error()
					}
					continue
				}
				r.lat = append(r.lat, time.Since(t0))
				r.ok++
			}
		})
	}
	wg.Wait()
	out := loadResult{elapsed: time.Since(start)}
	for _, r := range results {
		out.ok += r.ok
		out.errs += r.errs
		out.lat = append(out.lat, r.lat...)
		if r.lastErr != "" {
			out.lastErr = r.lastErr
		}
	}
	slices.Sort(out.lat)
	return out
}

// once sends one request and reads its whole answer into buf.
func once(ctx context.Context, client *http.Client, url string, m mode, body []byte, buf *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("reading answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	if m == modeStream && !bytes.HasSuffix(buf.Bytes(), []byte(doneEvent)) {
		return fmt.Errorf("stream without [DONE]: %.200s", buf.Bytes())
	}
	if m == modeJSON && !bytes.Contains(buf.Bytes(), []byte(`"finish_reason":"stop"`)) {
		return fmt.Errorf("answer without finish_reason: %.200s", buf.Bytes())
	}
	return nil
}

// percentile is the p-quantile (0 < p ≤ 1) of sorted latencies, nearest
// rank; 0 when there are none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
