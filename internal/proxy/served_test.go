package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/h1server"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/recent"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// servedUpstream answers every request on each connection with the bench's
// JSON answer and OpenAI's rate-limit headers, as the rig's fake upstream
// does, allocating nothing per request: the benchmark's allocations are
// the router's.
func servedUpstream(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	out := []byte("HTTP/1.1 200 OK\r\nX-Ratelimit-Limit-Requests: 100000000\r\nX-Ratelimit-Limit-Tokens: 10000000000\r\n" +
		"X-Ratelimit-Remaining-Requests: 99999999\r\nX-Ratelimit-Remaining-Tokens: 9999999000\r\n" +
		"X-Ratelimit-Reset-Requests: 1ms\r\nX-Ratelimit-Reset-Tokens: 1ms\r\nDate: Mon, 07 Dec 2026 14:00:00 GMT\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(benchAnswer)) + "\r\n\r\n" + benchAnswer)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn // closed at the end: the transport keeps them idle
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Go(func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				for {
					if err := discardMessage(br); err != nil {
						return
					}
					if _, err := nc.Write(out); err != nil {
						return
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String()
}

// discardMessage reads one HTTP/1.1 message with a Content-Length body
// (or none) without allocating.
func discardMessage(br *bufio.Reader) error {
	length := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > 16 && bytes.EqualFold(line[:15], []byte("Content-Length:")) {
			for _, c := range bytes.TrimSpace(line[15:]) {
				length = length*10 + int(c-'0')
			}
		}
	}
	_, err := br.Discard(length)
	return err
}

// BenchmarkPathServed is the plain path as the daemon serves it: a client
// on a kept loopback connection, the API listener's own server
// (internal/h1server), the router, the openai adapter on the lean
// HTTP/1.1 transport (internal/h1) to a fake upstream that allocates
// nothing. Its allocations are the router's whole per-request cost,
// server and transport included, which BenchmarkPath's in-memory client
// and httptest request leave out.
func BenchmarkPathServed(b *testing.B) {
	do := servedPath(b)
	b.ReportAllocs()
	for b.Loop() {
		do()
	}
}

// servedPath sets up BenchmarkPathServed's path and returns one request
// and its answer through it.
func servedPath(tb testing.TB) func() { return servedPathTraced(tb, nil) }

// BenchmarkPathServedTracing is BenchmarkPathServed with tracing off, on
// with nothing sampled, and on at a sample ratio of 0.1 (the bench's), to
// a collector that takes every export: its differences are what tracing
// costs a request as the daemon serves it.
func BenchmarkPathServedTracing(b *testing.B) {
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer col.Close()
	for _, c := range []struct {
		name  string
		ratio float64 // < 0: off
	}{{"off", -1}, {"unsampled", 0}, {"ratio-0.1", 0.1}} {
		b.Run(c.name, func(b *testing.B) {
			var tr *tracing.Tracer
			if c.ratio >= 0 {
				tr = servedTracer(b, col.URL, c.ratio)
			}
			do := servedPathTraced(b, tr)
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				do()
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// servedTracer is a tracer exporting to collector at ratio, shut down
// when tb ends.
func servedTracer(tb testing.TB, collector string, ratio float64) *tracing.Tracer {
	tr, err := tracing.New(tracing.Config{OTLPEndpoint: collector, SampleRatio: ratio}, tracing.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr
}

// servedPathTraced is servedPath with the tracer tr (nil: tracing off).
func servedPathTraced(tb testing.TB, tr *tracing.Tracer) func() {
	pc := provider.Config{Name: "up", BaseURL: servedUpstream(tb) + "/v1", MaxConcurrency: 256}
	a, err := openai.New(openai.Compatible, pc, "", openai.Config{}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "up", Model: "gpt-4o-mini"}}}})
	s, err := Open(routing.Options{Providers: []provider.Descriptor{{Name: "up", Adapter: a, Config: pc}},
		Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30e9}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	if tr != nil {
		s.trace = tr
	}
	return servedOn(tb, s, "Bearer sk-test")
}

// BenchmarkPathServedKeyed is BenchmarkPathServed with the routing
// features the rig's profile runs with on: a named client key with RPM,
// TPM and a budget on a priced model, the provider's own RPM and TPM
// buckets, affinity and the metrics registered. Its difference from
// BenchmarkPathServed is what the router's bookkeeping costs a request.
func BenchmarkPathServedKeyed(b *testing.B) {
	pc := provider.Config{Name: "up", BaseURL: servedUpstream(b) + "/v1", MaxConcurrency: 256, RPM: 1 << 40, TPM: 1 << 50}
	a, err := openai.New(openai.Compatible, pc, "", openai.Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "up", Model: "gpt-4o-mini"}}}})
	key := routing.ClientKey{Named: clientauth.Named{Name: "team", Hash: sha256.Sum256([]byte("sk-team-0123456789abcdef"))},
		Limits: clientkeys.Limits{Models: []string{"m"}, RPM: 1 << 40, TPM: 1 << 50, BudgetUSD: 1e8, BudgetPeriod: "month"}}
	s, err := Open(routing.Options{Providers: []provider.Descriptor{{Name: "up", Adapter: a, Config: pc}},
		Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30e9},
		Routing:   policy.Config{Affinity: affinity.Config{Enabled: true}},
		NamedKeys: []routing.ClientKey{key}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	s.out.KeepRecent(recent.New(512))
	do := servedOn(b, s, "Bearer sk-team-0123456789abcdef")
	b.ReportAllocs()
	for b.Loop() {
		do()
	}
}

// servedOn serves s on the API listener's server and returns one request
// of the bench's, with authorization auth, and its answer on one kept
// connection.
func servedOn(tb testing.TB, s *Server, auth string) func() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &h1server.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, MaxHeaderBytes: 1 << 20}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	req := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n" +
		"Accept: application/json\r\nContent-Type: application/json\r\nUser-Agent: OpenAI/Python 1.99.0\r\nX-Stainless-Lang: python\r\n" +
		"X-Stainless-Package-Version: 1.99.0\r\nX-Stainless-Os: Linux\r\nX-Stainless-Arch: x64\r\nAuthorization: " + auth + "\r\n" +
		"x-stainless-retry-count: 0\r\nContent-Length: " + strconv.Itoa(len(benchReq)) + "\r\n\r\n" + benchReq)
	br := bufio.NewReader(c)
	return func() {
		if _, err := c.Write(req); err != nil {
			tb.Fatal(err)
		}
		line, err := br.ReadSlice('\n')
		if err != nil {
			tb.Fatal(err)
		}
		if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
			tb.Fatalf("status line %q", line)
		}
		if err := discardMessage(br); err != nil {
			tb.Fatal(err)
		}
	}
}
