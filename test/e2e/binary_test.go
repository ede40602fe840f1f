package e2e

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestBinary builds the router once and runs each scenario against the
// real binary: a subprocess on loopback ports, configured by a YAML file,
// in front of binFake upstreams, stopped with SIGTERM. The scenarios check
// what the clients got and what the upstreams saw (docs/ARCHITECTURE.md,
// "HTTP surface" and "Behaviour").
func TestBinary(t *testing.T) {
	bin := buildRouter(t)
	t.Run("rate limit", func(t *testing.T) { testBinaryRateLimit(t, bin) })
	t.Run("rate limit races", func(t *testing.T) { testBinaryRateLimitRaces(t, bin) })
	t.Run("breaker and probes", func(t *testing.T) { testBinaryBreaker(t, bin) })
	t.Run("concurrency", func(t *testing.T) { testBinaryConcurrency(t, bin) })
	t.Run("wire faults", func(t *testing.T) { testBinaryWireFaults(t, bin) })
	t.Run("messages wire faults", func(t *testing.T) { testBinaryMessagesFaults(t, bin) })
	t.Run("clean end", func(t *testing.T) { testBinaryCleanEnd(t, bin) })
	t.Run("stream rescue", func(t *testing.T) { testBinaryRescue(t, bin) })
	t.Run("stream rescue refused", func(t *testing.T) { testBinaryRescueRefused(t, bin) })
	t.Run("drain", func(t *testing.T) { testBinaryDrain(t, bin) })
	t.Run("hostile clients", func(t *testing.T) { testBinaryHostile(t, bin) })
	t.Run("echoed input", func(t *testing.T) { testBinaryEchoes(t, bin) })
	t.Run("outages", func(t *testing.T) { testBinaryOutages(t, bin) })
	t.Run("responses api", func(t *testing.T) { testBinaryResponses(t, bin) })
	t.Run("responses api natively", func(t *testing.T) { testBinaryResponsesNative(t, bin) })
	t.Run("responses over websocket", func(t *testing.T) { testBinaryWebSocket(t, bin) })
	t.Run("warm restart", func(t *testing.T) { testBinaryWarmRestart(t, bin) })
	t.Run("fleet", func(t *testing.T) { testBinaryFleet(t, bin) })
	t.Run("bedrock", func(t *testing.T) { testBinaryBedrock(t, bin) })
	t.Run("vertex", func(t *testing.T) { testBinaryVertex(t, bin) })
	t.Run("client keys", func(t *testing.T) { testBinaryKeys(t, bin) })
	t.Run("hedge", func(t *testing.T) { testBinaryHedge(t, bin) })
	t.Run("tracing", func(t *testing.T) { testBinaryTracing(t, bin) })
	t.Run("affinity", func(t *testing.T) { testBinaryAffinity(t, bin) })
	t.Run("output limits", func(t *testing.T) { testBinaryOutputLimits(t, bin) })
	t.Run("bounds", func(t *testing.T) { testBinaryBounds(t, bin) })
	t.Run("tier wait", func(t *testing.T) { testBinaryTierWait(t, bin) })
	t.Run("context windows", func(t *testing.T) { testBinaryContextWindows(t, bin) })
}

// providerType is the config type the binary scenarios use for d.
func providerType(d dialect) string {
	if d == anthropicAPI {
		return "anthropic"
	}
	return "openai_compatible"
}

// otherDialect is the dialect that is not d.
func otherDialect(d dialect) dialect {
	if d == anthropicAPI {
		return openaiAPI
	}
	return anthropicAPI
}

// testBinaryBreaker: a provider failing every call and probe with 503 in
// tier 0, a healthy one in tier 1; breaker: trip after 3 consecutive
// failures, 300ms cooldowns that do not grow. The failing provider
// recovers once it has failed two probes. Sequential clients throughout.
// Checked (docs/ARCHITECTURE.md, "Breaker"): after the trip it gets no
// chat request until a probe succeeded; probes come one at a time, each at
// least a cooldown after the trip or the failed probe before it, and stop
// once one succeeded; chat traffic returns; /admin/providers showed it
// open, then closed; every client got a 200.
func testBinaryBreaker(t *testing.T, bin string) {
	const (
		cooldown     = 300 * time.Millisecond
		consecutive  = 3
		failedProbes = 2
		recovered    = 3 // chat calls the recovered provider must serve
		bound        = 15 * time.Second
	)
	for _, d := range []dialect{openaiAPI, anthropicAPI} {
		t.Run(d.String(), func(t *testing.T) {
			flaky := newBinFake(t, "flaky", d)
			backup := newBinFake(t, "backup", otherDialect(d))
			var healthy atomic.Bool
			flaky.setAPI(func(int, bool) binFault {
				if healthy.Load() {
					return binFault{}
				}
				return serviceUnavailable(d)
			})
			flaky.setProbe(func(n int) int {
				if n <= failedProbes {
					return http.StatusServiceUnavailable
				}
				healthy.Store(true)
				return http.StatusOK
			})
			p := startRouter(t, bin, binConfig{
				providers: []binProvider{
					{fake: flaky, typ: providerType(d), tier: 0},
					{fake: backup, typ: providerType(otherDialect(d)), tier: 1},
				},
				// No adaptive throttling, so each of the first requests
				// reaches the failing provider and the trip comes on the
				// third; no shedding while it is open.
				routing: "adaptive_throttle_k: 0\nshed_open_fraction: 1",
				breaker: fmt.Sprintf("failure_threshold: {consecutive: %d, ratio: 0}\n"+
					"cooldown: {failure: %s, rate_limit: %s, timeout: %s, multiplier: 1, max: 1s}",
					consecutive, cooldown, cooldown, cooldown),
			})

			var states []string // flaky's breaker states as polled, repeats dropped
			deadline := time.Now().Add(bound)
			tick := time.NewTicker(25 * time.Millisecond)
			defer tick.Stop()
			for i, served := 0, 0; served < recovered; i++ {
				if time.Now().After(deadline) {
					t.Fatalf("the failing provider served %d requests within %s of recovering, want %d; states %v; probes %d",
						served, bound, recovered, states, flaky.count(true, 0))
				}
				<-tick.C
				rep, err := p.chatOK(i%2 == 1)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
				} else if rep.header.Get("X-LLMRouter-Provider") == flaky.name {
					served++
				}
				ps, err := p.providers()
				if err != nil {
					t.Fatalf("GET /admin/providers: %v", err)
				}
				for _, s := range ps {
					if s.Name == flaky.name && (len(states) == 0 || states[len(states)-1] != s.State) {
						states = append(states, s.State)
					}
				}
			}
			p.stop()

			var chats, probes []binEvent
			for _, e := range flaky.timeline() {
				if e.probe {
					probes = append(probes, e)
				} else {
					chats = append(chats, e)
				}
			}
			if len(chats) < consecutive {
				t.Fatalf("the failing provider got %d chat calls, want %d or more", len(chats), consecutive)
			}
			for i, c := range chats[:consecutive] {
				if c.status != http.StatusServiceUnavailable {
					t.Errorf("chat call %d answered %d, want 503 before the trip", i+1, c.status)
				}
			}
			if n := flaky.count(false, http.StatusServiceUnavailable); n != consecutive {
				t.Errorf("the failing provider answered %d chat calls with 503, want %d: calls reached it after the trip", n, consecutive)
			}
			trip := chats[consecutive-1].end
			if len(probes) != failedProbes+1 {
				t.Errorf("got %d probes, want %d (two failed, one that closed the breaker, none after)", len(probes), failedProbes+1)
			}
			okAt := time.Time{}
			last := trip
			for i, pr := range probes {
				if gap := pr.start.Sub(last); gap < cooldown {
					t.Errorf("probe %d came %s after the trip or the failed probe before it, want at least the cooldown %s",
						i+1, gap.Round(time.Millisecond), cooldown)
				}
				if pr.status == http.StatusOK && okAt.IsZero() {
					okAt = pr.end
				}
				last = pr.end
			}
			if _, peak := flaky.peaks(); peak != 1 {
				t.Errorf("got at most %d probes in flight at once, want 1", peak)
			}
			if okAt.IsZero() {
				t.Fatalf("no probe succeeded")
			}
			for i, c := range chats[consecutive:] {
				if !c.start.After(okAt) {
					t.Errorf("chat call %d arrived %s before the first successful probe ended, want none while the breaker is open",
						consecutive+i+1, okAt.Sub(c.start).Round(time.Millisecond))
				}
			}
			if got := flaky.count(false, http.StatusOK); got < recovered {
				t.Errorf("the recovered provider answered %d chat calls, want %d or more", got, recovered)
			}
			if !statesOpenThenClosed(states) {
				t.Errorf("got breaker states %v in /admin/providers, want closed, then open, then closed at the end", states)
			}
			t.Logf("states %v; %d chat calls, %d probes", states, len(chats), len(probes))
		})
	}
}

// statesOpenThenClosed reports whether states begins closed, shows open
// later, and ends closed.
func statesOpenThenClosed(states []string) bool {
	if len(states) < 3 || states[0] != "closed" || states[len(states)-1] != "closed" {
		return false
	}
	for _, s := range states[1 : len(states)-1] {
		if s == "open" {
			return true
		}
	}
	return false
}
