package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// The batching defaults: the OpenTelemetry SDK's (its OTEL_BSP_*
// variables override them; the queue stays QueueSize).
const (
	defaultBatchSize = 512
	defaultDelay     = 5 * time.Second
	defaultTimeout   = 10 * time.Second // OTEL_EXPORTER_OTLP_TIMEOUT's default
)

// Retrying a batch the collector could not take now (429, 502, 503,
// 504), within the batch's timeout: the
// first wait, doubling up to the last, each with ±20% jitter; a
// Retry-After names its own.
const (
	firstRetry = 250 * time.Millisecond
	lastRetry  = 5 * time.Second
)

// env is what the OTEL_* variables the exporter honours say
// (docs/ARCHITECTURE.md, "Tracing").
type env struct {
	headers   http.Header
	timeout   time.Duration
	gzip      bool
	tls       *tls.Config // nil: the system's roots, no client certificate
	batchSize int
	delay     time.Duration
}

// readEnv reads the OTLP exporter's variables (a _TRACES_ form wins over
// the general one) and the batch processor's. An invalid value is an
// error that names its variable: a router started with a setting it
// cannot honour says so rather than exporting otherwise.
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is not read: the config's
// endpoint is where spans go.
func readEnv() (env, error) {
	e := env{timeout: defaultTimeout, batchSize: defaultBatchSize, delay: defaultDelay}
	var errs []error
	if name, v := lookup("HEADERS"); v != "" {
		h, err := parseHeaders(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("tracing: %s: %w", name, err))
		}
		e.headers = h
	}
	if name, v := lookup("TIMEOUT"); v != "" {
		if d, err := millis(v); err != nil {
			errs = append(errs, fmt.Errorf("tracing: %s: %w", name, err))
		} else if d > 0 {
			e.timeout = d
		}
	}
	switch name, v := lookup("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		errs = append(errs, fmt.Errorf("tracing: %s: want gzip or none, got %q", name, v))
	}
	tc, err := readTLS()
	if err != nil {
		errs = append(errs, err)
	}
	e.tls = tc
	if v := os.Getenv("OTEL_BSP_SCHEDULE_DELAY"); v != "" {
		if d, err := millis(v); err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("tracing: OTEL_BSP_SCHEDULE_DELAY: want a positive number of milliseconds, got %q", v))
		} else {
			e.delay = d
		}
	}
	if v := os.Getenv("OTEL_BSP_EXPORT_TIMEOUT"); v != "" {
		if d, err := millis(v); err != nil {
			errs = append(errs, fmt.Errorf("tracing: OTEL_BSP_EXPORT_TIMEOUT: %w", err))
		} else if d > 0 {
			e.timeout = min(e.timeout, d)
		}
	}
	if v := os.Getenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("tracing: OTEL_BSP_MAX_EXPORT_BATCH_SIZE: want a positive integer, got %q", v))
		} else {
			e.batchSize = min(n, QueueSize)
		}
	}
	return e, errors.Join(errs...)
}

// lookup is OTEL_EXPORTER_OTLP_TRACES_{key} if set, else
// OTEL_EXPORTER_OTLP_{key}, and the name of the one it read.
func lookup(key string) (name, value string) {
	name = "OTEL_EXPORTER_OTLP_TRACES_" + key
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return name, v
	}
	name = "OTEL_EXPORTER_OTLP_" + key
	return name, strings.TrimSpace(os.Getenv(name))
}

// millis reads a whole number of milliseconds.
func millis(v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a whole number of milliseconds, got %q", v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// parseHeaders reads OTEL_EXPORTER_OTLP_HEADERS' form:
// key1=value1,key2=value2, values percent-encoded.
func parseHeaders(v string) (http.Header, error) {
	h := http.Header{}
	for _, kv := range strings.Split(v, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return nil, fmt.Errorf("want key=value pairs separated by commas, got an entry %q", strings.TrimSpace(kv))
		}
		dv, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil || strings.ContainsAny(dv, "\r\n") {
			return nil, fmt.Errorf("the value of %s is not a valid percent-encoded header value", k)
		}
		h.Add(k, dv)
	}
	return h, nil
}

// readTLS reads the collector's CA and the client's certificate and key
// (OTEL_EXPORTER_OTLP_(TRACES_)CERTIFICATE, _CLIENT_CERTIFICATE,
// _CLIENT_KEY): nil when none is set.
func readTLS() (*tls.Config, error) {
	caName, ca := lookup("CERTIFICATE")
	certName, cert := lookup("CLIENT_CERTIFICATE")
	keyName, key := lookup("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("tracing: %s: %w", caName, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tracing: %s: %s holds no PEM certificate", caName, ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("tracing: %s and %s go together: set both or neither", certName, keyName)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tracing: %s, %s: %w", certName, keyName, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// exporter posts export requests to an OTLP/HTTP collector.
type exporter struct {
	url    string
	header http.Header // every post's: content type, user agent, encoding, the env's
	gzip   bool
	client *http.Client
	// zw compresses every batch (its state is about a megabyte: made
	// once). send is only called by the exporter goroutine.
	zw *gzip.Writer
}

func newExporter(u string, e env, version string) (*exporter, error) {
	tr, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("tracing: the default HTTP transport is not an *http.Transport")
	}
	tr = tr.Clone()
	if e.tls != nil {
		tr.TLSClientConfig = e.tls
	}
	tr.MaxIdleConnsPerHost = 2
	h := http.Header{}
	for k, vs := range e.headers {
		h[k] = vs
	}
	h.Set("Content-Type", "application/x-protobuf")
	h.Set("User-Agent", "llmrouter/"+version+" (OTLP/HTTP protobuf exporter)")
	if e.gzip {
		h.Set("Content-Encoding", "gzip")
	}
	return &exporter{url: u, header: h, gzip: e.gzip, client: &http.Client{Transport: tr}}, nil
}

// send posts body (gzipped if configured), retrying the answers the
// OTLP specification calls retryable (429, 502, 503, 504) within ctx. A 2xx answer's partial success
// says how many spans were rejected.
func (e *exporter) send(ctx context.Context, body []byte) (int64, string, error) {
	if e.gzip {
		var buf bytes.Buffer
		buf.Grow(len(body) / 4)
		if e.zw == nil {
			e.zw, _ = gzip.NewWriterLevel(&buf, gzip.BestSpeed) // a valid level: no error
		} else {
			e.zw.Reset(&buf)
		}
		_, _ = e.zw.Write(body) // a bytes.Buffer does not fail
		_ = e.zw.Close()
		body = buf.Bytes()
	}
	wait := firstRetry
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header = e.header.Clone()
		resp, err := e.client.Do(req)
		if err != nil {
			// Not reached, or no answer in time: the batch is dropped
			// (as the OpenTelemetry SDK's exporter does), and the next
			// one tries again.
			return 0, "", err
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		var after time.Duration
		switch c := resp.StatusCode; {
		case c >= 200 && c < 300:
			n, why := rejected(b)
			return n, why, nil
		case c == http.StatusTooManyRequests || c == http.StatusBadGateway ||
			c == http.StatusServiceUnavailable || c == http.StatusGatewayTimeout:
			err = fmt.Errorf("the collector answered %s", resp.Status)
			after = retryAfter(resp.Header.Get("Retry-After"))
		default:
			return 0, "", fmt.Errorf("the collector answered %s", resp.Status)
		}
		if after <= 0 {
			after = time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
			wait = min(2*wait, lastRetry)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < after {
			return 0, "", err // no time left for another try
		}
		t := time.NewTimer(after)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, "", err
		}
	}
}

// retryAfter reads a Retry-After in seconds; 0 when absent or not
// seconds.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
