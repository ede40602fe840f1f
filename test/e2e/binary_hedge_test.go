package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"testing"
)

// testBinaryHedge is issue 25's tail measurement, reduced: two equally
// healthy providers, one call in ten of each taking 2s to its first token,
// routing.hedge {after: 300ms, max_share: 0.2}; 100 sequential streams
// after a warm-up. Checked (docs/ARCHITECTURE.md, "Hedging"): p95 time to
// first content well under the 2s tail (≤ 800ms), every stream whole,
// upstream calls at most 25% more than requests, every hedge's loser
// cancelled (its call ends long before its 2s) and counted as canceled,
// never as a failure, and X-LLMRouter-Hedged on the answers a hedge gave.
func testBinaryHedge(t *testing.T, bin string) {
	const (
		requests = 100
		warmUp   = 20
		tail     = 2 * time.Second
		after    = 300 * time.Millisecond
	)
	a, b := newBinFake(t, "a", openaiAPI), newBinFake(t, "b", openaiAPI)
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: a, typ: "openai_compatible"}, {fake: b, typ: "openai_compatible"}},
		routing:   fmt.Sprintf("hedge: {after: %s, max_share: 0.2}", after),
	})
	for _, name := range []string{"won", "lost"} {
		if got := p.metricValue(t, `llmrouter_hedges_total{model="m",outcome="`+name+`"}`); got != 0 {
			t.Errorf("hedges_total{outcome=%q} = %v before any request, want 0 (present from start-up)", name, got)
		}
	}
	for i := range warmUp {
		if _, err := p.chatOK(true); err != nil {
			t.Fatalf("warm-up request %d: %v", i, err)
		}
	}
	before := a.count(false, 0) + b.count(false, 0)
	// From now on one call in ten of each provider is slow: a tail that
	// belongs to the request, not the provider.
	for _, f := range []*binFake{a, b} {
		f.setAPI(func(n int, _ bool) binFault {
			if n%10 == 3 {
				return binFault{fault: fault{kind: slowFirstToken, delay: tail}}
			}
			return binFault{}
		})
	}
	ttfts := make([]time.Duration, 0, requests)
	type span struct{ start, first time.Time } // a request's start and first content
	spans := make([]span, 0, requests)
	hedgedAnswers := 0
	for i := range requests {
		start := time.Now()
		finish, err := p.startStream()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		ttfts = append(ttfts, time.Since(start))
		spans = append(spans, span{start, time.Now()})
		rep, err := finish()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if class, err := check(&rep, true); err != nil || class != streamDone || rep.status != http.StatusOK {
			t.Errorf("request %d: %d %s (%v), want a whole stream", i, rep.status, class, err)
		}
		if rep.header.Get("X-LLMRouter-Hedged") == "true" {
			hedgedAnswers++
		}
	}
	slices.Sort(ttfts)
	p95 := ttfts[requests*95/100-1]
	calls := a.count(false, 0) + b.count(false, 0) - before
	extra := float64(calls-requests) / requests
	won := p.metricValue(t, `llmrouter_hedges_total{model="m",outcome="won"}`)
	lost := p.metricValue(t, `llmrouter_hedges_total{model="m",outcome="lost"}`)

	// The losers: of a request's two calls (a hedged one), the one that
	// ended first; the winner streams on after its first content. latest
	// is the longest a loser took to end after the client had the
	// winner's first content (the router waits for the cancelled loser
	// before it commits, so at most 0 plus the moment it takes the
	// client to see the commit).
	var losers int
	latest := -time.Hour
	var events []binEvent
	for _, f := range []*binFake{a, b} {
		for _, e := range f.timeline() {
			if !e.probe {
				events = append(events, e)
			}
		}
	}
	for _, s := range spans {
		var in []binEvent
		for _, e := range events {
			if !e.start.Before(s.start) && !e.start.After(s.first) {
				in = append(in, e)
			}
		}
		if len(in) != 2 {
			continue
		}
		loser := in[0]
		if in[1].end.Before(loser.end) {
			loser = in[1]
		}
		losers++
		latest = max(latest, loser.end.Sub(s.first))
	}
	t.Logf("%d streams: p50 %s, p95 %s, max %s to first content; %d upstream calls (%.0f%% extra); hedges won %g, lost %g; %d answers hedged; %d losers cancelled, the latest %s after the client had the winner's first content",
		requests, ttfts[requests/2-1].Round(time.Millisecond), p95.Round(time.Millisecond), ttfts[requests-1].Round(time.Millisecond),
		calls, 100*extra, won, lost, hedgedAnswers, losers, latest.Round(time.Microsecond))
	failures := map[string]float64{}
	for _, name := range []string{"a", "b"} {
		for _, kind := range []string{"network", "timeout", "server_error", "unknown"} {
			failures[name] += p.metricValue(t, `llmrouter_upstream_requests_total{kind="`+kind+`",provider="`+name+`"}`)
		}
	}
	p.stop()

	if p95 > 800*time.Millisecond {
		t.Errorf("p95 time to first content %s, want at most 800ms (the tail is %s)", p95, tail)
	}
	if extra > 0.25 {
		t.Errorf("%d upstream calls for %d requests (%.0f%% extra), want at most 25%% extra", calls, requests, 100*extra)
	}
	if won+lost == 0 || won+lost > 0.25*(requests+warmUp) {
		t.Errorf("%g hedges, want some and at most max_share of the requests", won+lost)
	}
	if float64(hedgedAnswers) != won {
		t.Errorf("%d answers say X-LLMRouter-Hedged, hedges won %g: want the same", hedgedAnswers, won)
	}
	if float64(losers) != won+lost {
		t.Errorf("%d losers cancelled, want one per hedge (%g)", losers, won+lost)
	}
	if latest > 100*time.Millisecond {
		t.Errorf("a loser ended %s after the client had the winner's first content, want within 100ms", latest)
	}
	for name, n := range failures {
		if n != 0 {
			t.Errorf("%s: %g failures counted, want none: a cancelled loser is canceled", name, n)
		}
	}
}
