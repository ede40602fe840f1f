package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// testBinaryOutages: what an operator sees when providers fail in the ways
// real ones do (docs/ARCHITECTURE.md, "Breaker", "Rate buckets",
// "Classification", "Selection", "Degradation and shedding", "Metrics"):
// a full outage, a rate limit that names its reset, a target model that
// does not exist, a provider out of quota, a failure domain, and the
// metrics an alert needs from the first scrape on.
func testBinaryOutages(t *testing.T, bin string) {
	t.Run("full outage", func(t *testing.T) { testOutageFull(t, bin) })
	t.Run("rate limit with a reset", func(t *testing.T) { testOutageRateLimit(t, bin) })
	t.Run("missing target", func(t *testing.T) { testOutageMissingTarget(t, bin) })
	t.Run("quota", func(t *testing.T) { testOutageQuota(t, bin) })
	t.Run("failure domains", func(t *testing.T) { testOutageDomains(t, bin) })
	t.Run("failure domains by health", func(t *testing.T) { testOutageDomainsFailing(t, bin) })
	t.Run("metrics from the first scrape and after a reload", func(t *testing.T) { testOutageMetrics(t, bin) })
}

// send posts one chat completion for model through the router, with
// X-LLMRouter-Priority when priority is not "", and reads the whole
// answer; a transport or read error is returned.
func (p *routerProc) send(model, priority string, stream bool) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	body := `{"model":` + strconv.Quote(model) + `,"messages":[{"role":"user","content":"hi"}],"max_tokens":16`
	if stream {
		body += `,"stream":true`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.api+"/v1/chat/completions", strings.NewReader(body+"}"))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if priority != "" {
		req.Header.Set("X-LLMRouter-Priority", priority)
	}
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("sending: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	rep := reply{status: resp.StatusCode, header: resp.Header, body: b, elapsed: time.Since(start)}
	if err != nil {
		return rep, fmt.Errorf("reading the body (%d bytes so far %q): %w", len(b), b, err)
	}
	return rep, nil
}

// servedBy checks rep is a complete, well-formed 200 answer and returns
// the provider that served it.
func servedBy(rep reply, stream bool) (string, error) {
	class, err := check(&rep, stream)
	if err != nil {
		return "", err
	}
	if rep.status != http.StatusOK || (class != completion && class != streamDone) {
		return "", fmt.Errorf("got %d %s, want a complete 200 answer: %s", rep.status, class, rep.body)
	}
	return rep.header.Get("X-LLMRouter-Provider"), nil
}

// routerError checks rep is a well-formed router error with status and
// error.code code.
func routerError(rep reply, status int, code string) error {
	class, err := check(&rep, false)
	if err != nil {
		return err
	}
	if class != errorReply || rep.status != status || gjson.GetBytes(rep.body, "error.code").Str != code {
		return fmt.Errorf("got %d %s, want %d with error.code %q", rep.status, rep.body, status, code)
	}
	return nil
}

// retryAfter is rep's Retry-After in whole seconds, -1 when absent or not
// a number.
func retryAfter(rep reply) int {
	n, err := strconv.Atoi(rep.header.Get("Retry-After"))
	if err != nil {
		return -1
	}
	return n
}

// admin1 returns the row of provider name in GET /admin/providers.
func (p *routerProc) admin1(t *testing.T, name string) adminState {
	t.Helper()
	ps, err := p.providers()
	if err != nil {
		t.Fatalf("GET /admin/providers: %v", err)
	}
	for _, s := range ps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("GET /admin/providers has no row for %q: %+v", name, ps)
	return adminState{}
}

// scrape returns the body of GET /metrics.
func (p *routerProc) scrape(t *testing.T) string {
	t.Helper()
	resp, err := p.client.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// samples returns the sample lines of family in a scrape (a histogram's
// _bucket, _sum and _count lines included).
func samples(scrape, family string) []string {
	var out []string
	for l := range strings.SplitSeq(scrape, "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		name := l[:strings.IndexAny(l, "{ ")]
		switch name {
		case family, family + "_bucket", family + "_sum", family + "_count":
			out = append(out, l)
		}
	}
	return out
}

// hasLabel reports whether a sample line has label="value".
func hasLabel(line, label, value string) bool {
	pair := label + "=" + strconv.Quote(value)
	return strings.Contains(line, "{"+pair) || strings.Contains(line, ","+pair)
}

// sampleValue is a sample line's value.
func sampleValue(line string) float64 {
	v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// logLines returns the router's output lines that contain every one of
// parts.
func (p *routerProc) logLines(parts ...string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		for _, part := range parts {
			if !strings.Contains(sc.Text(), part) {
				continue next
			}
		}
		out = append(out, sc.Text())
	}
	return out
}

// testOutageFull: both providers of model "m" fail every API call and
// every probe with 503; the breaker trips after 3 consecutive failures
// (ratio 0.5 over 20 requests in 60s also on, as in the defaults) and
// stays open 1s at a time, each failed probe reopening it. 20 concurrent
// clients send requests from the start of the outage until both providers
// have been probed once (about 1.2s). Checked, ten times over with a
// fresh router each:
//   - both breakers open (llmrouter_breaker_state 2) within a bound;
//   - adaptive throttling never stood in for the breaker: no client got a
//     429 and llmrouter_throttled_requests_total stayed 0 (it rejects
//     nothing below min_requests);
//   - from the moment both were seen open, every client got 503
//     service_unavailable with a Retry-After of at least 1s and at most
//     the cooldown;
//   - a low-priority request then is shed at once (503, counted in
//     llmrouter_shed_requests_total);
//   - no API request reached a provider once it had been probed: the
//     half-open breaker sends the probe, never a real request;
//   - the API requests that reached the dead providers are at most the
//     threshold plus what was in flight when each tripped. Each client has
//     at most one attempt admitted at a time, so that is at most 3 + 20
//     per provider; the measured count is logged.
func testOutageFull(t *testing.T, bin string) {
	const (
		runs        = 10
		clients     = 20
		consecutive = 3
		cooldown    = time.Second
		runFor      = 1200 * time.Millisecond // at least, and 200ms past both first probes
		pace        = 10 * time.Millisecond   // between one client's requests
		openBound   = 5 * time.Second
		probeBound  = 5 * time.Second
		lowBound    = time.Second // "at once", on a loaded machine
	)
	var totals []string
	for run := 1; run <= runs; run++ {
		t.Run(fmt.Sprintf("run %d", run), func(t *testing.T) {
			a := newBinFake(t, "A", openaiAPI)
			b := newBinFake(t, "B", anthropicAPI)
			fakes := []*binFake{a, b}
			for _, f := range fakes {
				d := f.d
				f.setAPI(func(int, bool) binFault { return serviceUnavailable(d) })
				f.setProbe(func(int) int { return http.StatusServiceUnavailable })
			}
			p := startRouter(t, bin, binConfig{
				providers: []binProvider{{fake: a, typ: providerType(a.d)}, {fake: b, typ: providerType(b.d)}},
				breaker: fmt.Sprintf("failure_threshold: {consecutive: %d, ratio: 0.5, min_requests: 20, window: 60s}\n"+
					"cooldown: {failure: %s, rate_limit: %s, timeout: %s, multiplier: 1, max: %s}",
					consecutive, cooldown, cooldown, cooldown, cooldown),
			})

			type sent struct {
				at  time.Time
				rep reply
				err error
			}
			var (
				mu   sync.Mutex
				seen []sent
				wg   sync.WaitGroup
				halt atomic.Bool
			)
			start := time.Now()
			for c := range clients {
				wg.Go(func() {
					for i := 0; !halt.Load(); i++ {
						at := time.Now()
						rep, err := p.send("m", "", (c+i)%2 == 1)
						mu.Lock()
						seen = append(seen, sent{at, rep, err})
						mu.Unlock()
						time.Sleep(pace)
					}
				})
			}
			defer wg.Wait()
			defer halt.Store(true)

			bothOpen := func() bool {
				s := p.scrape(t)
				for _, f := range fakes {
					if v := p.metricIn(s, `llmrouter_breaker_state{provider="`+f.name+`"}`); v != 2 {
						return false
					}
				}
				return true
			}
			if !eventually(openBound, bothOpen) {
				t.Fatalf("llmrouter_breaker_state not 2 for both providers within %s of the outage: A %v, B %v",
					openBound, p.metricValue(t, `llmrouter_breaker_state{provider="A"}`), p.metricValue(t, `llmrouter_breaker_state{provider="B"}`))
			}
			openAt := time.Now()

			lowAt := time.Now()
			low, err := p.send("m", "low", false)
			lowTook := time.Since(lowAt)
			switch {
			case err != nil:
				t.Errorf("low-priority request: %v", err)
			case routerError(low, http.StatusServiceUnavailable, "service_unavailable") != nil:
				t.Errorf("low-priority request with every provider open: %v", routerError(low, http.StatusServiceUnavailable, "service_unavailable"))
			case retryAfter(low) < 1:
				t.Errorf("low-priority request: 503 without a Retry-After of 1s or more (%q)", low.header.Get("Retry-After"))
			case lowTook > lowBound:
				t.Errorf("low-priority request answered after %s, want at once (within %s)", lowTook, lowBound)
			}
			if v := p.metricValue(t, `llmrouter_shed_requests_total{priority="low"}`); v < 1 {
				t.Errorf(`llmrouter_shed_requests_total{priority="low"} = %v after a low-priority request with every provider open, want 1 or more`, v)
			}

			// Traffic goes on until both providers have had a probe and a
			// little after, so a real request let through by a half-open
			// breaker would show.
			probed := func(f *binFake) time.Time {
				for _, e := range f.timeline() {
					if e.probe && !e.end.IsZero() {
						return e.end
					}
				}
				return time.Time{}
			}
			if !eventually(probeBound, func() bool { return !probed(a).IsZero() && !probed(b).IsZero() }) {
				t.Errorf("no probe of each provider within %s of both opening (cooldown %s): A %d, B %d probes",
					probeBound, cooldown, a.count(true, 0), b.count(true, 0))
			}
			stopAt := start.Add(runFor)
			for _, f := range fakes {
				if at := probed(f).Add(200 * time.Millisecond); at.After(stopAt) {
					stopAt = at
				}
			}
			<-time.After(time.Until(stopAt))
			halt.Store(true)
			wg.Wait()
			throttled := p.metricValue(t, `llmrouter_throttled_requests_total{provider="A"}`) + p.metricValue(t, `llmrouter_throttled_requests_total{provider="B"}`)
			p.stop()

			after, n429, bad := 0, 0, 0
			ceil := int(math.Ceil(cooldown.Seconds()))
			for _, s := range seen {
				if s.err != nil {
					t.Errorf("request sent %s into the outage: %v", s.at.Sub(start).Round(time.Millisecond), s.err)
					continue
				}
				if class, err := check(&s.rep, false); err != nil || class != errorReply {
					t.Errorf("request sent %s into the outage: got %d %s (%v), want an error answer", s.at.Sub(start).Round(time.Millisecond), s.rep.status, s.rep.body, err)
					continue
				}
				if s.rep.status == http.StatusTooManyRequests {
					n429++
				}
				if !s.at.After(openAt) {
					continue
				}
				after++
				if err := routerError(s.rep, http.StatusServiceUnavailable, "service_unavailable"); err != nil {
					bad++
					if bad <= 3 {
						t.Errorf("request sent %s after both breakers were seen open: %v", s.at.Sub(openAt).Round(time.Millisecond), err)
					}
				} else if ra := retryAfter(s.rep); ra < 1 || ra > ceil {
					bad++
					if bad <= 3 {
						t.Errorf("503 with Retry-After %q, want whole seconds in [1, %d] (the cooldown)", s.rep.header.Get("Retry-After"), ceil)
					}
				}
			}
			if bad > 3 {
				t.Errorf("%d answers after both breakers were seen open were not 503 service_unavailable with a Retry-After", bad)
			}
			if after < clients {
				t.Errorf("only %d requests were sent after both breakers were seen open, want %d or more: the scenario tested little", after, clients)
			}
			if n429 > 0 || throttled > 0 {
				t.Errorf("%d clients got 429 and %v attempts were throttled locally, want none: adaptive throttling must not stand in for the breaker below min_requests",
					n429, throttled)
			}
			total := 0
			var per []string
			for _, f := range fakes {
				calls, late := 0, 0
				first := probed(f)
				for _, e := range f.timeline() {
					if e.probe {
						continue
					}
					calls++
					if !first.IsZero() && e.start.After(first) {
						late++
					}
				}
				total += calls
				per = append(per, fmt.Sprintf("%s %d (%d probes)", f.name, calls, f.count(true, 0)))
				if calls > consecutive+clients {
					t.Errorf("%d API requests reached %s, want at most %d: the threshold %d plus the %d clients' requests that may have been in flight when it tripped",
						calls, f.name, consecutive+clients, consecutive, clients)
				}
				if late > 0 {
					t.Errorf("%d API requests reached %s after its first probe, want none: an open or half-open breaker lets no real request through", late, f.name)
				}
			}
			t.Logf("run %d: both open %s into the outage; %d requests over %s, %d after both open; API requests that reached the dead providers: %d (%s); low priority shed in %s",
				run, openAt.Sub(start).Round(time.Millisecond), len(seen), time.Since(start).Round(10*time.Millisecond), after, total, strings.Join(per, ", "), lowTook.Round(time.Microsecond))
			totals = append(totals, strconv.Itoa(total))
		})
	}
	t.Logf("API requests that reached the dead providers per run: %s (bound %d = (threshold %d + clients %d) x 2 providers)",
		strings.Join(totals, " "), 2*(consecutive+clients), consecutive, clients)
}

// metricIn reads one sample of a scrape; -1 when absent.
func (p *routerProc) metricIn(scrape, series string) float64 {
	for l := range strings.SplitSeq(scrape, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return -1
}

// testOutageRateLimit: a tier-0 provider answers its first API call 429
// rate_limit_error with Retry-After: 2, then 200s; a tier-1 provider is
// healthy. One request every 100ms for 4s. The breaker is set to trip on
// the first counted failure, so a 429 that named its reset and was counted
// anyway would open it. Checked (docs/ARCHITECTURE.md, "Rate buckets",
// "Breaker"): every client got a 200; no API request reached the limited
// provider before the reset it named; it served again within 1s after it;
// its breaker stayed closed in /admin/providers and /metrics throughout,
// with no transition to open.
func testOutageRateLimit(t *testing.T, bin string) {
	const (
		wait     = 2 * time.Second // the Retry-After
		pace     = 100 * time.Millisecond
		requests = 40
		resume   = time.Second // served again within this after the reset
	)
	limited := newBinFake(t, "limited", openaiAPI)
	backup := newBinFake(t, "backup", anthropicAPI)
	limited.setAPI(func(n int, _ bool) binFault {
		if n == 1 {
			return binFault{fault: oaiError(http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded",
				"Rate limit reached for gpt-test in organization org-test on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 2s.",
				"Retry-After", strconv.Itoa(int(wait.Seconds())))}
		}
		return binFault{}
	})
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{
			{fake: limited, typ: "openai_compatible", tier: 0},
			{fake: backup, typ: "anthropic", tier: 1},
		},
		breaker: "failure_threshold: {consecutive: 1, ratio: 0}",
	})
	tick := time.NewTicker(pace)
	defer tick.Stop()
	var states []string // limited's states in /admin/providers, repeats dropped
	var gauges []float64
	servedAt := map[time.Time]string{}
	for i := range requests {
		<-tick.C
		at := time.Now()
		rep, err := p.send("m", "", i%2 == 1)
		if err == nil {
			var who string
			if who, err = servedBy(rep, i%2 == 1); err == nil {
				servedAt[at] = who
			}
		}
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
		if s := p.admin1(t, limited.name).State; len(states) == 0 || states[len(states)-1] != s {
			states = append(states, s)
		}
		if g := p.metricValue(t, `llmrouter_breaker_state{provider="limited"}`); len(gauges) == 0 || gauges[len(gauges)-1] != g {
			gauges = append(gauges, g)
		}
	}
	opened := p.metricValue(t, `llmrouter_breaker_transitions_total{provider="limited",to="open"}`)
	rateLimited := p.metricValue(t, `llmrouter_upstream_requests_total{kind="rate_limited",provider="limited"}`)
	p.stop()

	var api []binEvent
	for _, e := range limited.timeline() {
		if !e.probe {
			api = append(api, e)
		}
	}
	if len(api) == 0 || api[0].status != http.StatusTooManyRequests {
		t.Fatalf("the limited provider's first API call was not the scripted 429: %+v", api)
	}
	reset := api[0].end.Add(wait) // the router read the 429 after this end: its block ends later
	var next *binEvent
	for i, e := range api[1:] {
		if e.start.Before(reset) {
			t.Errorf("API request %d reached the limited provider %s before the reset it named (Retry-After %s)",
				i+2, reset.Sub(e.start).Round(time.Millisecond), wait)
		} else if next == nil {
			next = &api[1+i]
		}
	}
	switch {
	case next == nil:
		t.Errorf("no API request reached the limited provider after its reset (%d requests over %s)", requests, requests*pace)
	case next.start.Sub(reset) > resume:
		t.Errorf("the limited provider got its next request %s after the reset, want within %s", next.start.Sub(reset).Round(time.Millisecond), resume)
	case next.status != http.StatusOK:
		t.Errorf("the limited provider's first request after the reset answered %d, want 200", next.status)
	}
	fromLimited := 0
	for at, who := range servedAt {
		if who == limited.name && at.After(reset) {
			fromLimited++
		}
	}
	if len(states) != 1 || states[0] != "closed" {
		t.Errorf("the limited provider's breaker went through %v in /admin/providers, want closed throughout", states)
	}
	if len(gauges) != 1 || gauges[0] != 0 {
		t.Errorf(`llmrouter_breaker_state{provider="limited"} went through %v, want 0 throughout`, gauges)
	}
	if opened != 0 {
		t.Errorf(`llmrouter_breaker_transitions_total{provider="limited",to="open"} = %v, want 0`, opened)
	}
	if rateLimited != 1 {
		t.Errorf(`llmrouter_upstream_requests_total{kind="rate_limited",provider="limited"} = %v, want 1`, rateLimited)
	}
	gap := time.Duration(-1)
	if next != nil {
		gap = next.start.Sub(reset).Round(time.Millisecond)
	}
	t.Logf("429 with Retry-After %s; next API request reached the limited provider %s after the named reset; it served %d of %d clients after the reset; states %v, gauge %v",
		wait, gap, fromLimited, requests, states, gauges)
}

// missingModel is a target model with a typo; missingTarget is OpenAI's
// answer for it.
const missingModel = "gpt-4o-mni"

func missingTarget() binFault {
	return binFault{fault: oaiError(http.StatusNotFound, "invalid_request_error", "model_not_found",
		"The model `"+missingModel+"` does not exist or you do not have access to it.")}
}

// testOutageMissingTarget: provider A serves model "m" (its target
// model-of-A) and "typo" (target gpt-4o-mni, which A answers 404
// model_not_found), with B as the tier-1 target of both. Three clients
// send 10 "typo" and 10 "m" requests each, interleaved. The breaker trips
// on the first counted failure, so a 404 counted against A would open it.
// Checked (docs/ARCHITECTURE.md, "Classification"): at most one request
// per client for the bad target reached A before it was disabled; every
// "typo" request was served by B; every "m" request by A at its first
// attempt; A's breaker stayed closed; llmrouter_targets_disabled{A} is 1,
// /admin/providers lists the target, one "target disabled" warning and a
// "failing over" line from A to B with kind target_missing were logged.
// Then A alone: "typo" gets 404 model_not_found naming A/gpt-4o-mni,
// every "m" is served, and only one request for the bad target reached A.
func testOutageMissingTarget(t *testing.T, bin string) {
	const (
		clients   = 3
		perClient = 10
	)
	answerByModel := func(model string, _ int, _ bool) binFault {
		if model == missingModel {
			return missingTarget()
		}
		return binFault{}
	}
	t.Run("fallback", func(t *testing.T) {
		a := newBinFake(t, "A", openaiAPI)
		b := newBinFake(t, "B", anthropicAPI)
		a.setAPIByModel(answerByModel)
		p := startRouter(t, bin, binConfig{
			providers: []binProvider{{fake: a, typ: "openai_compatible", tier: 0}, {fake: b, typ: "anthropic", tier: 1}},
			models: []binModel{{name: "typo", targets: []binTarget{
				{provider: "A", model: missingModel, tier: 0},
				{provider: "B", model: "model-of-B", tier: 1},
			}}},
			breaker:  "failure_threshold: {consecutive: 1, ratio: 0}",
			logLevel: "info",
		})
		var (
			wg        sync.WaitGroup
			typoBy    sync.Map // provider → *atomic.Int32
			mByA      atomic.Int32
			mAttempts atomic.Int32 // m answers with more than one attempt
		)
		count := func(m *sync.Map, k string) {
			v, _ := m.LoadOrStore(k, new(atomic.Int32))
			v.(*atomic.Int32).Add(1)
		}
		for c := range clients {
			wg.Go(func() {
				for i := range perClient {
					stream := (c+i)%2 == 1
					rep, err := p.send("typo", "", stream)
					if err == nil {
						var who string
						if who, err = servedBy(rep, stream); err == nil {
							count(&typoBy, who)
						}
					}
					if err != nil {
						t.Errorf("client %d typo request %d: %v", c, i, err)
					}
					rep, err = p.send("m", "", stream)
					if err == nil {
						var who string
						if who, err = servedBy(rep, stream); err == nil && who == a.name {
							mByA.Add(1)
							if attempts(rep) != 1 {
								mAttempts.Add(1)
							}
						} else if err == nil {
							t.Errorf("client %d m request %d: served by %q, want %q", c, i, who, a.name)
						}
					}
					if err != nil {
						t.Errorf("client %d m request %d: %v", c, i, err)
					}
				}
			})
		}
		wg.Wait()
		row := p.admin1(t, a.name)
		disabled := p.metricValue(t, `llmrouter_targets_disabled{provider="A"}`)
		gauge := p.metricValue(t, `llmrouter_breaker_state{provider="A"}`)
		p.stop()

		typoByB := 0
		typoBy.Range(func(k, v any) bool {
			if k.(string) == b.name {
				typoByB = int(v.(*atomic.Int32).Load())
			} else {
				t.Errorf("%d typo requests served by %q, want every one by %q", v.(*atomic.Int32).Load(), k, b.name)
			}
			return true
		})
		bad := a.countModel(missingModel, 0)
		t.Logf("bad target: %d requests reached A (%d clients); typo served by B %d/%d; m served by A %d/%d (%d after more than one attempt); A good-model calls %d",
			bad, clients, typoByB, clients*perClient, mByA.Load(), clients*perClient, mAttempts.Load(), a.countModel("model-of-A", 0))
		if bad < 1 || bad > clients {
			t.Errorf("%d requests for the missing target reached A, want 1 to %d (one per client at most, before the first 404 disabled it)", bad, clients)
		}
		if typoByB != clients*perClient {
			t.Errorf("B served %d typo requests, want %d", typoByB, clients*perClient)
		}
		if int(mByA.Load()) != clients*perClient || mAttempts.Load() != 0 {
			t.Errorf("A served %d m requests (%d after a failed attempt), want %d at the first attempt", mByA.Load(), mAttempts.Load(), clients*perClient)
		}
		if n := a.countModel("model-of-A", 0); n != clients*perClient {
			t.Errorf("A got %d calls for its good model, want %d (one per m request)", n, clients*perClient)
		}
		if row.State != "closed" || gauge != 0 {
			t.Errorf("A's breaker: /admin/providers %q, llmrouter_breaker_state %v; want closed and 0", row.State, gauge)
		}
		if disabled != 1 {
			t.Errorf(`llmrouter_targets_disabled{provider="A"} = %v, want 1`, disabled)
		}
		if len(row.DisabledTargets) != 1 || row.DisabledTargets[0] != missingModel {
			t.Errorf("/admin/providers disabled_targets of A = %q, want [%s]", row.DisabledTargets, missingModel)
		}
		if l := p.logLines("target disabled", "provider=A", "model="+missingModel); len(l) != 1 {
			t.Errorf("got %d \"target disabled\" log lines for A/%s, want 1:\n%s", len(l), missingModel, strings.Join(l, "\n"))
		}
		if l := p.logLines(`msg="failing over"`, "from=A", "to=B", "kind=target_missing"); len(l) == 0 {
			t.Errorf("no \"failing over\" log line from A to B with kind target_missing; output:\n%s", p.stderr)
		}
	})
	t.Run("only provider", func(t *testing.T) {
		const mRequests, every = 30, 6 // a typo request after every 5 m requests
		a := newBinFake(t, "A", openaiAPI)
		a.setAPIByModel(answerByModel)
		p := startRouter(t, bin, binConfig{
			providers: []binProvider{{fake: a, typ: "openai_compatible", tier: 0}},
			models:    []binModel{{name: "typo", targets: []binTarget{{provider: "A", model: missingModel, tier: 0}}}},
			breaker:   "failure_threshold: {consecutive: 1, ratio: 0}",
		})
		typos, notFound, served := 0, 0, 0
		for i := 0; served < mRequests; i++ {
			stream := i%2 == 1
			if i%every == 0 {
				typos++
				rep, err := p.send("typo", "", stream)
				if err != nil {
					t.Fatalf("typo request: %v", err)
				}
				if err := routerError(rep, http.StatusNotFound, "model_not_found"); err != nil {
					t.Errorf("typo request %d: %v", typos, err)
				} else if msg := gjson.GetBytes(rep.body, "error.message").Str; !strings.Contains(msg, "A/"+missingModel) {
					t.Errorf("typo request %d: message %q does not name the target A/%s", typos, msg, missingModel)
				} else {
					notFound++
				}
				continue
			}
			rep, err := p.send("m", "", stream)
			if err == nil {
				var who string
				if who, err = servedBy(rep, stream); err == nil && who != a.name {
					err = fmt.Errorf("served by %q", who)
				}
			}
			if err != nil {
				t.Errorf("m request %d: %v", served, err)
			}
			served++
		}
		gauge := p.metricValue(t, `llmrouter_breaker_state{provider="A"}`)
		p.stop()
		bad := a.countModel(missingModel, 0)
		t.Logf("A alone: %d of %d typo requests answered 404 model_not_found naming A/%s, %d reached A; %d m requests served",
			notFound, typos, missingModel, bad, served)
		if bad != 1 {
			t.Errorf("%d requests for the missing target reached A, want 1 (sequential clients)", bad)
		}
		if gauge != 0 {
			t.Errorf(`llmrouter_breaker_state{provider="A"} = %v, want 0`, gauge)
		}
	})
}

// testOutageQuota: a tier-0 provider answers every API call 429
// insufficient_quota while its models list (the probe) is healthy; a
// tier-1 provider is healthy; breaker cooldowns 300ms. One request every
// 100ms for 5s. Checked (docs/ARCHITECTURE.md, "Classification",
// "Breaker"): every client got a 200; at most 2 API requests reached the
// provider (the healthy probe does not bring it back); /admin/providers
// shows it out_of_quota and llmrouter_provider_out_of_quota is 1. Then,
// its quota back, POST /admin/providers/Q/enable lifts it and the next
// request is served by it; `router enable Q --admin URL` answers too.
func testOutageQuota(t *testing.T, bin string) {
	const (
		pace     = 100 * time.Millisecond
		requests = 50
		maxCalls = 2
	)
	q := newBinFake(t, "Q", openaiAPI)
	backup := newBinFake(t, "backup", anthropicAPI)
	var back atomic.Bool
	q.setAPI(func(int, bool) binFault {
		if back.Load() {
			return binFault{}
		}
		return binFault{fault: oaiError(http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota", "You exceeded your current quota")}
	})
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: q, typ: "openai_compatible", tier: 0}, {fake: backup, typ: "anthropic", tier: 1}},
		breaker:   "cooldown: {failure: 300ms, rate_limit: 300ms, timeout: 300ms, multiplier: 1, max: 1s}",
	})
	tick := time.NewTicker(pace)
	defer tick.Stop()
	notOff := 0 // polls after the first answer where /admin/providers did not say out_of_quota
	for i := range requests {
		<-tick.C
		rep, err := p.send("m", "", i%2 == 1)
		if err == nil {
			_, err = servedBy(rep, i%2 == 1)
		}
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
		if !p.admin1(t, q.name).OutOfQuota {
			notOff++
		}
	}
	calls := q.count(false, 0)
	probes := q.count(true, 0)
	gauge := p.metricValue(t, `llmrouter_provider_out_of_quota{provider="Q"}`)
	t.Logf("out of quota: %d API requests and %d probes reached Q over %d requests in %s; out_of_quota false in %d of %d polls",
		calls, probes, requests, requests*pace, notOff, requests)
	if calls < 1 || calls > maxCalls {
		t.Errorf("%d API requests reached the provider out of quota, want 1 to %d", calls, maxCalls)
	}
	if notOff > 0 {
		t.Errorf("/admin/providers did not show out_of_quota in %d of %d polls after its quota answer", notOff, requests)
	}
	if gauge != 1 {
		t.Errorf(`llmrouter_provider_out_of_quota{provider="Q"} = %v, want 1`, gauge)
	}

	back.Store(true)
	resp, err := p.client.Post(p.admin+"/admin/providers/Q/enable", "application/json", nil)
	if err != nil {
		t.Fatalf("POST enable: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !gjson.GetBytes(body, "quota_lifted").Bool() {
		t.Errorf("POST /admin/providers/Q/enable: %d %s, want 200 with quota_lifted true", resp.StatusCode, body)
	}
	rep, err := p.send("m", "", false)
	if err == nil {
		var who string
		if who, err = servedBy(rep, false); err == nil && who != q.name {
			err = fmt.Errorf("served by %q, want %q", who, q.name)
		}
	}
	if err != nil {
		t.Errorf("the request after enable: %v", err)
	}
	if row := p.admin1(t, q.name); row.OutOfQuota {
		t.Errorf("/admin/providers still shows Q out_of_quota after enable")
	}
	if v := p.metricValue(t, `llmrouter_provider_out_of_quota{provider="Q"}`); v != 0 {
		t.Errorf(`llmrouter_provider_out_of_quota{provider="Q"} = %v after enable, want 0`, v)
	}
	// The command line: router enable NAME --admin URL.
	// The command line, both ways round: the flag first as its help shows
	// it, and `router enable NAME --admin URL`.
	for _, args := range [][]string{{"--admin", p.admin, q.name}, {q.name, "--admin", p.admin}} {
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, append([]string{"enable"}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || gjson.Get(out.String(), "provider").Str != q.name {
			t.Errorf("router enable %s: %v; stdout %q, stderr %q", strings.Join(args, " "), err, out.String(), errOut.String())
		}
	}
	p.stop()
}

// testOutageDomains: providers A and B share the failure domain cloud-x, C
// has none, all in tier 0 of model "m". A fails every API call and probe
// with 503 until its breaker opens (on its first failure: after one, its
// score ranks it last and it would rarely be tried again; 30s cooldown).
// Then 60 sequential requests. Checked (docs/ARCHITECTURE.md,
// "Selection"): every client got a 200, A none of them, and C, of
// another domain, served at least three times as many as B, A's domain
// peer; /admin/providers shows the domains.
func testOutageDomains(t *testing.T, bin string) {
	const (
		requests  = 60
		openBound = 10 * time.Second
	)
	a := newBinFake(t, "A", openaiAPI)
	b := newBinFake(t, "B", anthropicAPI)
	c := newBinFake(t, "C", openaiAPI)
	a.setAPI(func(int, bool) binFault { return serviceUnavailable(openaiAPI) })
	a.setProbe(func(int) int { return http.StatusServiceUnavailable })
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{
			{fake: a, typ: "openai_compatible", domain: "cloud-x"},
			{fake: b, typ: "anthropic", domain: "cloud-x"},
			{fake: c, typ: "openai_compatible"},
		},
		breaker: "failure_threshold: {consecutive: 1, ratio: 0}\ncooldown: {failure: 30s, rate_limit: 30s, timeout: 30s, multiplier: 1, max: 30s}",
	})
	warm := 0
	if !eventually(openBound, func() bool {
		if _, err := p.chatOK(warm%2 == 1); err != nil {
			t.Errorf("request %d before A opened: %v", warm, err)
		}
		warm++
		return p.admin1(t, a.name).State == "open"
	}) {
		t.Fatalf("A's breaker not open after %d requests in %s", warm, openBound)
	}
	aCalls := a.count(false, 0)
	by := map[string]int{}
	for i := range requests {
		who, err := "", error(nil)
		rep, err := p.send("m", "", i%2 == 1)
		if err == nil {
			who, err = servedBy(rep, i%2 == 1)
		}
		if err != nil {
			t.Errorf("request %d: %v", i, err)
			continue
		}
		by[who]++
	}
	rows := map[string]adminState{}
	ps, err := p.providers()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ps {
		rows[r.Name] = r
	}
	p.stop()
	t.Logf("A open after %d requests (%d API calls); then %d requests: C %d, B %d, A %d", warm, aCalls, requests, by["C"], by["B"], by["A"])
	if n := a.count(false, 0) - aCalls; n != 0 || by["A"] != 0 {
		t.Errorf("A got %d API requests while open, want none", n)
	}
	if by["C"] < 3*by["B"] || by["C"]+by["B"] != requests {
		t.Errorf("C (another domain) served %d, B (the open provider's domain) %d, want C at least 3 x B and %d in all", by["C"], by["B"], requests)
	}
	if rows["A"].Domain != "cloud-x" || rows["B"].Domain != "cloud-x" || rows["C"].Domain != "" {
		t.Errorf("/admin/providers domains A %q, B %q, C %q; want cloud-x, cloud-x, \"\"", rows["A"].Domain, rows["B"].Domain, rows["C"].Domain)
	}
}

// testOutageDomainsFailing: issue 25's third measurement on the binary. A
// and B share the failure domain cloud-x, C has none, all in tier 0; A
// fails every call with 503 but its breaker never trips (consecutive and
// ratio thresholds out of reach), so only its failing streak can warn
// its domain. After a warm-up of 20 requests, 200 sequential requests:
// every client got a 200, and C served at least 65% of them where the
// open-only rule gave it about half (docs/ARCHITECTURE.md, "Selection").
func testOutageDomainsFailing(t *testing.T, bin string) {
	const warm, requests = 20, 200
	a := newBinFake(t, "A", openaiAPI)
	b := newBinFake(t, "B", openaiAPI)
	c := newBinFake(t, "C", openaiAPI)
	a.setAPI(func(int, bool) binFault { return serviceUnavailable(openaiAPI) })
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{
			{fake: a, typ: "openai_compatible", domain: "cloud-x"},
			{fake: b, typ: "openai_compatible", domain: "cloud-x"},
			{fake: c, typ: "openai_compatible"},
		},
		breaker: "failure_threshold: {consecutive: 1000000, ratio: 1, min_requests: 1000000, window: 60s}",
		routing: "adaptive_throttle_k: 0",
	})
	defer p.stop()
	by := map[string]int{}
	for i := range warm + requests {
		rep, err := p.chatOK(false)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if i >= warm {
			by[rep.header.Get("X-LLMRouter-Provider")]++
		}
	}
	t.Logf("after %d warm-up requests, %d requests: C %d, B %d (A, failing, served none: %d)", warm, requests, by["C"], by["B"], by["A"])
	if by["A"] != 0 || by["B"]+by["C"] != requests {
		t.Errorf("served by %v, want only B and C", by)
	}
	if by["C"]*100 < 65*requests {
		t.Errorf("C (another domain) served %d of %d, want at least 65%%", by["C"], requests)
	}
}

// outageFamilies are the families the first scrape must hold, and whether
// each has a series per provider (docs/ARCHITECTURE.md, "Metrics").
var outageFamilies = []struct {
	name        string
	perProvider bool
}{
	{"llmrouter_upstream_requests_total", true},
	{"llmrouter_upstream_duration_seconds", true},
	{"llmrouter_retries_total", true},
	{"llmrouter_fallbacks_total", false},
	{"llmrouter_breaker_state", true},
	{"llmrouter_breaker_transitions_total", true},
	{"llmrouter_breaker_probes_total", true},
	{"llmrouter_bulkhead_in_flight", true},
	{"llmrouter_bulkhead_rejections_total", true},
	{"llmrouter_ratelimit_remaining", true},
	{"llmrouter_throttled_requests_total", true},
	{"llmrouter_tokens_total", true},
	{"llmrouter_provider_score", true},
	{"llmrouter_system_health", false},
	{"llmrouter_config_last_reload_successful", false},
	{"llmrouter_degraded_responses_total", false},
	{"llmrouter_recovered_requests_total", false},
	{"llmrouter_shed_requests_total", false},
	{"llmrouter_targets_disabled", true},
	{"llmrouter_provider_out_of_quota", true},
	{"llmrouter_overhead_seconds", false},
	{"llmrouter_retry_backoff_seconds", false},
}

// testOutageMetrics: a router with providers one (tier 0) and two (tier
// 1). Its first scrape, before any request, holds every family an alert
// or dashboard reads, with a series for each provider where the family is
// per provider, counters at 0, and the request families' api label; it
// passes `promtool check metrics` when promtool is installed. After one
// request, llmrouter_requests_total{api="chat"} counts it. Then the config
// is rewritten without two and the router gets SIGHUP: once the reload
// succeeded, no series names provider two.
func testOutageMetrics(t *testing.T, bin string) {
	one := newBinFake(t, "one", openaiAPI)
	two := newBinFake(t, "two", anthropicAPI)
	cfg := binConfig{providers: []binProvider{{fake: one, typ: "openai_compatible", tier: 0}, {fake: two, typ: "anthropic", tier: 1}}}
	p := startRouter(t, bin, cfg)
	first := p.scrape(t)
	for _, f := range outageFamilies {
		lines := samples(first, f.name)
		if len(lines) == 0 {
			t.Errorf("the first scrape has no %s", f.name)
			continue
		}
		if !f.perProvider {
			continue
		}
		for _, prov := range []string{one.name, two.name} {
			n := 0
			for _, l := range lines {
				if hasLabel(l, "provider", prov) {
					n++
					if strings.HasSuffix(f.name, "_total") && sampleValue(l) != 0 {
						t.Errorf("the first scrape has %s, want 0", l)
					}
				}
			}
			if n == 0 {
				t.Errorf("the first scrape has no %s series for provider %s", f.name, prov)
			}
		}
	}
	for _, series := range []string{
		`llmrouter_degraded_responses_total{api="chat",model="m"}`,
		`llmrouter_recovered_requests_total{api="chat",model="m"}`,
		`llmrouter_fallbacks_total{from_tier="0",to_tier="1"}`,
	} {
		if v := p.metricIn(first, series); v != 0 {
			t.Errorf("the first scrape has %s = %v, want 0", series, v)
		}
	}
	if path, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(path, "check", "metrics")
		cmd.Stdin = strings.NewReader(first)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on the first scrape: %v\n%s", err, out)
		} else {
			t.Log("promtool check metrics: the first scrape passes")
		}
	} else {
		t.Log("promtool not on PATH: the scrape's lint is not checked")
	}
	if _, err := p.chatOK(false); err != nil {
		t.Fatalf("request: %v", err)
	}
	// The request is counted once its answer is written, maybe after the
	// client has read it.
	if !eventually(5*time.Second, func() bool {
		return p.metricValue(t, `llmrouter_requests_total{api="chat",code="200",model="m"}`) == 1
	}) {
		t.Errorf(`llmrouter_requests_total{api="chat",code="200",model="m"} not 1 after one request; the family:
%s`, strings.Join(samples(p.scrape(t), "llmrouter_requests_total"), "\n"))
	}

	p.rewriteConfig(binConfig{providers: cfg.providers[:1]})
	p.signal(syscall.SIGHUP)
	if !eventually(10*time.Second, func() bool {
		return p.metricValue(t, `llmrouter_config_reloads_total{result="success"}`) >= 1
	}) {
		t.Fatalf("no successful reload within 10s of SIGHUP; output:\n%s", p.stderr)
	}
	after := p.scrape(t)
	var left []string
	for l := range strings.SplitSeq(after, "\n") {
		if l != "" && l[0] != '#' && hasLabel(l, "provider", two.name) {
			left = append(left, l)
		}
	}
	if len(left) > 0 {
		t.Errorf("%d series of the removed provider remain after the reload:\n%s", len(left), strings.Join(left, "\n"))
	}
	if v := p.metricIn(after, `llmrouter_breaker_state{provider="one"}`); v != 0 {
		t.Errorf(`llmrouter_breaker_state{provider="one"} = %v after the reload, want 0`, v)
	}
	if v := p.metricIn(after, "llmrouter_config_last_reload_successful"); v != 1 {
		t.Errorf("llmrouter_config_last_reload_successful = %v, want 1", v)
	}
	ps, err := p.providers()
	if err != nil || len(ps) != 1 || ps[0].Name != one.name {
		t.Errorf("/admin/providers after the reload: %+v %v, want only %s", ps, err, one.name)
	}
	t.Logf("first scrape: %d families checked; after the reload %d series name %s", len(outageFamilies), len(left), two.name)
	p.stop()
}
