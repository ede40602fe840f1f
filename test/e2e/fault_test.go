package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Timeouts of the tier-0 providers in the fault tests: short, so hangs and
// slow first tokens fail over fast. The tier-1 provider gets generous ones.
const (
	shortFirstToken = 200 * time.Millisecond
	shortTimeout    = 600 * time.Millisecond
)

// threeProviders is the fault tests' topology for model "m": p1 and p2 in
// tier 0 with timeouts ft and to, both speaking d (openai: types openai
// and openai_compatible; anthropic: both anthropic), so that whichever the
// router ranks first, the fault comes in dialect d; p3 in tier 1 speaks
// the other dialect.
func threeProviders(t *testing.T, d dialect, o rigOptions, ft, to time.Duration) (*rig, [3]*upstream) {
	t.Helper()
	t3, d3 := "anthropic", anthropicAPI
	t1, t2 := "openai", "openai_compatible"
	if d == anthropicAPI {
		t1, t2 = "anthropic", "anthropic"
		t3, d3 = "openai_compatible", openaiAPI
	}
	ups := [3]*upstream{newUpstream(t, "p1", d), newUpstream(t, "p2", d), newUpstream(t, "p3", d3)}
	r := newRig(t, o,
		prov{up: ups[0], typ: t1, tier: 0, firstToken: ft, timeout: to},
		prov{up: ups[1], typ: t2, tier: 0, firstToken: ft, timeout: to},
		prov{up: ups[2], typ: t3, tier: 1, firstToken: 5 * time.Second, timeout: 10 * time.Second},
	)
	return r, ups
}

// role names a provider of the fault matrix by what happened to it.
type role int

const (
	nobody   role = iota
	faulted       // the tier-0 provider that got the fault: the first one the router tried
	other         // the other tier-0 provider
	fallback      // the tier-1 provider
)

// want is a fault matrix row's expected answer.
type want struct {
	status   int
	served   role     // X-LLMRouter-Provider; nobody skips the check
	attempts int      // X-LLMRouter-Attempts
	calls    [3]int32 // API calls seen by faulted, other, fallback
	errEvent bool     // a 200 stream ends with one error event and no [DONE]
	message  string   // error.message contains it
	oaiCode  string   // error.code, when the faulted provider speaks OpenAI
}

// failover: the other tier-0 provider serves on the second attempt.
var failover = want{status: http.StatusOK, served: other, attempts: 2, calls: [3]int32{1, 1, 0}}

type modes int

const (
	bothModes modes = iota
	streamOnly
	nonStreamOnly
)

func modeName(stream bool) string {
	if stream {
		return "stream"
	}
	return "nonstream"
}

const contextMsg = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens."

// TestFaultMatrix injects one fault into the first tier-0 provider the
// router tries, for each provider dialect and in both modes, and checks the
// client's one answer, who served it, the attempts, and which upstreams saw
// a call (docs/ARCHITECTURE.md: "HTTP surface", "Classification", "Retries
// and failover", "Streaming").
func TestFaultMatrix(t *testing.T) {
	retryAfter := []string{"Retry-After", "1"}
	gatewayPage := "<html><body><h1>502 Bad Gateway</h1></body></html>"
	rows := []struct {
		name  string
		modes modes
		fault [2]fault // by the faulted provider's dialect
		want  want
		bug   [2]string // by dialect; non-empty: a known router bug, the case is skipped
	}{
		{name: "no fault", fault: [2]fault{{}, {}},
			want: want{status: 200, served: faulted, attempts: 1, calls: [3]int32{1, 0, 0}}},
		{name: "500", want: failover, fault: [2]fault{
			oaiError(500, "server_error", "", "The server had an error while processing your request."),
			antError(500, "api_error", "Internal server error")}},
		{name: "502 gateway page", want: failover, fault: [2]fault{
			rawError(502, gatewayPage, "Content-Type", "text/html"),
			rawError(502, gatewayPage, "Content-Type", "text/html")}},
		{name: "503", want: failover, fault: [2]fault{
			oaiError(503, "service_unavailable_error", "server_is_overloaded", "The server is overloaded or not ready yet."),
			antError(503, "api_error", "Service unavailable")}},
		{name: "504", want: failover, fault: [2]fault{
			oaiError(504, "server_error", "", "Gateway timeout."),
			antError(504, "timeout_error", "Request timed out")}},
		{name: "529", want: failover, fault: [2]fault{
			oaiError(529, "server_error", "", "Overloaded"),
			antError(529, "overloaded_error", "Overloaded")}},
		{name: "429 with Retry-After 1", want: failover, fault: [2]fault{
			oaiError(429, "requests", "rate_limit_exceeded", "Rate limit reached for gpt-test on requests per min (RPM): Limit 3, Used 3, Requested 1.", retryAfter...),
			antError(429, "rate_limit_error", "Number of requests has exceeded your per-minute rate limit", retryAfter...)}},
		{name: "429 without Retry-After", want: failover, fault: [2]fault{
			oaiError(429, "requests", "rate_limit_exceeded", "Rate limit reached for gpt-test on requests per min (RPM): Limit 3, Used 3, Requested 1."),
			antError(429, "rate_limit_error", "Number of requests has exceeded your per-minute rate limit")}},
		{name: "429 quota", want: failover, fault: [2]fault{
			oaiError(429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."),
			rawError(429, `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified API usage limits.","details":{"error_code":"enforced_spend_limit_reached"}}}`)}},
		{name: "401", want: failover, fault: [2]fault{
			oaiError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test."),
			antError(401, "authentication_error", "invalid x-api-key")}},
		// A prompt too long for one target's window is that target's:
		// the other, of an unknown window, is tried at once
		// (docs/ARCHITECTURE.md, "Context windows").
		{name: "400 context length", want: failover, fault: [2]fault{
			oaiError(400, "invalid_request_error", "context_length_exceeded", contextMsg),
			antError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")}},
		// Any other 400 is the client's, passed on as it came.
		{name: "400 invalid request", fault: [2]fault{
			oaiError(400, "invalid_request_error", "invalid_value", "Invalid value for 'temperature': must be at most 2."),
			antError(400, "invalid_request_error", "temperature: Input should be less than or equal to 1")},
			want: want{status: 400, served: faulted, attempts: 1, calls: [3]int32{1, 0, 0},
				message: "emperature", oaiCode: "invalid_value"}},
		{name: "connection reset", want: failover, fault: [2]fault{{kind: reset}, {kind: reset}}},
		{name: "hang", want: failover, fault: [2]fault{{kind: hang}, {kind: hang}}},
		{name: "garbage 200 body", want: failover, fault: [2]fault{{kind: garbage}, {kind: garbage}}},
		{name: "cut body", modes: nonStreamOnly, want: failover, fault: [2]fault{{kind: cutBody}, {kind: cutBody}}},
		{name: "slow first token", modes: streamOnly, want: failover, fault: [2]fault{
			{kind: slowFirstToken, delay: time.Second}, {kind: slowFirstToken, delay: time.Second}}},
		{name: "garbage event before content", modes: streamOnly, want: failover,
			fault: [2]fault{{kind: garbageEvent}, {kind: garbageEvent}}},
		{name: "cut stream after one chunk", modes: streamOnly, fault: [2]fault{{kind: cutStream}, {kind: cutStream}},
			want: want{status: 200, served: faulted, attempts: 1, calls: [3]int32{1, 0, 0}, errEvent: true}},
		{name: "reset after one chunk", modes: streamOnly, fault: [2]fault{{kind: resetStream}, {kind: resetStream}},
			want: want{status: 200, served: faulted, attempts: 1, calls: [3]int32{1, 0, 0}, errEvent: true}},
	}
	for _, d := range []dialect{openaiAPI, anthropicAPI} {
		for _, tc := range rows {
			for _, stream := range []bool{false, true} {
				if (tc.modes == streamOnly && !stream) || (tc.modes == nonStreamOnly && stream) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%s", d, tc.name, modeName(stream)), func(t *testing.T) {
					if tc.bug[d] != "" {
						t.Skip("BUG: " + tc.bug[d])
					}
					r, ups := threeProviders(t, d, rigOptions{}, shortFirstToken, shortTimeout)
					firstHit := faultOnce(tc.fault[d], ups[0], ups[1])
					rep, err := r.chat(stream)
					if err != nil {
						t.Fatalf("request: %v", err)
					}
					class, err := check(&rep, stream)
					if err != nil {
						t.Fatalf("malformed answer: %v", err)
					}
					f := firstHit()
					if f == nil {
						t.Fatalf("no tier-0 provider was called; status %d: %s", rep.status, rep.body)
					}
					o := ups[1]
					if f == ups[1] {
						o = ups[0]
					}
					who := map[role]*upstream{faulted: f, other: o, fallback: ups[2]}
					w := tc.want

					if rep.status != w.status {
						t.Fatalf("got status %d, want %d; body %s", rep.status, w.status, rep.body)
					}
					if w.served != nobody {
						if got := rep.header.Get("X-LLMRouter-Provider"); got != who[w.served].name {
							t.Errorf("got X-LLMRouter-Provider %q, want %q", got, who[w.served].name)
						}
					}
					if got := attempts(rep); got != w.attempts {
						t.Errorf("got X-LLMRouter-Attempts %d, want %d", got, w.attempts)
					}
					for i, ro := range []role{faulted, other, fallback} {
						if got := who[ro].calls.Load(); got != w.calls[i] {
							t.Errorf("%s (%s) saw %d calls, want %d", who[ro].name, []string{"faulted", "other", "fallback"}[i], got, w.calls[i])
						}
					}
					if got := rep.header.Get("X-LLMRouter-Degraded"); got != "" {
						t.Errorf("got X-LLMRouter-Degraded %q from a tier-0 answer, want none", got)
					}
					switch {
					case w.status == http.StatusOK && w.errEvent:
						if class != streamError {
							t.Errorf("got a %s, want a stream ending in one error event; body %q", class, rep.body)
						}
						if got := content(rep); got != "hello " {
							t.Errorf("got content %q before the error event, want %q", got, "hello ")
						}
					case w.status == http.StatusOK:
						if class != completion && class != streamDone {
							t.Errorf("got a %s, want a complete answer; body %q", class, rep.body)
						}
						if got, want := content(rep), who[w.served].text(); got != want {
							t.Errorf("got content %q, want %q", got, want)
						}
					default:
						msg := gjson.GetBytes(rep.body, "error.message").Str
						if !strings.Contains(msg, w.message) {
							t.Errorf("got error.message %q, want it to contain %q", msg, w.message)
						}
						if code := gjson.GetBytes(rep.body, "error.code").Str; d == openaiAPI && w.oaiCode != "" && code != w.oaiCode {
							t.Errorf("got error.code %q, want %q", code, w.oaiCode)
						}
					}
					if rep.elapsed > hangBound {
						t.Errorf("took %s, want under %s", rep.elapsed, hangBound)
					}
				})
			}
		}
	}
}

// TestTier0DownDegrades: with both tier-0 providers failing, tier 1 serves
// on the third attempt and says so (docs/ARCHITECTURE.md, "Degradation and
// shedding").
func TestTier0DownDegrades(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			r, ups := threeProviders(t, openaiAPI, rigOptions{}, shortFirstToken, shortTimeout)
			ups[0].always(oaiError(500, "server_error", "", "The server had an error."))
			ups[1].always(rawError(503, "upstream connect error", "Content-Type", "text/plain"))
			rep, err := r.chat(stream)
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			if _, err := check(&rep, stream); err != nil {
				t.Fatalf("malformed answer: %v", err)
			}
			if rep.status != http.StatusOK {
				t.Fatalf("got status %d, want 200; body %s", rep.status, rep.body)
			}
			for h, want := range map[string]string{
				"X-LLMRouter-Provider": "p3", "X-LLMRouter-Attempts": "3",
				"X-LLMRouter-Degraded": "true", "X-LLMRouter-Tier": "1",
			} {
				if got := rep.header.Get(h); got != want {
					t.Errorf("got %s %q, want %q", h, got, want)
				}
			}
			if got, want := content(rep), ups[2].text(); got != want {
				t.Errorf("got content %q, want %q", got, want)
			}
			assertCalls(t, ups, 1, 1, 1)
			if rep.elapsed > hangBound {
				t.Errorf("took %s, want under %s", rep.elapsed, hangBound)
			}
		})
	}
}

// TestEveryAttemptFails: three failed attempts give 502 whose message names
// each provider with its status and kind (docs/ARCHITECTURE.md, "HTTP
// surface").
func TestEveryAttemptFails(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			r, ups := threeProviders(t, openaiAPI, rigOptions{}, shortFirstToken, shortTimeout)
			ups[0].always(oaiError(500, "server_error", "", "The server had an error."))
			ups[1].always(oaiError(503, "service_unavailable_error", "server_is_overloaded", "The server is overloaded."))
			ups[2].always(antError(529, "overloaded_error", "Overloaded"))
			rep := mustErrorReply(t, r, stream, http.StatusBadGateway, "upstream_error")
			msg := gjson.GetBytes(rep.body, "error.message").Str
			for _, part := range []string{"p1 status 500 server_error", "p2 status 503 overloaded", "p3 status 529 overloaded"} {
				if !strings.Contains(msg, part) {
					t.Errorf("got error.message %q, want it to contain %q", msg, part)
				}
			}
			if got := attempts(rep); got != 3 {
				t.Errorf("got X-LLMRouter-Attempts %d, want 3", got)
			}
			assertCalls(t, ups, 1, 1, 1)
		})
	}
}

// TestEveryProviderRateLimited: when every attempt was rate limited the
// client gets 429 with a Retry-After (docs/ARCHITECTURE.md, "HTTP
// surface").
func TestEveryProviderRateLimited(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			r, ups := threeProviders(t, openaiAPI, rigOptions{}, shortFirstToken, shortTimeout)
			ups[0].always(oaiError(429, "requests", "rate_limit_exceeded", "Rate limit reached.", "Retry-After", "2"))
			ups[1].always(oaiError(429, "requests", "rate_limit_exceeded", "Rate limit reached.", "Retry-After", "2"))
			ups[2].always(antError(429, "rate_limit_error", "Rate limited", "Retry-After", "2"))
			rep := mustErrorReply(t, r, stream, http.StatusTooManyRequests, "rate_limit_exceeded")
			if n, err := strconv.Atoi(rep.header.Get("Retry-After")); err != nil || n < 1 {
				t.Errorf("got Retry-After %q, want whole seconds >= 1", rep.header.Get("Retry-After"))
			}
			assertCalls(t, ups, 1, 1, 1)
		})
	}
}

// TestEveryBreakerOpen: a 401 opens a breaker at once; once every
// provider's is open the next request gets 503 with Retry-After without
// reaching any provider (docs/ARCHITECTURE.md, "HTTP surface", "Breaker").
func TestEveryBreakerOpen(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			r, ups := threeProviders(t, openaiAPI, rigOptions{}, shortFirstToken, shortTimeout)
			ups[0].always(oaiError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."))
			ups[1].always(oaiError(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."))
			ups[2].always(antError(401, "authentication_error", "invalid x-api-key"))
			first := mustErrorReply(t, r, stream, http.StatusBadGateway, "upstream_error")
			if msg := gjson.GetBytes(first.body, "error.message").Str; strings.Count(msg, " auth") != 3 {
				t.Errorf("got error.message %q, want three auth failures", msg)
			}
			rep := mustErrorReply(t, r, stream, http.StatusServiceUnavailable, "service_unavailable")
			if n, err := strconv.Atoi(rep.header.Get("Retry-After")); err != nil || n < 1 {
				t.Errorf("got Retry-After %q, want whole seconds >= 1", rep.header.Get("Retry-After"))
			}
			if got := attempts(rep); got != 0 {
				t.Errorf("got X-LLMRouter-Attempts %d, want 0", got)
			}
			assertCalls(t, ups, 1, 1, 1)
		})
	}
}

// TestRequestDeadline: when every provider hangs past limits.request_timeout
// the client gets 504 at the deadline (docs/ARCHITECTURE.md, "HTTP
// surface").
func TestRequestDeadline(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(modeName(stream), func(t *testing.T) {
			r, ups := threeProviders(t, openaiAPI, rigOptions{requestTimeout: 300 * time.Millisecond}, 10*time.Second, 10*time.Second)
			for _, u := range ups {
				u.always(fault{kind: hang})
			}
			rep := mustErrorReply(t, r, stream, http.StatusGatewayTimeout, "timeout")
			if rep.elapsed > hangBound {
				t.Errorf("took %s, want under %s", rep.elapsed, hangBound)
			}
			if got := ups[0].calls.Load() + ups[1].calls.Load(); got != 1 {
				t.Errorf("tier 0 saw %d calls, want 1 (the first hangs until the deadline)", got)
			}
		})
	}
}

// mustErrorReply sends one request and checks it got a well-formed error
// with status and error.code.
func mustErrorReply(t *testing.T, r *rig, stream bool, status int, code string) reply {
	t.Helper()
	rep, err := r.chat(stream)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if _, err := check(&rep, stream); err != nil {
		t.Fatalf("malformed answer: %v", err)
	}
	if rep.status != status {
		t.Fatalf("got status %d, want %d; body %s", rep.status, status, rep.body)
	}
	if got := gjson.GetBytes(rep.body, "error.code").Str; got != code {
		t.Errorf("got error.code %q, want %q", got, code)
	}
	return rep
}

func assertCalls(t *testing.T, ups [3]*upstream, want ...int32) {
	t.Helper()
	for i, u := range ups {
		if got := u.calls.Load(); got != want[i] {
			t.Errorf("%s saw %d calls, want %d", u.name, got, want[i])
		}
	}
}

// TestColdBurstIsNotThrottled: adaptive throttling (docs/ARCHITECTURE.md,
// "Selection") rejects
// only when providers refuse work; a burst of concurrent requests to a
// fresh router whose providers all answer must all be served.
func TestColdBurstIsNotThrottled(t *testing.T) {
	const burst = 32
	ups := [3]*upstream{newUpstream(t, "p1", openaiAPI), newUpstream(t, "p2", openaiAPI), newUpstream(t, "p3", anthropicAPI)}
	for _, u := range ups {
		// Slow enough that the whole burst is in flight before any answer.
		u.always(fault{kind: slowFirstToken, delay: 300 * time.Millisecond})
	}
	r := newRig(t, rigOptions{throttleK: 2},
		prov{up: ups[0], typ: "openai"}, prov{up: ups[1], typ: "openai_compatible"}, prov{up: ups[2], typ: "anthropic", tier: 1})
	statuses := make(chan int, burst)
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() {
			rep, err := r.chat(false)
			if err != nil {
				t.Errorf("request: %v", err)
				return
			}
			if _, err := check(&rep, false); err != nil {
				t.Errorf("malformed answer: %v", err)
			}
			statuses <- rep.status
		})
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for s := range statuses {
		got[s]++
	}
	if got[http.StatusOK] != burst {
		t.Errorf("got statuses %v for %d concurrent requests to healthy providers, want all 200", got, burst)
	}
}
