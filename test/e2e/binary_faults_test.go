package e2e

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// testBinaryConcurrency: max_concurrency 3 on a slow provider (200ms per
// answer) in tier 0, a fast one in tier 1, 20 concurrent clients sending
// two requests each. The slow upstream never has more than 3 calls in
// flight (a full provider is skipped at once: docs/ARCHITECTURE.md,
// "Bulkhead") and every client gets a 200.
func testBinaryConcurrency(t *testing.T, bin string) {
	const (
		maxConcurrency = 3
		clients        = 20
		perClient      = 2
	)
	slow := newBinFake(t, "slow", openaiAPI)
	slow.setAPI(func(int, bool) binFault {
		return binFault{fault: fault{kind: slowFirstToken, delay: 200 * time.Millisecond}}
	})
	backup := newBinFake(t, "backup", anthropicAPI)
	p := startRouter(t, bin, binConfig{providers: []binProvider{
		{fake: slow, typ: "openai_compatible", tier: 0, maxConcurrency: maxConcurrency},
		{fake: backup, typ: "anthropic", tier: 1},
	}})
	var (
		wg       sync.WaitGroup
		failures atomic.Int32
		start    = make(chan struct{})
	)
	for c := range clients {
		wg.Go(func() {
			<-start
			for j := range perClient {
				if _, err := p.chatOK((c+j)%2 == 1); err != nil {
					failures.Add(1)
					t.Errorf("client %d request %d: %v", c, j, err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	p.stop()

	peak, _ := slow.peaks()
	served := slow.count(false, http.StatusOK)
	t.Logf("slow: %d calls, at most %d in flight; backup: %d calls; %d client failures",
		served, peak, backup.count(false, 0), failures.Load())
	if peak > maxConcurrency {
		t.Errorf("the slow upstream had %d calls in flight at once, want at most %d", peak, maxConcurrency)
	}
	if served < maxConcurrency {
		t.Errorf("the slow upstream served %d calls, want %d or more: the scenario tested nothing", served, maxConcurrency)
	}
	if got, want := served+backup.count(false, http.StatusOK), clients*perClient; got != want {
		t.Errorf("the upstreams served %d calls together, want %d (one per request, no retries)", got, want)
	}
}

// testBinaryWireFaults: per dialect, the faulted provider in tier 0
// (first_token_timeout 300ms, timeout 1s) and a healthy one of the other
// dialect in tier 1. A stream cut or reset after its first content event
// ends with that content, one error event and no [DONE], and nobody else
// is called (docs/ARCHITECTURE.md, "Streaming"); a 503 with the dialect's
// error body, a reset connection, a hang, a slow first token, a garbage
// 200 or a garbage event before any content fail over to tier 1 on the
// second attempt ("Classification", "Retries and failover"). A normal
// request between faults shows the faulted provider still serves.
func testBinaryWireFaults(t *testing.T, bin string) {
	same := func(f fault) func(dialect) fault { return func(dialect) fault { return f } }
	rows := []struct {
		name     string
		stream   bool
		fault    func(dialect) fault
		failover bool // else: one error event after the first content
	}{
		{name: "cut after first chunk", stream: true, fault: same(fault{kind: cutStream})},
		{name: "reset after first chunk", stream: true, fault: same(fault{kind: resetStream})},
		{name: "503 with error body", fault: func(d dialect) fault { return serviceUnavailable(d).fault }, failover: true},
		{name: "connection reset", fault: same(fault{kind: reset}), failover: true},
		{name: "hang", fault: same(fault{kind: hang}), failover: true},
		{name: "slow first token", stream: true, fault: same(fault{kind: slowFirstToken, delay: 5 * time.Second}), failover: true},
		{name: "garbage 200 body", fault: same(fault{kind: garbage}), failover: true},
		{name: "garbage 200 stream", stream: true, fault: same(fault{kind: garbage}), failover: true},
		{name: "garbage event before content", stream: true, fault: same(fault{kind: garbageEvent}), failover: true},
	}
	for _, d := range []dialect{openaiAPI, anthropicAPI} {
		t.Run(d.String(), func(t *testing.T) {
			faulted := newBinFake(t, "faulted", d)
			backup := newBinFake(t, "backup", otherDialect(d))
			var pending atomic.Pointer[fault] // the next call's fault; nil: answer
			faulted.setAPI(func(int, bool) binFault {
				if f := pending.Swap(nil); f != nil {
					return binFault{fault: *f}
				}
				return binFault{}
			})
			p := startRouter(t, bin, binConfig{
				providers: []binProvider{
					{fake: faulted, typ: providerType(d), tier: 0, firstToken: 300 * time.Millisecond, timeout: time.Second},
					{fake: backup, typ: providerType(otherDialect(d)), tier: 1},
				},
				// Without adaptive throttling each fault reaches the
				// tier-0 provider, whatever the faults before it did to
				// its accept ratio.
				routing: "adaptive_throttle_k: 0",
				// Each fault fails over to tier 1 on the second attempt;
				// the wait for the better tier is binary_tierwait_test's.
				tierWait: "0s",
			})
			defer p.stop()
			for _, row := range rows {
				t.Run(row.name, func(t *testing.T) {
					before := backup.count(false, 0)
					f := row.fault(d)
					pending.Store(&f)
					rep, err := p.chat(row.stream)
					if err != nil {
						t.Fatalf("request: %v", err)
					}
					if pending.Load() != nil {
						pending.Store(nil)
						t.Fatalf("the faulted provider was not tried first; got %d from %q", rep.status, rep.header.Get("X-LLMRouter-Provider"))
					}
					class, err := check(&rep, row.stream)
					if err != nil {
						t.Fatalf("malformed answer: %v", err)
					}
					if rep.status != http.StatusOK {
						t.Fatalf("got status %d, want 200; body %s", rep.status, rep.body)
					}
					calls := backup.count(false, 0) - before
					who := rep.header.Get("X-LLMRouter-Provider")
					if row.failover {
						if class != completion && class != streamDone {
							t.Errorf("got a %s, want a complete answer; body %q", class, rep.body)
						}
						if got, want := content(rep), backup.text(); got != want {
							t.Errorf("got content %q, want %q", got, want)
						}
						if who != backup.name || attempts(rep) != 2 || rep.header.Get("X-LLMRouter-Degraded") != "true" {
							t.Errorf("got provider %q, attempts %d, degraded %q; want %q, 2, true",
								who, attempts(rep), rep.header.Get("X-LLMRouter-Degraded"), backup.name)
						}
						if calls != 1 {
							t.Errorf("the tier-1 upstream got %d calls, want 1", calls)
						}
					} else {
						if class != streamError {
							t.Errorf("got a %s, want a stream ending in one error event; body %q", class, rep.body)
						}
						if got := content(rep); got != "hello " {
							t.Errorf("got content %q before the error event, want %q", got, "hello ")
						}
						if who != faulted.name || attempts(rep) != 1 {
							t.Errorf("got provider %q, attempts %d; want %q, 1", who, attempts(rep), faulted.name)
						}
						if calls != 0 {
							t.Errorf("the tier-1 upstream got %d calls after the commit point, want 0", calls)
						}
					}
					rep, err = p.chatOK(row.stream)
					if err != nil {
						t.Fatalf("the request after the fault: %v", err)
					}
					if who := rep.header.Get("X-LLMRouter-Provider"); who != faulted.name {
						t.Errorf("the request after the fault was served by %q, want %q", who, faulted.name)
					}
				})
			}
		})
	}
}

// testBinaryDrain: SIGTERM while 5 streams are in flight, each held by
// its upstream after the first content event. /readyz turns 503, new
// connections to the API listener are refused while the streams are still
// open, then, released, every stream completes with [DONE], and the
// process exits 0 within shutdown_timeout (docs/ARCHITECTURE.md, "Reload
// and shutdown").
func testBinaryDrain(t *testing.T, bin string) {
	const (
		streams  = 5
		more     = 5
		shutdown = 10 * time.Second
		bound    = 5 * time.Second
	)
	up := newBinFake(t, "streamer", openaiAPI)
	gate := make(chan struct{})
	started := make(chan struct{}, streams)
	up.setAPI(func(int, bool) binFault {
		return binFault{started: started, gate: gate, more: more, every: 20 * time.Millisecond}
	})
	p := startRouter(t, bin, binConfig{
		providers:       []binProvider{{fake: up, typ: "openai_compatible", tier: 0}},
		shutdownTimeout: shutdown,
	})
	type result struct {
		rep reply
		err error
	}
	results := make(chan result, streams)
	for range streams {
		go func() {
			rep, err := p.chat(true)
			results <- result{rep, err}
		}()
	}
	var released sync.Once
	release := func() { released.Do(func() { close(gate) }) }
	defer release()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for i := range streams {
		select {
		case <-started:
		case <-timer.C:
			t.Fatalf("%d of %d streams reached the upstream within %s", i, streams, bound)
		}
	}

	sigterm := time.Now()
	p.signal(syscall.SIGTERM)
	if !eventually(bound, func() bool { code, err := p.readyz(); return err == nil && code == http.StatusServiceUnavailable }) {
		t.Fatalf("GET /readyz did not answer 503 within %s of SIGTERM", bound)
	}
	if !eventually(bound, func() bool { return connRefused(p.apiAddr) }) {
		t.Fatalf("new connections to the API listener were still accepted %s after SIGTERM", bound)
	}
	if n := up.inFlight(); n != streams {
		t.Errorf("got %d streams in flight when new connections were refused, want %d", n, streams)
	}
	release()
	want := strings.Repeat("hello ", 1+more) + "from " + up.name
	for range streams {
		r := <-results
		if r.err != nil {
			t.Errorf("stream: %v", r.err)
			continue
		}
		class, err := check(&r.rep, true)
		if err != nil {
			t.Errorf("malformed stream: %v", err)
			continue
		}
		if class != streamDone {
			t.Errorf("got a %s, want a stream ending with [DONE]; body %q", class, r.rep.body)
		}
		if got := content(r.rep); got != want {
			t.Errorf("got content %q, want %q", got, want)
		}
	}
	code := p.waitExit(shutdown + exitSlack)
	if took := time.Since(sigterm); took > shutdown {
		t.Errorf("the router exited %s after SIGTERM, want within shutdown_timeout %s", took.Round(time.Millisecond), shutdown)
	}
	if code != 0 {
		t.Errorf("the router exited %d, want 0; output:\n%s", code, p.stderr)
	}
	p.checkLog()
}

// eventually polls cond every 10ms until it holds or bound passes.
func eventually(bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}
