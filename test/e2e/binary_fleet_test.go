package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/redistest"
)

// testBinaryFleet: several router processes sharing one redis-server
// (shared_state; docs/ARCHITECTURE.md, "Fleet") in front of the same
// fake providers, as sidecars of one application are. What an operator
// must see: the fleet acts as one router per provider (one breaker
// threshold, one probe at a time, one budget), and losing Redis costs
// nothing but the sharing. A conversation of the Responses API begun on
// one continues on any other.
func testBinaryFleet(t *testing.T, bin string) {
	t.Run("one breaker and one probe", func(t *testing.T) { testFleetOutage(t, bin) })
	t.Run("one budget", func(t *testing.T) { testFleetBudget(t, bin) })
	t.Run("lost redis", func(t *testing.T) { testFleetLostRedis(t, bin) })
	t.Run("responses across routers", func(t *testing.T) { testFleetResponses(t, bin) })
}

func fleetTop(url string) string {
	// The call timeout is generous: a race-enabled router on two busy
	// cores must not mistake slowness for a lost Redis here.
	return fmt.Sprintf("shared_state: {redis_url: %q, timeout: 500ms}", url)
}

// startFleet starts n routers on c.
func startFleet(t *testing.T, bin string, n int, c binConfig) []*routerProc {
	t.Helper()
	out := make([]*routerProc, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i] = startRouter(t, bin, c) })
	}
	wg.Wait()
	return out
}

// drive sends sequential requests to each router from its own client
// until stop, and returns how many got 200 and the first bad answer.
func drive(routers []*routerProc, until time.Time) (ok int, bad error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range routers {
		wg.Go(func() {
			for time.Now().Before(until) {
				rep, err := p.send("m", "", false)
				mu.Lock()
				switch {
				case err != nil && bad == nil:
					bad = err
				case err == nil && rep.status == http.StatusOK:
					ok++
				case err == nil && bad == nil:
					bad = fmt.Errorf("got %d: %s", rep.status, rep.body)
				}
				mu.Unlock()
				// Paced: a request admitted while the record of another
				// router's failure is on its way to Redis is not the fleet's
				// decision yet; 20ms keeps those rare without starving the
				// scenarios of traffic.
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	return ok, bad
}

// testFleetOutage (measured: without shared_state 20 calls, 16 probes;
// with it 5 calls, 4 probes): four routers, a primary that fails every call and
// every probe for 3.5s and a healthy backup in tier 1. The breaker trips
// after 5 consecutive failures with 1s cooldowns. Today's router without
// shared state sends the dead primary one threshold per replica (20 calls)
// and 3 probes per replica; one fleet must send it about one threshold,
// probe it one at a time, about once per cooldown, and every client gets
// a 200 from the backup.
func testFleetOutage(t *testing.T, bin string) {
	srv := redistest.Start(t)
	primary := newBinFake(t, "primary", openaiAPI)
	backup := newBinFake(t, "backup", openaiAPI)
	const outage = 3500 * time.Millisecond
	start := time.Now()
	primary.setAPI(func(int, bool) binFault {
		if time.Since(start) < outage {
			return serviceUnavailable(openaiAPI)
		}
		return binFault{}
	})
	primary.setProbe(func(int) int {
		if time.Since(start) < outage {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	cfg := binConfig{top: fleetTop(srv.URL()),
		providers: []binProvider{{fake: primary, typ: "openai_compatible", tier: 0}, {fake: backup, typ: "openai_compatible", tier: 1}},
		breaker: `failure_threshold: {consecutive: 5, ratio: 0, window: 60s}
cooldown: {failure: 1s, rate_limit: 1s, timeout: 1s, multiplier: 1, max: 1s}`}
	routers := startFleet(t, bin, 4, cfg)
	start = time.Now()
	ok, bad := drive(routers, start.Add(outage+1500*time.Millisecond))
	if bad != nil {
		t.Errorf("a client got a bad answer: %v", bad)
	}
	failed := primary.count(false, http.StatusServiceUnavailable)
	probes := primary.count(true, 0)
	_, peakProbes := primary.peaks()
	t.Logf("4 routers, 3.5s outage: %d answers, %d calls reached the dead primary, %d probes (peak %d at once)", ok, failed, probes, peakProbes)
	// One threshold (5), plus what the other replicas admitted while the
	// fifth failure's record was on its way to Redis (usually 0 to 3; more
	// on a loaded machine). Replicas counting alone would need a
	// threshold each (20); fewer than two thresholds shows the fleet's.
	if failed < 5 || failed >= 10 {
		t.Errorf("%d calls reached the dead primary, want one fleet threshold (5) plus calls in flight: fewer than 10 (without shared state 20)", failed)
	}
	if peakProbes != 1 {
		t.Errorf("%d probes at once, want 1 (one fleet-wide)", peakProbes)
	}
	if probes < 2 || probes > 5 {
		t.Errorf("%d probes in 3.5s of outage with 1s cooldowns, want about one per cooldown (not one per replica)", probes)
	}
	for i, p := range routers {
		row := p.admin1(t, "primary")
		if !row.Shared || row.State != "closed" {
			t.Errorf("router %d after the outage: primary %s, shared %v; want closed, shared", i, row.State, row.Shared)
		}
	}
	if after := primary.count(false, http.StatusOK); after == 0 {
		t.Error("the recovered primary got no traffic back")
	}
}

// testFleetBudget: a primary allowing 10 requests per 2s window, which it
// announces truthfully in its headers, and a healthy backup. Four routers
// share one budget: the primary answers (almost) no 429, and still gets
// its budget's worth of traffic.
func testFleetBudget(t *testing.T, bin string) {
	srv := redistest.Start(t)
	primary := newBinFake(t, "primary", openaiAPI)
	backup := newBinFake(t, "backup", openaiAPI)
	primary.setLimit(&windowLimit{window: 2 * time.Second, requests: 10, tokens: 1000000, cost: 8})
	cfg := binConfig{top: fleetTop(srv.URL()),
		providers: []binProvider{{fake: primary, typ: "openai_compatible", tier: 0}, {fake: backup, typ: "openai_compatible", tier: 1}}}
	routers := startFleet(t, bin, 4, cfg)
	ok, bad := drive(routers, time.Now().Add(6*time.Second))
	if bad != nil {
		t.Errorf("a client got a bad answer: %v", bad)
	}
	refused := primary.count(false, http.StatusTooManyRequests)
	served := primary.count(false, http.StatusOK)
	t.Logf("4 routers, 10 requests per 2s: %d answers, primary served %d and refused %d with 429", ok, served, refused)
	// A request admitted on one router while another's answer announcing
	// the empty budget is still on its way to Redis can meet a 429: at
	// most about one per 2s window (6s touch four). Without shared state
	// the same run provokes 9 to 15.
	if refused > 4 {
		t.Errorf("the primary refused %d requests with 429, want at most 4, one per window (one fleet spends one budget; without shared state 9 to 15)", refused)
	}
	if served < 20 {
		t.Errorf("the primary served %d in 6s of 10 per 2s, want its budget used (at least 20)", served)
	}
}

// testFleetLostRedis: Redis dies under traffic. Every client still gets a
// 200 at once; the routers say shared_state_up 0, count errors and show
// local rows; when Redis is back they use it again.
func testFleetLostRedis(t *testing.T, bin string) {
	srv := redistest.Start(t)
	primary := newBinFake(t, "primary", openaiAPI)
	cfg := binConfig{top: fleetTop(srv.URL()),
		providers: []binProvider{{fake: primary, typ: "openai_compatible", tier: 0}}}
	routers := startFleet(t, bin, 2, cfg)
	for _, p := range routers {
		if v := p.metricValue(t, "llmrouter_shared_state_up"); v != 1 {
			t.Fatalf("shared_state_up = %v at start with Redis up", v)
		}
	}
	srv.Stop()
	var slowest time.Duration
	for i := range 40 {
		p := routers[i%2]
		rep, err := p.send("m", "", false)
		if err != nil || rep.status != http.StatusOK {
			t.Fatalf("request %d with Redis down: %v %d %s", i, err, rep.status, rep.body)
		}
		slowest = max(slowest, rep.elapsed)
	}
	t.Logf("slowest of 40 requests with Redis down: %s", slowest)
	for i, p := range routers {
		if v := p.metricValue(t, "llmrouter_shared_state_up"); v != 0 {
			t.Errorf("router %d: shared_state_up = %v with Redis down", i, v)
		}
		// The first failed call (an admission, or the once-a-second sync
		// if it came first) switched the router to local state: at most
		// one request waited on the lost Redis.
		errs := 0.0
		for _, op := range []string{"admit", "record", "probe", "sync"} {
			errs += p.metricValue(t, `llmrouter_shared_state_errors_total{op="`+op+`"}`)
		}
		if admit := p.metricValue(t, `llmrouter_shared_state_errors_total{op="admit"}`); errs < 1 || admit > 1 {
			t.Errorf("router %d: shared_state_errors_total %v in all, %v for admit; want at least one, and at most one request that asked the lost Redis", i, errs, admit)
		}
		if row := p.admin1(t, "primary"); row.Shared {
			t.Errorf("router %d: row says shared with Redis down", i)
		}
		if len(p.logLines("shared state unreachable")) == 0 {
			t.Errorf("router %d logged no warning about the lost Redis", i)
		}
	}
	srv.Start()
	for i, p := range routers {
		if !eventually(5*time.Second, func() bool { return p.metricValue(t, "llmrouter_shared_state_up") == 1 }) {
			t.Errorf("router %d: shared_state_up not back to 1 within 5s of Redis's return", i)
		}
		if row := p.admin1(t, "primary"); !row.Shared {
			t.Errorf("router %d: row not shared after Redis came back", i)
		}
	}
}
