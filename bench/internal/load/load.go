// Package load is the bench's load generator: closed-loop workers over a
// keep-alive client, whole-answer checks, latency percentiles, and slow
// streams held open.
package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/upstream"
)

// Request bodies. StreamRequest is also what held streams send. The stream asks for the usage chunk itself, so the
// router forwards the body as the client wrote it and every target sees
// the same bytes.
const (
	jsonRequest   = `{"model":"` + upstream.Model + `","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."}],"temperature":0.3,"max_tokens":64}`
	StreamRequest = `{"model":"` + upstream.Model + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."}],"temperature":0.3,"max_tokens":64}`
)

// Key is the client key every request carries (Authorization: Bearer),
// the router's named key "bench" (bench/internal/targets); nginx and the
// bare proxy pass it on, the upstream ignores it. KeySHA256 is its
// SHA-256, as the router's config names it.
const (
	Key       = "sk-llmrouter-bench-0123456789abcdef"
	KeySHA256 = "4c2028e84971afca05b20d8c709d08e346d0a7e0838c247ace2ab9d11026b388"
)

// Mode is non-stream ("json") or stream.
type Mode string

const (
	JSON   Mode = "json"
	Stream Mode = "stream"
)

// Body is the request body of mode m.
func (m Mode) Body() []byte {
	if m == Stream {
		return []byte(StreamRequest)
	}
	return []byte(jsonRequest)
}

// Result is what one closed-loop run measured.
type Result struct {
	OK      int           // requests answered 200 with a whole body
	Errs    int           // transport errors, other statuses, cut bodies
	Elapsed time.Duration // from the first request to the last answer
	Lat     []time.Duration
	// TTFT is, per request, the time from sending it to the answer's
	// first body bytes: for a stream, its first event.
	TTFT    []time.Duration
	LastErr string
}

// NewClient is a keep-alive HTTP/1.1 client with an idle pool larger
// than conc, so a closed loop never opens a connection after its warm-up.
// tlsConfig is for an https target (direct to a TLS upstream), else nil.
func NewClient(conc int, tlsConfig *tls.Config) *http.Client {
	t := &http.Transport{
		MaxIdleConns:        conc + 16,
		MaxIdleConnsPerHost: conc + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSClientConfig:     tlsConfig.Clone(),
		Protocols:           new(http.Protocols),
	}
	t.Protocols.SetHTTP1(true)
	return &http.Client{Transport: t}
}

// Drive runs conc closed-loop workers against url for d: each sends its
// next request when it has read the previous answer to the end. A request
// counts when it ends; none starts after d (or after ctx ends).
func Drive(ctx context.Context, client *http.Client, url string, m Mode, conc int, d time.Duration) Result {
	body := m.Body()
	deadline := time.Now().Add(d)
	results := make([]Result, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Go(func() {
			r := &results[w]
			r.Lat = make([]time.Duration, 0, 4096)
			r.TTFT = make([]time.Duration, 0, 4096)
			var buf bytes.Buffer
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				ttft, err := Once(ctx, client, url, m, body, &buf)
				if err != nil {
					if ctx.Err() == nil {
						r.Errs++
						r.LastErr = err.Error()
					}
					continue
				}
				r.Lat = append(r.Lat, time.Since(t0))
				r.TTFT = append(r.TTFT, ttft)
				r.OK++
			}
		})
	}
	wg.Wait()
	out := Result{Elapsed: time.Since(start)}
	for _, r := range results {
		out.OK += r.OK
		out.Errs += r.Errs
		out.Lat = append(out.Lat, r.Lat...)
		out.TTFT = append(out.TTFT, r.TTFT...)
		if r.LastErr != "" {
			out.LastErr = r.LastErr
		}
	}
	slices.Sort(out.Lat)
	slices.Sort(out.TTFT)
	return out
}

// Once sends one request and reads its whole answer into buf. ttft is
// the time from sending it to the answer's first body bytes.
func Once(ctx context.Context, client *http.Client, url string, m Mode, body []byte, buf *bytes.Buffer) (ttft time.Duration, err error) {
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+Key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf.Reset()
	n, err := firstBytes(resp.Body, buf)
	ttft = time.Since(t0)
	if err == nil && n > 0 {
		_, err = buf.ReadFrom(resp.Body)
	}
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("reading answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	if m == Stream && !bytes.HasSuffix(buf.Bytes(), []byte(upstream.DoneEvent)) {
		return 0, fmt.Errorf("stream without [DONE]: %.200s", buf.Bytes())
	}
	if m == JSON && !bytes.Contains(buf.Bytes(), []byte(`"finish_reason":"stop"`)) {
		return 0, fmt.Errorf("answer without finish_reason: %.200s", buf.Bytes())
	}
	return ttft, nil
}

// firstBytes reads from r into buf until some bytes arrive or r ends.
func firstBytes(r io.Reader, buf *bytes.Buffer) (int, error) {
	buf.Grow(4096)
	p := buf.AvailableBuffer()[:4096]
	for {
		n, err := r.Read(p)
		if n > 0 || err != nil {
			buf.Write(p[:n])
			return n, err
		}
	}
}

// Percentile is the p-quantile (0 < p ≤ 1) of sorted latencies, nearest
// rank; 0 when there are none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
