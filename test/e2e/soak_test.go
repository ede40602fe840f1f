package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/breaker"
)

// lockedRand is a seeded source shared by the upstreams' handlers.
type lockedRand struct {
	mu sync.Mutex // guards r
	r  *rand.Rand
}

func (l *lockedRand) IntN(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.IntN(n)
}

// soakMix scripts u with a fault mix drawn from src, per mille: 800
// answers, 40 HTTP 500, 30 HTTP 503, 30 HTTP 429 (retry-after-ms 50), 30
// connection resets, 30 cuts (stream: after one chunk, cleanly or by
// reset; non-stream: a short body) and 40 slow first tokens (400ms, past
// the 250ms first_token_timeout; non-stream: a slow but complete answer).
func soakMix(u *upstream, src *lockedRand) func(stream bool) fault {
	e500 := oaiError(500, "server_error", "", "The server had an error while processing your request.")
	e503 := oaiError(503, "service_unavailable_error", "server_is_overloaded", "The server is overloaded.")
	e429 := oaiError(429, "requests", "rate_limit_exceeded", "Rate limit reached for requests.", "Retry-After-Ms", "50")
	if u.d == anthropicAPI {
		e500 = antError(500, "api_error", "Internal server error")
		e503 = antError(529, "overloaded_error", "Overloaded")
		e429 = antError(429, "rate_limit_error", "Rate limited", "Retry-After-Ms", "50")
	}
	return func(stream bool) fault {
		n := src.IntN(1000)
		switch {
		case n < 800:
			return fault{}
		case n < 840:
			return e500
		case n < 870:
			return e503
		case n < 900:
			return e429
		case n < 930:
			return fault{kind: reset}
		case n < 960 && !stream:
			return fault{kind: cutBody}
		case n < 945:
			return fault{kind: cutStream}
		case n < 960:
			return fault{kind: resetStream}
		}
		return fault{kind: slowFirstToken, delay: 400 * time.Millisecond}
	}
}

// TestSoak sends 3000 requests (half streamed) from 32 concurrent clients
// through three providers that fail in mixed ways, and checks that every
// request gets exactly one well-formed answer and that nothing leaks.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: skipped in -short mode")
	}
	ignore := goleak.IgnoreCurrent()
	const (
		requests = 3000
		clients  = 32
	)
	src := &lockedRand{r: rand.New(rand.NewPCG(20260823, 42))}
	ups := [3]*upstream{newUpstream(t, "p1", openaiAPI), newUpstream(t, "p2", openaiAPI), newUpstream(t, "p3", anthropicAPI)}
	for _, u := range ups {
		u.setScript(soakMix(u, src))
	}
	const ft, to = 250 * time.Millisecond, 3 * time.Second
	r := newRig(t, rigOptions{
		requestTimeout: 10 * time.Second,
		throttleK:      2, // the default

		breaker: breaker.Config{
			FailureThreshold: breaker.Threshold{Consecutive: 5, Ratio: 0.5, MinRequests: 20, Window: 10 * time.Second},
			// Short cooldowns: tripped breakers probe and close within the soak.
			Cooldown: breaker.Cooldown{Failure: 200 * time.Millisecond, RateLimit: 200 * time.Millisecond,
				Timeout: 200 * time.Millisecond, Multiplier: 1.5, Max: 2 * time.Second},
		},
	},
		prov{up: ups[0], typ: "openai", tier: 0, firstToken: ft, timeout: to},
		prov{up: ups[1], typ: "openai_compatible", tier: 0, firstToken: ft, timeout: to},
		prov{up: ups[2], typ: "anthropic", tier: 1, firstToken: ft, timeout: to},
	)

	var (
		mu       sync.Mutex // guards tally, served, problems
		tally    = map[string]int{}
		served   = map[string]int{}    // 200 answers by provider and degradation
		example  = map[string]string{} // one error message per status
		problems []string
	)
	record := func(key, problem string, rep reply) {
		mu.Lock()
		defer mu.Unlock()
		tally[key]++
		if m := gjson.GetBytes(rep.body, "error.message").Str; rep.status != http.StatusOK && example[key] == "" {
			example[key] = m
		}
		if rep.status == http.StatusOK {
			served[rep.header.Get("X-LLMRouter-Provider")+" degraded="+rep.header.Get("X-LLMRouter-Degraded")]++
		}
		if problem != "" {
			problems = append(problems, problem)
		}
	}
	start := time.Now()
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range jobs {
				stream := i%2 == 0
				rep, err := r.chat(stream)
				if err != nil {
					record("transport error", fmt.Sprintf("request %d (stream %t): %v", i, stream, err), rep)
					continue
				}
				class, err := check(&rep, stream)
				key := fmt.Sprintf("%d %s", rep.status, class)
				if err != nil {
					record(key, fmt.Sprintf("request %d (stream %t): %v", i, stream, err), rep)
					continue
				}
				record(key, soakProblem(i, stream, rep), rep)
			}
		})
	}
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	r.close()

	keys := make([]string, 0, len(tally))
	total, ok := 0, 0
	for k, n := range tally {
		keys = append(keys, k)
		total += n
		if k[:3] == "200" {
			ok += n
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("%-24s %5d %s", k, tally[k], example[k])
	}
	t.Logf("200 answers by provider: %v", served)
	t.Logf("%d requests in %s; upstream calls p1 %d, p2 %d, p3 %d; probes %d", total, elapsed.Round(time.Millisecond),
		ups[0].calls.Load(), ups[1].calls.Load(), ups[2].calls.Load(),
		ups[0].probe.Load()+ups[1].probe.Load()+ups[2].probe.Load())
	if total != requests {
		t.Errorf("got %d answers, want %d", total, requests)
	}
	for i, p := range problems {
		if i == 10 {
			t.Errorf("... and %d more problems", len(problems)-10)
			break
		}
		t.Error(p)
	}
	// One fault in five per call, three attempts: failover should hide
	// nearly all of them.
	if ok*10 < total*9 {
		t.Errorf("got %d of %d answers with status 200, want at least 90%%", ok, total)
	}
	goleak.VerifyNone(t, ignore)
}

// soakProblem checks a well-formed answer against the soak's rules; "" is
// fine.
func soakProblem(i int, stream bool, rep reply) string {
	n := attempts(rep)
	switch rep.status {
	case http.StatusOK:
		if rep.header.Get("X-LLMRouter-Provider") == "" {
			return fmt.Sprintf("request %d (stream %t): 200 without X-LLMRouter-Provider", i, stream)
		}
		if n < 1 || n > fastRetry.MaxAttempts {
			return fmt.Sprintf("request %d (stream %t): 200 after %d attempts, want 1..%d", i, stream, n, fastRetry.MaxAttempts)
		}
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if n < 0 || n > fastRetry.MaxAttempts {
			return fmt.Sprintf("request %d (stream %t): status %d after %d attempts, want 0..%d", i, stream, rep.status, n, fastRetry.MaxAttempts)
		}
	default:
		return fmt.Sprintf("request %d (stream %t): unexpected status %d: %s", i, stream, rep.status, rep.body)
	}
	return ""
}
