package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// testBinaryWarmRestart: the router restarted on the same state_file
// keeps what it learned that is still true (docs/ARCHITECTURE.md, "Warm
// restart"): an announced empty budget across a SIGTERM, an open breaker
// across a SIGKILL a second after the trip, and nothing of a provider
// whose base_url changed in between.
func testBinaryWarmRestart(t *testing.T, bin string) {
	t.Run("empty budget across SIGTERM", func(t *testing.T) { testWarmBudget(t, bin) })
	t.Run("open breaker across SIGKILL", func(t *testing.T) { testWarmBreaker(t, bin) })
	t.Run("changed base_url starts fresh", func(t *testing.T) { testWarmChanged(t, bin) })
}

// warmRow is the part of a GET /admin/providers row these scenarios read.
type warmRow struct {
	Name             string  `json:"name"`
	State            string  `json:"state"`
	CooldownLeft     float64 `json:"cooldown_left_seconds"`
	ConsecutiveTrips int     `json:"consecutive_trips"`
	BlockedSeconds   float64 `json:"blocked_seconds"`
	RPMLimit         int64   `json:"rpm_limit"`
}

// warmRow returns provider name's row of GET /admin/providers.
func (p *routerProc) warmRow(t *testing.T, name string) warmRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.admin+"/admin/providers", nil)
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("GET /admin/providers: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Providers []warmRow `json:"providers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("decoding /admin/providers: %v", err)
	}
	for _, r := range body.Providers {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("GET /admin/providers has no row for %q", name)
	return warmRow{}
}

// apiCalls returns f's API calls (probes left out), in arrival order.
func apiCalls(f *binFake) []binEvent {
	var out []binEvent
	for _, e := range f.timeline() {
		if !e.probe {
			out = append(out, e)
		}
	}
	return out
}

// testWarmBudget: an OpenAI-compatible provider in tier 0 answers its
// first call 429 with x-ratelimit-remaining-requests: 0 and a reset of
// 60s (no Retry-After), then would serve; a healthy provider is tier 1;
// model "solo" has only the limited one. The router is stopped with
// SIGTERM and started again on the same state_file. Checked
// (docs/ARCHITECTURE.md, "Rate buckets": a request must not reach a
// provider that announced it has no budget left): after the restart the
// limited provider gets no request at all; "m" fails over to the backup
// (200); "solo" gets the router's 429 rate_limit_exceeded with a
// Retry-After of the reset's remainder; /admin/providers shows the block.
func testWarmBudget(t *testing.T, bin string) {
	const reset = 60 * time.Second
	limited := newBinFake(t, "limited", openaiAPI)
	backup := newBinFake(t, "backup", anthropicAPI)
	limited.setAPI(func(n int, _ bool) binFault {
		if n == 1 {
			return binFault{fault: oaiError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
				"Rate limit reached for gpt-test on requests per min (RPM): Limit 10, Used 10, Requested 1.",
				"x-ratelimit-limit-requests", "10", "x-ratelimit-remaining-requests", "0",
				"x-ratelimit-reset-requests", reset.String())}
		}
		return binFault{}
	})
	cfg := binConfig{
		providers: []binProvider{
			{fake: limited, typ: "openai_compatible", tier: 0},
			{fake: backup, typ: "anthropic", tier: 1},
		},
		models:    []binModel{{name: "solo", targets: []binTarget{{provider: "limited", model: "model-of-limited"}}}},
		stateFile: filepath.Join(t.TempDir(), "state.json"),
		logLevel:  "info",
	}
	p := startRouter(t, bin, cfg)
	rep, err := p.send("m", "", false)
	if who, err2 := servedBy(rep, false); err != nil || err2 != nil || who != backup.name {
		t.Fatalf("first request: served by %q (%v %v), want the backup after the 429", who, err, err2)
	}
	if r := p.warmRow(t, limited.name); r.BlockedSeconds < 55 || r.State != "closed" {
		t.Errorf("before the restart: %+v, want closed and blocked for about 60s", r)
	}
	p.stop()
	stopped := time.Now()

	p = startRouter(t, bin, cfg)
	restarted := time.Since(stopped)
	rep, err = p.send("m", "", false)
	if who, err2 := servedBy(rep, false); err != nil || err2 != nil || who != backup.name {
		t.Errorf("first request after the restart: served by %q (%v %v), want the backup", who, err, err2)
	}
	rep, err = p.send("solo", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := routerError(rep, http.StatusTooManyRequests, "rate_limit_exceeded"); err != nil {
		t.Errorf("solo after the restart: %v", err)
	} else if ra := retryAfter(rep); ra < 50 || ra > 60 {
		t.Errorf("solo after the restart: Retry-After %d, want the reset's remainder (50..60)", ra)
	}
	row := p.warmRow(t, limited.name)
	if row.BlockedSeconds < 50 || row.BlockedSeconds > 60 || row.State != "closed" || row.RPMLimit != 10 {
		t.Errorf("after the restart: %+v, want closed, blocked for the rest of the 60s, rpm limit 10", row)
	}
	if len(p.logLines("restored learned state", "providers=2")) != 1 {
		t.Errorf("no restore of both providers in the log:\n%s", p.stderr)
	}
	p.stop()
	if calls := apiCalls(limited); len(calls) != 1 {
		t.Errorf("the limited provider got %d API calls, want only the first (its 429)", len(calls))
	}
	t.Logf("restart took %s; after it the limited provider was blocked %.1fs more; solo got Retry-After %s",
		restarted.Round(time.Millisecond), row.BlockedSeconds, rep.header.Get("Retry-After"))
}

// testWarmBreaker: a provider in tier 0 fails every call with 503 until it
// has been probed; the breaker trips after 3 consecutive failures and
// stays open 4s (no growth); a healthy provider is tier 1. About a second
// after the trip (in the state file within stateSaveDelay, 250ms) the
// router is killed with SIGKILL: no shutdown save. Started again on the
// same file, checked (docs/ARCHITECTURE.md, "Breaker", "Warm restart"):
// the first scrape shows llmrouter_breaker_state 2; the row is open with
// the rest of the cooldown; clients sent every 100ms get 200s from the
// backup and none reaches the provider until a probe, no earlier than the
// cooldown's end, has succeeded; then it serves again.
func testWarmBreaker(t *testing.T, bin string) {
	const (
		cooldown    = 4 * time.Second
		consecutive = 3
		bound       = 20 * time.Second
		slack       = 100 * time.Millisecond // wall-clock rounding and the router's own delay
	)
	flaky := newBinFake(t, "flaky", openaiAPI)
	backup := newBinFake(t, "backup", anthropicAPI)
	var healthy atomic.Bool
	flaky.setAPI(func(int, bool) binFault {
		if healthy.Load() {
			return binFault{}
		}
		return serviceUnavailable(openaiAPI)
	})
	flaky.setProbe(func(int) int {
		healthy.Store(true)
		return http.StatusOK
	})
	cfg := binConfig{
		providers: []binProvider{
			{fake: flaky, typ: "openai_compatible", tier: 0},
			{fake: backup, typ: "anthropic", tier: 1},
		},
		routing: "adaptive_throttle_k: 0\nshed_open_fraction: 1",
		breaker: fmt.Sprintf("failure_threshold: {consecutive: %d, ratio: 0}\n"+
			"cooldown: {failure: %s, rate_limit: %s, timeout: %s, multiplier: 1, max: 10s}", consecutive, cooldown, cooldown, cooldown),
		stateFile: filepath.Join(t.TempDir(), "state.json"),
	}
	p := startRouter(t, bin, cfg)
	for i := range consecutive {
		if _, err := p.chatOK(false); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if r := p.warmRow(t, flaky.name); r.State != "open" {
		t.Fatalf("after %d failures: %+v, want open", consecutive, r)
	}
	if g := p.metricValue(t, `llmrouter_breaker_state{provider="flaky"}`); g != 2 {
		t.Fatalf("after %d failures: breaker_state %v, want 2", consecutive, g)
	}
	calls := apiCalls(flaky)
	if len(calls) != consecutive {
		t.Fatalf("the flaky provider got %d calls, want %d", len(calls), consecutive)
	}
	trip := calls[consecutive-1].end // the router tripped just after this
	time.Sleep(time.Until(trip.Add(time.Second)))
	p.kill()
	killed := time.Now()

	p = startRouter(t, bin, cfg)
	first := p.scrape(t)
	restarted := time.Now()
	if g := p.metricIn(first, `llmrouter_breaker_state{provider="flaky"}`); g != 2 {
		t.Errorf("first scrape after the restart: breaker_state %v, want 2", g)
	}
	row := p.warmRow(t, flaky.name)
	wantLeft := time.Until(trip.Add(cooldown)).Seconds()
	if row.State != "open" || row.ConsecutiveTrips != 1 || row.CooldownLeft > wantLeft+slack.Seconds() || row.CooldownLeft < wantLeft-0.5 {
		t.Errorf("after the restart: %+v, want open, 1 trip, about %.2fs of cooldown left", row, wantLeft)
	}

	served := 0
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; served < 2; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the flaky provider served %d requests within %s of the restart, want 2; probes %d",
				served, bound, flaky.count(true, 0))
		}
		<-tick.C
		rep, err := p.chatOK(i%2 == 1)
		if err != nil {
			t.Errorf("request %d after the restart: %v", i, err)
		} else if rep.header.Get("X-LLMRouter-Provider") == flaky.name {
			served++
		}
	}
	p.stop()

	var probes []binEvent
	for _, e := range flaky.timeline() {
		if e.probe {
			probes = append(probes, e)
		}
	}
	if len(probes) != 1 || probes[0].status != http.StatusOK {
		t.Fatalf("probes %+v, want exactly one, successful", probes)
	}
	if early := trip.Add(cooldown).Sub(probes[0].start); early > slack {
		t.Errorf("the probe came %s before the cooldown's end, want none before it", early.Round(time.Millisecond))
	}
	for i, c := range apiCalls(flaky)[consecutive:] {
		if c.start.Before(probes[0].end) {
			t.Errorf("API call %d reached the provider %s before the probe closed the breaker", consecutive+i+1,
				probes[0].end.Sub(c.start).Round(time.Millisecond))
		}
	}
	t.Logf("killed %s after the trip; restarted in %s with %.2fs of cooldown left; probe %s after the trip",
		killed.Sub(trip).Round(time.Millisecond), restarted.Sub(killed).Round(time.Millisecond), row.CooldownLeft,
		probes[0].start.Sub(trip).Round(time.Millisecond))
}

// testWarmChanged: a provider trips its breaker (60s cooldown) and the
// router is stopped; the operator points the provider's base_url
// elsewhere and starts it again on the same state_file. Checked: the
// provider starts fresh (closed, and it serves the first request), the
// log names it and the changed key, and the unchanged provider still
// takes its state.
func testWarmChanged(t *testing.T, bin string) {
	broken := newBinFake(t, "flaky", openaiAPI)
	broken.setAPI(func(int, bool) binFault { return serviceUnavailable(openaiAPI) })
	backup := newBinFake(t, "backup", anthropicAPI)
	cfg := binConfig{
		providers: []binProvider{
			{fake: broken, typ: "openai_compatible", tier: 0},
			{fake: backup, typ: "anthropic", tier: 1},
		},
		routing:   "adaptive_throttle_k: 0\nshed_open_fraction: 1",
		breaker:   "failure_threshold: {consecutive: 2, ratio: 0}\ncooldown: {failure: 60s, multiplier: 1}",
		stateFile: filepath.Join(t.TempDir(), "state.json"),
		logLevel:  "info",
	}
	p := startRouter(t, bin, cfg)
	for i := range 2 {
		if _, err := p.chatOK(false); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if r := p.warmRow(t, "flaky"); r.State != "open" {
		t.Fatalf("after 2 failures: %+v, want open", r)
	}
	p.stop()

	fixed := newBinFake(t, "flaky", openaiAPI) // same name, another base_url
	cfg.providers[0].fake = fixed
	p = startRouter(t, bin, cfg)
	if r := p.warmRow(t, "flaky"); r.State != "closed" || r.CooldownLeft != 0 || r.ConsecutiveTrips != 0 {
		t.Errorf("after the base_url changed: %+v, want a fresh, closed provider", r)
	}
	if g := p.metricValue(t, `llmrouter_breaker_state{provider="flaky"}`); g != 0 {
		t.Errorf("after the base_url changed: breaker_state %v, want 0", g)
	}
	rep, err := p.chatOK(false)
	if err != nil || rep.header.Get("X-LLMRouter-Provider") != "flaky" {
		t.Errorf("first request after the change: %v, served by %q, want flaky", err, rep.header.Get("X-LLMRouter-Provider"))
	}
	if lines := p.logLines("starts fresh", "provider=flaky", "base_url changed"); len(lines) != 1 {
		t.Errorf("want one log line saying flaky starts fresh because its base_url changed; output:\n%s", p.stderr)
	}
	if len(p.logLines("restored learned state", "providers=1")) != 1 {
		t.Errorf("want the unchanged provider restored; output:\n%s", p.stderr)
	}
	p.stop()
	if n := len(apiCalls(fixed)); n != 1 {
		t.Errorf("the provider at the new base_url got %d calls, want 1", n)
	}
}
