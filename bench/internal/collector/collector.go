// Package collector is the bench's OTLP/HTTP trace sink: what a traced
// llmrouter target exports its spans to, run in its own process (the
// bench re-executed with -role collector) so that the CPU it spends
// taking spans is counted neither in the router's CPU nor in the fake
// upstream's.
//
// It answers POST /v1/traces as a collector that accepted everything
// does (200, an empty ExportTraceServiceResponse, which is zero bytes of
// protobuf) and keeps nothing: it counts the exports, their bytes as
// sent, and their spans, found by walking the protobuf wire format down
// to each span without decoding one (resource_spans → scope_spans →
// spans). GET /stats serves the counts.
//
// Invariant: the counts only grow; an export the sink could not read (a
// body that is not an ExportTraceServiceRequest, or not one of the
// encodings it takes) is answered 400 and counted under Errors, not
// Exports.
package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/llmrouter/llmrouter/bench/internal/proc"
)

// Role is the -role value the bench re-executes itself with to serve the
// sink on the listener at fd 3.
const Role = "collector"

// TracesPath is where OTLP/HTTP exporters post spans.
const TracesPath = "/v1/traces"

// maxExport bounds one export's body; the router's batches are at most
// 512 spans of at most 32 attributes of 512 bytes, far below it.
const maxExport = 64 << 20

// Stats is what the sink has received since it started.
type Stats struct {
	Exports int64 `json:"exports"` // POSTs to /v1/traces answered 200
	Spans   int64 `json:"spans"`   // spans in those exports
	Bytes   int64 `json:"bytes"`   // their bodies as sent (compressed, if they were)
	Errors  int64 `json:"errors"`  // exports answered 400: unreadable
}

// Sub is what was received between before and s.
func (s Stats) Sub(before Stats) Stats {
	return Stats{Exports: s.Exports - before.Exports, Spans: s.Spans - before.Spans,
		Bytes: s.Bytes - before.Bytes, Errors: s.Errors - before.Errors}
}

// sink counts; its counters are atomics because every export is its own
// request.
type sink struct {
	exports, spans, bytes, errors atomic.Int64
	bufs                          sync.Pool // of *bytes.Buffer
}

func (s *sink) stats() Stats {
	return Stats{Exports: s.exports.Load(), Spans: s.spans.Load(), Bytes: s.bytes.Load(), Errors: s.errors.Load()}
}

// Handler is the sink: POST /v1/traces and GET /stats.
func Handler() http.Handler {
	s := &sink{bufs: sync.Pool{New: func() any { return new(bytes.Buffer) }}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TracesPath, s.export)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.stats())
	})
	return mux
}

func (s *sink) export(w http.ResponseWriter, r *http.Request) {
	buf := s.bufs.Get().(*bytes.Buffer)
	defer s.bufs.Put(buf)
	buf.Reset()
	n, spans, err := read(buf, http.MaxBytesReader(w, r.Body, maxExport), r.Header)
	if err != nil {
		s.errors.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.exports.Add(1)
	s.spans.Add(int64(spans))
	s.bytes.Add(n)
	// The empty ExportTraceServiceResponse: all spans accepted.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// read reads one export's body into buf, undoing its Content-Encoding,
// and returns the bytes it had as sent and the spans in it.
func read(buf *bytes.Buffer, body io.Reader, h http.Header) (sent int64, spans int, err error) {
	if ct := h.Get("Content-Type"); ct != "application/x-protobuf" {
		return 0, 0, fmt.Errorf("content type %q: this sink takes application/x-protobuf only", ct)
	}
	cr := &countingReader{r: body}
	var in io.Reader = cr
	switch ce := h.Get("Content-Encoding"); ce {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(cr)
		if err != nil {
			return 0, 0, fmt.Errorf("reading a gzip export: %w", err)
		}
		defer zr.Close()
		in = zr
	default:
		return 0, 0, fmt.Errorf("content encoding %q: want gzip or none", ce)
	}
	if _, err := buf.ReadFrom(in); err != nil {
		return 0, 0, fmt.Errorf("reading an export: %w", err)
	}
	spans, err = countSpans(buf.Bytes())
	return cr.n, spans, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Field numbers of the OTLP trace messages on the way down to a span
// (opentelemetry-proto, collector/trace/v1 and trace/v1).
const (
	requestResourceSpans protowire.Number = 1 // ExportTraceServiceRequest.resource_spans
	resourceScopeSpans   protowire.Number = 2 // ResourceSpans.scope_spans
	scopeSpans           protowire.Number = 2 // ScopeSpans.spans
)

// countSpans counts the spans of an ExportTraceServiceRequest without
// decoding them: a span costs a tag and a length.
func countSpans(b []byte) (int, error) {
	n := 0
	err := eachField(b, requestResourceSpans, func(rs []byte) error {
		return eachField(rs, resourceScopeSpans, func(ss []byte) error {
			return eachField(ss, scopeSpans, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls fn with the bytes of every length-delimited field num
// of the message b, skipping its other fields.
func eachField(b []byte, num protowire.Number, fn func([]byte) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return fmt.Errorf("decoding an export: %w", protowire.ParseError(l))
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return fmt.Errorf("decoding an export's field %d: %w", n, protowire.ParseError(l))
			}
			if err := fn(v); err != nil {
				return err
			}
			b = b[l:]
			continue
		}
		if l = protowire.ConsumeFieldValue(n, typ, b); l < 0 {
			return fmt.Errorf("decoding an export's field %d: %w", n, protowire.ParseError(l))
		}
		b = b[l:]
	}
	return nil
}

// Serve serves the sink on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener) error {
	return proc.ServeUntil(ctx, &http.Server{Handler: Handler()}, ln)
}

// Handle is a started sink.
type Handle struct {
	Proc    *proc.Proc
	base    string
	control *http.Client
}

// Endpoint is the sink's base URL (http://127.0.0.1:PORT), the
// tracing.otlp_endpoint that makes a router export to it.
func (h *Handle) Endpoint() string { return h.base }

// Close closes the idle connection Stats keeps.
func (h *Handle) Close() { h.control.CloseIdleConnections() }

// Start re-executes the bench (self) as the sink, on a listener it hands
// over as fd 3.
func Start(ctx context.Context, f *proc.Fleet, self string, startTimeout time.Duration) (*Handle, error) {
	lf, addr, err := proc.ListenerFile()
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	p, err := f.Start(Role, self, []string{"-role", Role}, proc.Env(), syscall.SIGKILL, lf)
	if err != nil {
		return nil, err
	}
	h := &Handle{Proc: p, base: "http://" + addr, control: &http.Client{Transport: &http.Transport{}}}
	if err := proc.WaitHTTP(ctx, p, h.base+"/stats", nil, startTimeout); err != nil {
		return nil, err
	}
	return h, nil
}

// statsTimeout bounds one read of the sink's counts.
const statsTimeout = 5 * time.Second

// Stats reads the sink's counts.
func (h *Handle) Stats(ctx context.Context) (Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/stats", nil)
	if err != nil {
		return Stats{}, err
	}
	resp, err := h.control.Do(req)
	if err != nil {
		return Stats{}, fmt.Errorf("reading the trace sink's counts: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Stats{}, fmt.Errorf("reading the trace sink's counts: status %d", resp.StatusCode)
	}
	var s Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return Stats{}, fmt.Errorf("reading the trace sink's counts: %w", err)
	}
	return s, nil
}
