package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Hostile and broken clients against the real binary (docs/ARCHITECTURE.md,
// "Memory" and "Hostile clients"): no request may crash the process, hold
// memory it has not received, hold a connection past its timeout, or hold
// a provider slot once its client has stopped reading.
func testBinaryHostile(t *testing.T, bin string) {
	t.Run("deep and duplicate bodies", func(t *testing.T) { testHostileBodies(t, bin) })
	t.Run("stalled promised bodies", func(t *testing.T) { testHostileStalledBodies(t, bin) })
	t.Run("silent partial body", func(t *testing.T) { testHostileSilentBody(t, bin) })
	t.Run("non-reading stream", func(t *testing.T) { testHostileNonReadingStream(t, bin) })
}

// rawResponse is what a raw connection read back.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
	// closed: the router closed the connection after the answer.
	closed bool
}

// rawRequest writes head (a request line and headers, without the blank
// line) and body on a new connection, then reads one answer and whether
// the connection is closed after it, within bound.
func rawRequest(t *testing.T, addr, head string, body []byte, bound time.Duration) (rawResponse, time.Duration, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return rawResponse{}, 0, err
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(start.Add(bound))
	if _, err := io.WriteString(c, head+"\r\n\r\n"); err != nil {
		return rawResponse{}, 0, err
	}
	if _, err := c.Write(body); err != nil {
		return rawResponse{}, 0, err
	}
	return readRaw(c, start)
}

// readRaw reads one HTTP answer from c; when it says Connection: close,
// it then waits for the connection to close (EOF) or c's deadline.
func readRaw(c net.Conn, start time.Time) (rawResponse, time.Duration, error) {
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return rawResponse{}, time.Since(start), fmt.Errorf("reading the answer: %w", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return rawResponse{}, time.Since(start), fmt.Errorf("reading the answer's body: %w", err)
	}
	rr := rawResponse{status: resp.StatusCode, header: resp.Header, body: body}
	if resp.Close {
		// EOF, or a reset when the router closed with body bytes of ours
		// unread; a timeout means the connection stayed open.
		_, err = br.ReadByte()
		var ne net.Error
		rr.closed = err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	return rr, time.Since(start), nil
}

// rssBytes is the resident memory of process pid.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// metricValue reads one sample of GET /metrics ("" labels: the series
// without labels).
func (p *routerProc) metricValue(t *testing.T, series string) float64 {
	t.Helper()
	resp, err := p.client.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return -1
}

func chatHead(addr string, length int, extra ...string) string {
	h := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(length)
	for _, e := range extra {
		h += "\r\n" + e
	}
	return h
}

// testHostileBodies: six million '[' (a stack overflow before the fix), a
// repeated "model" key and invalid UTF-8 each get a 400 naming the
// problem; nothing reaches the provider; the router serves on.
func testHostileBodies(t *testing.T, bin string) {
	fake := newBinFake(t, "up", openaiAPI)
	p := startRouter(t, bin, binConfig{providers: []binProvider{{fake: fake, typ: "openai_compatible"}}})
	rssBefore := rssBytes(t, p.cmd.Process.Pid)
	tests := []struct {
		name  string
		body  []byte
		want  string // in error.message
		param string
	}{
		{"deep nesting", bytes.Repeat([]byte("["), 6_000_000), "nests objects and arrays deeper than 256 levels", ""},
		{"deep object", []byte(strings.Repeat(`{"a":`, 300) + "1" + strings.Repeat("}", 300)), "deeper than 256 levels", ""},
		{"duplicate model", []byte(`{"model":"gpt-4o-expensive","model":"m","messages":[{"role":"user","content":"hi"}]}`),
			`repeats the top-level key "model"`, "model"},
		{"escaped duplicate", []byte(`{"model":"m","mod\u0065l":"other","messages":[{"role":"user","content":"hi"}]}`),
			`repeats the top-level key "model"`, "model"},
		{"invalid utf-8", []byte("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}"), "not valid UTF-8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr, _, err := rawRequest(t, p.apiAddr, chatHead(p.apiAddr, len(tt.body)), tt.body, 30*time.Second)
			if err != nil {
				t.Fatalf("%v; router output:\n%s", err, p.stderr)
			}
			if rr.status != http.StatusBadRequest || gjson.GetBytes(rr.body, "error.type").Str != "invalid_request_error" {
				t.Fatalf("got %d %s, want 400 invalid_request_error", rr.status, rr.body)
			}
			if msg := gjson.GetBytes(rr.body, "error.message").Str; !strings.Contains(msg, tt.want) {
				t.Errorf("got message %q, want it to contain %q", msg, tt.want)
			}
			if got := gjson.GetBytes(rr.body, "error.param").Str; got != tt.param {
				t.Errorf("got param %q, want %q", got, tt.param)
			}
		})
	}
	if n := fake.count(false, 0); n != 0 {
		t.Errorf("the provider received %d requests, want none", n)
	}
	if rep, err := p.chatOK(false); err != nil || rep.status != http.StatusOK {
		t.Fatalf("a normal request after the hostile ones: %v %d", err, rep.status)
	}
	grew := rssBytes(t, p.cmd.Process.Pid) - rssBefore
	t.Logf("RSS grew %.1f MiB over the hostile bodies", float64(grew)/(1<<20))
	p.stop()
	p.checkLog()
}

// testHostileStalledBodies: 20 connections declare a 9 MB body, send 1
// KiB and stall. Memory follows the bytes received: RSS grows by far less
// than the 180 MB promised. With a 2 MiB body budget, bodies that would
// pass it get 503 with Retry-After and a closed connection, and once the
// stalled clients are gone the budget is whole again.
func testHostileStalledBodies(t *testing.T, bin string) {
	const (
		stalled  = 20
		promised = 9_000_000
	)
	fake := newBinFake(t, "up", openaiAPI)
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: fake, typ: "openai_compatible"}},
		limits:    "body_read_timeout: 20s",
	})
	pid := p.cmd.Process.Pid
	if rep, err := p.chatOK(false); err != nil || rep.status != http.StatusOK { // warm up
		t.Fatalf("warm-up: %v %d", err, rep.status)
	}
	before := rssBytes(t, pid)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range stalled {
		c, err := net.Dial("tcp", p.apiAddr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, chatHead(p.apiAddr, promised)+"\r\n\r\n"+`{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("x", 1024)); err != nil {
			t.Fatal(err)
		}
	}
	// Every stalled body holds one 4 KiB buffer, charged to the budget.
	if !eventually(10*time.Second, func() bool {
		return p.metricValue(t, "llmrouter_body_buffer_bytes") == stalled*4096
	}) {
		t.Fatalf("llmrouter_body_buffer_bytes = %v, want %d", p.metricValue(t, "llmrouter_body_buffer_bytes"), stalled*4096)
	}
	grew := rssBytes(t, pid) - before
	t.Logf("RSS with %d stalled %d-byte promises: +%.1f MiB", stalled, promised, float64(grew)/(1<<20))
	if grew > 64<<20 {
		t.Errorf("RSS grew %.1f MiB with %d stalled promises, want far less than the %d MB promised", float64(grew)/(1<<20), stalled, stalled*promised/1_000_000)
	}
	// Normal clients are served meanwhile.
	if rep, err := p.chatOK(false); err != nil || rep.status != http.StatusOK {
		t.Fatalf("a normal request beside the stalled ones: %v %d", err, rep.status)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	if !eventually(10*time.Second, func() bool { return p.metricValue(t, "llmrouter_body_buffer_bytes") == 0 }) {
		t.Errorf("body budget not given back after the clients left: %v", p.metricValue(t, "llmrouter_body_buffer_bytes"))
	}
	p.stop()
	p.checkLog()

	// A small budget: bodies that would pass it are refused.
	p = startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: fake, typ: "openai_compatible"}},
		limits:    "max_body_bytes: 1048576, body_buffer_bytes: 2097152, body_read_timeout: 20s",
	})
	// 100 KiB each: a 256 KiB buffer each, so eight fill the 2 MiB
	// budget and a ninth cannot have even its first 4 KiB.
	part := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 100<<10)
	for range 8 {
		c, err := net.Dial("tcp", p.apiAddr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, chatHead(p.apiAddr, 1_000_000)+"\r\n\r\n"+part); err != nil {
			t.Fatal(err)
		}
	}
	if !eventually(10*time.Second, func() bool { return p.metricValue(t, "llmrouter_body_buffer_bytes") == 8*256<<10 }) {
		t.Fatalf("llmrouter_body_buffer_bytes = %v, want %d", p.metricValue(t, "llmrouter_body_buffer_bytes"), 8*256<<10)
	}
	rr, _, err := rawRequest(t, p.apiAddr, chatHead(p.apiAddr, 1_000_000), []byte(part), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	if rr.status != http.StatusServiceUnavailable || rr.header.Get("Retry-After") == "" || !rr.closed ||
		gjson.GetBytes(rr.body, "error.code").Str != "service_unavailable" {
		t.Errorf("over the budget: got %d Retry-After %q closed %v %s, want 503 service_unavailable with Retry-After, connection closed",
			rr.status, rr.header.Get("Retry-After"), rr.closed, rr.body)
	}
	p.stop()
	p.checkLog()
}

// testHostileSilentBody: a body that stops arriving gets 408 and its
// connection is closed within body_read_timeout; with auth on, an unknown
// client's unread body gets 401 and a closed connection at once.
func testHostileSilentBody(t *testing.T, bin string) {
	const readTimeout = time.Second
	fake := newBinFake(t, "up", openaiAPI)
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: fake, typ: "openai_compatible"}},
		limits:    "body_read_timeout: " + readTimeout.String(),
		auth:      true,
	})
	var wg sync.WaitGroup
	const silent = 20
	took := make([]time.Duration, silent)
	errs := make([]error, silent)
	for i := range silent {
		wg.Go(func() {
			rr, d, err := rawRequest(t, p.apiAddr, chatHead(p.apiAddr, 5000, "Authorization: Bearer "+clientKey),
				[]byte(`{"model":"m","mess`), 10*time.Second)
			took[i] = d
			switch {
			case err != nil:
				errs[i] = err
			case rr.status != http.StatusRequestTimeout || !rr.closed || gjson.GetBytes(rr.body, "error.code").Str != "request_timeout":
				errs[i] = fmt.Errorf("got %d closed %v %s, want 408 request_timeout and a closed connection", rr.status, rr.closed, rr.body)
			}
		})
	}
	wg.Wait()
	slowest := time.Duration(0)
	for i := range silent {
		if errs[i] != nil {
			t.Errorf("silent body %d: %v", i, errs[i])
		}
		slowest = max(slowest, took[i])
	}
	t.Logf("%d silent partial bodies answered 408 and closed after at most %s (body_read_timeout %s)", silent, slowest, readTimeout)

	// No key, a body that never comes: 401 and closed, without waiting for it.
	rr, d, err := rawRequest(t, p.apiAddr, chatHead(p.apiAddr, 9_000_000), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rr.status != http.StatusUnauthorized || !rr.closed {
		t.Errorf("unauthenticated unread body: got %d closed %v, want 401 and a closed connection", rr.status, rr.closed)
	}
	t.Logf("unauthenticated client with an unsent 9 MB body: 401 and closed after %s", d)
	if n := fake.count(false, 0); n != 0 {
		t.Errorf("the provider received %d requests, want none", n)
	}
	p.stop()
	p.checkLog()
}

// testHostileNonReadingStream: a client that reads a stream's headers and
// then stops reading, against a provider streaming as fast as it can with
// max_concurrency 1. Within client_write_timeout the stream is cut, the
// provider call cancelled, the slot freed (in_flight 0, another request
// served) and the cut counted.
func testHostileNonReadingStream(t *testing.T, bin string) {
	const writeTimeout = time.Second
	fake := newBinFake(t, "up", openaiAPI)
	open := make(chan struct{})
	close(open)
	fake.setAPI(func(n int, stream bool) binFault {
		if n == 1 {
			return binFault{gate: open, more: 50_000_000}
		}
		return binFault{}
	})
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: fake, typ: "openai_compatible", maxConcurrency: 1}},
		limits:    "client_write_timeout: " + writeTimeout.String(),
	})
	c, err := net.Dial("tcp", p.apiAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := chatBody(true)
	if _, err := io.WriteString(c, chatHead(p.apiAddr, len(body))+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v", err)
	}
	// Stop reading. The slot is held while the router still writes.
	stoppedAt := time.Now()
	freed := eventually(15*time.Second, func() bool {
		ps, err := p.providers()
		return err == nil && len(ps) == 1 && ps[0].InFlight == 0
	})
	if !freed {
		t.Fatalf("the provider slot was not freed while the client did not read")
	}
	t.Logf("slot of a non-reading stream freed %s after the client stopped reading (client_write_timeout %s)",
		time.Since(stoppedAt).Round(10*time.Millisecond), writeTimeout)
	if got := p.metricValue(t, "llmrouter_client_write_timeouts_total"); got != 1 {
		t.Errorf("llmrouter_client_write_timeouts_total = %v, want 1", got)
	}
	if !eventually(5*time.Second, func() bool { return fake.inFlight() == 0 }) {
		t.Errorf("the provider still serves the cut stream: upstream call not cancelled")
	}
	if rep, err := p.chatOK(false); err != nil || rep.status != http.StatusOK {
		t.Fatalf("a request after the cut stream (max_concurrency 1): %v %d", err, rep.status)
	}
	if !strings.Contains(p.stderr.String(), "client stopped reading") {
		t.Errorf("no log line says the client stopped reading:\n%s", p.stderr)
	}
	p.stop()
	p.checkLog()
}
