package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/redistest"
)

// testBinaryKeys: named client keys, prices and budgets on the real
// binary (docs/ARCHITECTURE.md, "Client keys and spend"), in front of an
// OpenAI fake that reports usage (5 completion tokens an answer, priced
// at $1 each: $5 a request), streams included when asked.
func testBinaryKeys(t *testing.T, bin string) {
	t.Run("budget, allow-list, rpm, prices", func(t *testing.T) { testKeysBudget(t, bin) })
	t.Run("concurrent clients", func(t *testing.T) { testKeysConcurrent(t, bin) })
	t.Run("spend survives a restart", func(t *testing.T) { testKeysRestart(t, bin) })
	t.Run("one budget across a fleet", func(t *testing.T) { testKeysFleet(t, bin) })
	t.Run("hostile", func(t *testing.T) { testKeysHostile(t, bin) })
}

// Client keys of the scenarios' configs.
const (
	cappedSecret  = "sk-capped-0123456789"
	otherSecret   = "sk-other-0123456789"
	limitedSecret = "sk-limited-0123456789"
)

// keysFake is an OpenAI chat provider that reports usage: 10 prompt
// tokens (8 of them read from its cache when the prompt says
// "cache-hit") and 5 completion tokens, in the answer or, when the
// request asked for it, in a stream's usage chunk.
type keysFake struct {
	srv *httptest.Server
	// calls counts chat calls; askedUsage the streams that asked for
	// usage.
	calls, streams, askedUsage atomic.Int32
	delay                      atomic.Int64 // before answering, ns
}

func newKeysFake(t *testing.T) *keysFake {
	t.Helper()
	f := &keysFake{}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *keysFake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-fake","object":"model"}]}`)
		return
	}
	f.calls.Add(1)
	if d := time.Duration(f.delay.Load()); d > 0 {
		time.Sleep(d)
	}
	cached := 0
	if strings.Contains(string(body), "cache-hit") {
		cached = 8
	}
	usage := fmt.Sprintf(`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":%d}}`, cached)
	if !gjson.GetBytes(body, "stream").Bool() {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-k","object":"chat.completion","created":1767225600,"model":"gpt-fake",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"five tokens of answer"},"finish_reason":"stop"}],"usage":`+usage+`}`)
		return
	}
	f.streams.Add(1)
	asked := gjson.GetBytes(body, "stream_options.include_usage").Bool()
	if asked {
		f.askedUsage.Add(1)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) string {
		return `data: {"id":"chatcmpl-k","object":"chat.completion.chunk","created":1767225600,"model":"gpt-fake","choices":[{"index":0,"delta":` +
			delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	io.WriteString(w, chunk(`{"role":"assistant","content":""}`, "null")+chunk(`{"content":"five tokens"}`, "null")+
		chunk(`{"content":" of answer"}`, "null")+chunk(`{}`, `"stop"`))
	if asked {
		io.WriteString(w, `data: {"id":"chatcmpl-k","object":"chat.completion.chunk","created":1767225600,"model":"gpt-fake","choices":[],"usage":`+usage+"}\n\n")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// keysConfig is a router on f with the named keys capped and other ($50 a
// day each; other's secret given as its SHA-256), limited (model m only,
// 2 requests a minute), the anonymous key clientKey, and prices of $1 a
// completion token for gpt-fake and, for gpt-cached, $1 a plain prompt
// token, $0.10 a cached one. top is more top-level YAML.
func keysConfig(f *keysFake, top string) binConfig {
	sum := sha256.Sum256([]byte(otherSecret))
	return binConfig{
		env: []string{"E2E_CAPPED_KEY=" + cappedSecret, "E2E_LIMITED_KEY=" + limitedSecret},
		custom: func() string {
			return fmt.Sprintf(`log: {level: warn, format: text}
limits: {request_timeout: 30s}
%s
auth:
  api_keys_env: E2E_CLIENT_KEYS
  keys:
    - {name: capped, key_env: E2E_CAPPED_KEY, budget_usd: 50, budget_period: day}
    - {name: other, key_sha256: %s, budget_usd: 50, budget_period: day}
    - {name: limited, key_env: E2E_LIMITED_KEY, models: [m], rpm: 2}
pricing:
  - {model: gpt-fake, input: 0, output: 1000000}
  - {provider: fake, model: gpt-cached, input: 1000000, cached_input: 100000, output: 0}
providers:
  - {name: fake, type: openai, base_url: %s/v1, api_key_env: %s}
models:
  - {name: m, targets: [{provider: fake, model: gpt-fake, tier: 0}]}
  - {name: other-model, targets: [{provider: fake, model: gpt-fake, tier: 0}]}
  - {name: cached, targets: [{provider: fake, model: gpt-cached, tier: 0}]}
`, top, hex.EncodeToString(sum[:]), f.srv.URL, openaiKeyEnv)
		},
	}
}

// keysSend sends one chat completion for model with the client key
// secret ("" none), max_tokens 5 (or maxTokens when > 0).
func (p *routerProc) keysSend(secret, model string, stream bool, prompt string, maxTokens int) (reply, error) {
	if maxTokens <= 0 {
		maxTokens = 5
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":%v}`, model, prompt, maxTokens, stream)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.api+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("sending: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// keyRow is one row of GET /admin/keys as the scenarios read it.
type keyRow struct {
	Name         string   `json:"name"`
	SpendUSD     float64  `json:"spend_usd"`
	BudgetUSD    float64  `json:"budget_usd"`
	RemainingUSD *float64 `json:"remaining_usd"`
	ResetsAt     *string  `json:"resets_at"`
	RPMInUse     int64    `json:"rpm_in_use"`
	Shared       bool     `json:"shared"`
}

func (p *routerProc) keys(t *testing.T) map[string]keyRow {
	t.Helper()
	resp, err := p.client.Get(p.admin + "/admin/keys")
	if err != nil {
		t.Fatalf("GET /admin/keys: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Keys []keyRow `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("decoding /admin/keys: %v", err)
	}
	out := map[string]keyRow{}
	for _, k := range body.Keys {
		out[k.Name] = k
	}
	return out
}

// metric returns the value of the series whose line starts with series
// (name and labels as exposed) on the router's /metrics; NaN when absent.
func (p *routerProc) metric(t *testing.T, series string) float64 {
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
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return v
		}
	}
	return math.NaN()
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// spend waits up to 5 s for the named key's spend on /admin/keys to be
// want (a request is settled just after its answer is written) and
// returns the last value read.
func (p *routerProc) spend(t *testing.T, key string, want float64) float64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := p.keys(t)[key].SpendUSD
		if near(got, want) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// toMidnight is the time until the next UTC midnight.
func toMidnight() time.Duration {
	now := time.Now().UTC()
	return now.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now)
}

// testKeysBudget: $5 requests on a $50 daily budget: exactly ten served
// one after the other (streams that did not ask for usage cost the same,
// the router asks for it and hides it), the eleventh 429 budget_exceeded
// with Retry-After to UTC midnight, and the provider sees no eleventh;
// another key is unaffected; a model outside a key's allow-list is 403,
// a key's own rpm 429, an unknown key 401, an anonymous key served;
// /admin/keys, router keys and the metrics agree; cached input is priced
// at its own rate.
func testKeysBudget(t *testing.T, bin string) {
	f := newKeysFake(t)
	p := startRouter(t, bin, keysConfig(f, ""))
	for i := range 10 {
		stream := i%2 == 1
		rep, err := p.keysSend(cappedSecret, "m", stream, "hi", 0)
		if err != nil || rep.status != http.StatusOK {
			t.Fatalf("request %d: %v %d %s", i+1, err, rep.status, rep.body)
		}
		if !stream {
			if got := rep.header.Get("X-LLMRouter-Cost-USD"); got != "5" {
				t.Errorf("request %d: X-LLMRouter-Cost-USD %q, want 5", i+1, got)
			}
			continue
		}
		if strings.Contains(string(rep.body), `"usage"`) {
			t.Errorf("request %d: a stream that did not ask for usage shows it: %s", i+1, rep.body)
		}
	}
	if got, want := f.askedUsage.Load(), f.streams.Load(); got != want || want != 5 {
		t.Errorf("the provider was asked for usage by %d of %d streams, want all 5", got, want)
	}
	if got := p.spend(t, "capped", 50); !near(got, 50) {
		t.Errorf("after 5 whole answers and 5 streams: spend %g, want 50 (streams priced as whole answers)", got)
	}
	calls := f.calls.Load()
	rep, err := p.keysSend(cappedSecret, "m", false, "hi", 0)
	if err != nil || rep.status != http.StatusTooManyRequests || gjson.GetBytes(rep.body, "error.code").Str != "budget_exceeded" {
		t.Fatalf("request 11: %v %d %s, want 429 budget_exceeded", err, rep.status, rep.body)
	}
	ra, _ := strconv.Atoi(rep.header.Get("Retry-After"))
	if want := int(math.Ceil(toMidnight().Seconds())); ra < want-5 || ra > want+5 {
		t.Errorf("Retry-After %q, want about %d (UTC midnight)", rep.header.Get("Retry-After"), want)
	}
	// A spent budget is final at every front door, in its own shape: the
	// SDKs (and the coding agents on them) would otherwise retry each 429
	// (issue 34, item 4).
	for _, c := range []struct{ path, body, codePath string }{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}`, "error.code"},
		{"/v1/responses", `{"model":"m","input":"hi","max_output_tokens":16}`, "error.code"},
		{"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "error.type"},
	} {
		rep, err := p.post(c.path, cappedSecret, c.body, "Anthropic-Version", "2023-06-01")
		want := "budget_exceeded"
		if c.path == "/v1/messages" {
			want = "rate_limit_error"
		}
		if err != nil || rep.status != http.StatusTooManyRequests || gjson.GetBytes(rep.body, c.codePath).Str != want {
			t.Errorf("%s over the budget: %v %d %s, want 429 %s", c.path, err, rep.status, rep.body, want)
		}
		if got := rep.header.Get("X-Should-Retry"); got != "false" {
			t.Errorf("%s over the budget: x-should-retry %q, want false", c.path, got)
		}
	}
	if f.calls.Load() != calls {
		t.Errorf("the provider saw a request over the budget")
	}

	for _, c := range []struct {
		name, secret, model string
		status              int
		code                string
	}{
		{"another key is unaffected", otherSecret, "m", 200, ""},
		{"outside the allow-list", limitedSecret, "other-model", 403, "model_not_allowed"},
		{"within rpm", limitedSecret, "m", 200, ""},
		{"within rpm, again", limitedSecret, "m", 200, ""},
		{"over the key's rpm", limitedSecret, "m", 429, "rate_limit_exceeded"},
		{"unknown key", "sk-nobody", "m", 401, "invalid_api_key"},
		{"no key", "", "m", 401, "invalid_api_key"},
		{"anonymous key", clientKey, "other-model", 200, ""},
	} {
		rep, err := p.keysSend(c.secret, c.model, false, "hi", 0)
		if err != nil || rep.status != c.status || gjson.GetBytes(rep.body, "error.code").Str != c.code {
			t.Errorf("%s: %v %d %s, want %d %s", c.name, err, rep.status, rep.body, c.status, c.code)
		}
		if c.status == 429 && rep.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", c.name)
		}
	}

	// Cached input at its own rate: 2 plain prompt tokens at $1 and 8
	// cached at $0.10, against 10 plain ones.
	for _, c := range []struct {
		prompt, want string
	}{{"cache-hit, the follow-up turn", "2.8"}, {"a new conversation", "10"}} {
		rep, err := p.keysSend(otherSecret, "cached", false, c.prompt, 0)
		if err != nil || rep.status != 200 || rep.header.Get("X-LLMRouter-Cost-USD") != c.want {
			t.Errorf("%s: %v %d cost %q, want 200 costing %s", c.prompt, err, rep.status, rep.header.Get("X-LLMRouter-Cost-USD"), c.want)
		}
	}

	// /admin/keys, router keys and the metrics agree (a request is
	// settled just after its answer is written: wait for the last).
	p.spend(t, "other", 17.8)
	rows := p.keys(t)
	capped, other := rows["capped"], rows["other"]
	if !near(capped.SpendUSD, 50) || capped.RemainingUSD == nil || *capped.RemainingUSD != 0 || capped.ResetsAt == nil {
		t.Errorf("/admin/keys capped: %+v, want 50 spent, 0 left, a reset", capped)
	}
	if !near(other.SpendUSD, 5+2.8+10) || other.RemainingUSD == nil || !near(*other.RemainingUSD, 50-17.8) {
		t.Errorf("/admin/keys other: %+v, want 17.8 spent", other)
	}
	for key, want := range map[string]float64{"capped": 50, "other": 17.8, "limited": 10, "": 5} {
		if got := p.metric(t, `llmrouter_client_spend_usd_total{key="`+key+`"}`); !near(got, want) {
			t.Errorf("client_spend_usd_total{key=%q} %g, want %g", key, got, want)
		}
	}
	if got := p.metric(t, `llmrouter_client_budget_remaining_usd{key="capped"}`); got != 0 {
		t.Errorf("client_budget_remaining_usd{capped} %g, want 0", got)
	}
	if got := p.metric(t, `llmrouter_client_rejections_total{key="capped",reason="budget"}`); got != 4 {
		t.Errorf("client_rejections_total{capped,budget} %g, want 4 (request 11, then one at each front door)", got)
	}
	for reason, want := range map[string]float64{"model": 1, "rate": 1} {
		if got := p.metric(t, `llmrouter_client_rejections_total{key="limited",reason="`+reason+`"}`); got != want {
			t.Errorf("client_rejections_total{limited,%s} %g, want %g", reason, got, want)
		}
	}
	if got := p.metric(t, `llmrouter_cost_usd_total{model="m",provider="fake"}`); !near(got, 50+5+10) {
		t.Errorf("cost_usd_total{m,fake} %g, want 65 (the anonymous request was other-model)", got)
	}
	out, err := exec.Command(bin, "keys", "--admin", p.admin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "capped") || !strings.Contains(string(out), "$50.00") || !strings.Contains(string(out), "$17.80") {
		t.Errorf("router keys: %v\n%s", err, out)
	}
	p.stop()
	for _, secret := range []string{cappedSecret, otherSecret, limitedSecret} {
		if strings.Contains(p.stderr.String(), secret) {
			t.Errorf("the router's log shows a client secret")
		}
	}
}

// testKeysConcurrent: eight clients at once on a $50 budget of $5
// requests (estimated at $1: max_tokens 1) are served between 10 and 18
// times, never more; every refusal is budget_exceeded.
func testKeysConcurrent(t *testing.T, bin string) {
	f := newKeysFake(t)
	f.delay.Store(int64(20 * time.Millisecond))
	p := startRouter(t, bin, keysConfig(f, ""))
	var served, refused atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				rep, err := p.keysSend(cappedSecret, "m", false, "hi", 1)
				switch {
				case err != nil:
					t.Errorf("request: %v", err)
					return
				case rep.status == http.StatusOK:
					served.Add(1)
				case rep.status == http.StatusTooManyRequests && gjson.GetBytes(rep.body, "error.code").Str == "budget_exceeded":
					refused.Add(1)
					return
				default:
					t.Errorf("got %d %s", rep.status, rep.body)
					return
				}
			}
		})
	}
	wg.Wait()
	n := served.Load()
	t.Logf("8 concurrent clients, $5 requests on $50: %d served", n)
	if n < 10 || n > 18 {
		t.Errorf("served %d, want 10 to 18", n)
	}
	if int32(f.calls.Load()) != n {
		t.Errorf("the provider saw %d calls, %d were served", f.calls.Load(), n)
	}
	if got := p.spend(t, "capped", 5*float64(n)); !near(got, 5*float64(n)) {
		t.Errorf("spend %g, want %d", got, 5*n)
	}
	p.stop()
}

// testKeysRestart: a key's spend this period survives a restart on the
// state file: $45 spent, then a restart, then one more request served and
// the next refused.
func testKeysRestart(t *testing.T, bin string) {
	f := newKeysFake(t)
	cfg := keysConfig(f, "state_file: "+filepath.Join(t.TempDir(), "state.json"))
	p := startRouter(t, bin, cfg)
	for i := range 9 {
		if rep, err := p.keysSend(cappedSecret, "m", i%2 == 0, "hi", 0); err != nil || rep.status != 200 {
			t.Fatalf("request %d: %v %d", i+1, err, rep.status)
		}
	}
	p.spend(t, "capped", 45) // the last request settled before the shutdown's save
	p.stop()
	q := startRouter(t, bin, cfg)
	if row := q.keys(t)["capped"]; !near(row.SpendUSD, 45) {
		t.Fatalf("after the restart: spend %g, want 45", row.SpendUSD)
	}
	if rep, err := q.keysSend(cappedSecret, "m", false, "hi", 0); err != nil || rep.status != 200 {
		t.Fatalf("the tenth: %v %d", err, rep.status)
	}
	if rep, err := q.keysSend(cappedSecret, "m", false, "hi", 0); err != nil || rep.status != 429 {
		t.Fatalf("the eleventh: %v %d %s, want 429", err, rep.status, rep.body)
	}
	q.stop()
}

// testKeysFleet: three routers sharing Redis serve sequential $5
// requests, round robin, on one $50 budget: 10 (11 at most); a key's rpm
// 2 holds across the three (2 served in the minute, not 6). Redis killed
// mid-budget: no request fails, and the spend made meanwhile is in Redis
// once it is back.
func testKeysFleet(t *testing.T, bin string) {
	srv := redistest.Start(t)
	f := newKeysFake(t)
	cfg := keysConfig(f, fleetTop(srv.URL()))
	routers := startFleet(t, bin, 3, cfg)
	served := 0
	for i := range 15 {
		rep, err := routers[i%3].keysSend(cappedSecret, "m", false, "hi", 0)
		switch {
		case err != nil:
			t.Fatalf("request %d: %v", i+1, err)
		case rep.status == 200:
			served++
		case rep.status != 429:
			t.Fatalf("request %d: %d %s", i+1, rep.status, rep.body)
		}
	}
	t.Logf("3 routers sharing Redis, $5 requests on $50: %d served", served)
	if served < 10 || served > 11 {
		t.Errorf("served %d, want 10 (11 at most)", served)
	}
	for _, p := range routers {
		if row := p.keys(t)["capped"]; !row.Shared || row.SpendUSD < 50 {
			t.Errorf("a router's row: %+v, want the fleet's spend (50 or more), shared", row)
		}
	}

	// The key limited (rpm 2, no budget), round robin on the three: its
	// bucket is the fleet's.
	limitedSend := func(p *routerProc, what string) int {
		rep, err := p.keysSend(limitedSecret, "m", false, "hi", 0)
		switch {
		case err != nil:
			t.Fatalf("%s: %v", what, err)
		case rep.status == 429 && !strings.Contains(string(rep.body), "rate_limit_exceeded"):
			t.Fatalf("%s: 429 %s, want rate_limit_exceeded", what, rep.body)
		case rep.status != 200 && rep.status != 429:
			t.Fatalf("%s: %d %s", what, rep.status, rep.body)
		}
		return rep.status
	}
	servedLimited := 0
	for i := range 9 {
		if limitedSend(routers[i%3], fmt.Sprintf("limited request %d", i+1)) == 200 {
			servedLimited++
		}
	}
	t.Logf("3 routers sharing Redis, a key with rpm 2: %d of 9 served", servedLimited)
	if servedLimited != 2 {
		t.Errorf("the key with rpm 2: %d served on three routers, want 2", servedLimited)
	}
	if row := routers[0].keys(t)["limited"]; row.RPMInUse != 2 {
		t.Errorf("limited's row: rpm_in_use %d, want 2 (the fleet's)", row.RPMInUse)
	}

	// The key other: $10 with Redis, $15 on one router while it is away.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	a := routers[0]
	for range 2 {
		if rep, err := a.keysSend(otherSecret, "m", false, "hi", 0); err != nil || rep.status != 200 {
			t.Fatalf("with Redis: %v %d", err, rep.status)
		}
	}
	key := "llmrouter:{key:other}:spend:day:" + time.Now().UTC().Format(time.DateOnly)
	waitRedis := func(want int64, within time.Duration) int64 {
		deadline := time.Now().Add(within)
		for {
			got, _ := rdb.Get(context.Background(), key).Int64()
			if got >= want || time.Now().After(deadline) {
				return got
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The additions are written off the request path: wait for both.
	if got := waitRedis(10e9, 5*time.Second); got != 10e9 {
		t.Fatalf("Redis holds $%g for other, want $10", float64(got)/1e9)
	}
	srv.Stop()
	for i := range 3 {
		if rep, err := a.keysSend(otherSecret, "m", false, "hi", 0); err != nil || rep.status != 200 {
			t.Fatalf("request %d without Redis: %v %d %s", i+1, err, rep.status, rep.body)
		}
	}
	// Redis away: the limited key is decided on each router at once
	// (its own rpm there), and no request fails.
	for i, p := range routers {
		start := time.Now()
		limitedSend(p, fmt.Sprintf("limited without Redis on router %d", i+1))
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("limited without Redis on router %d took %v", i+1, took)
		}
	}
	srv.Start() // empty: no persistence
	deadline := time.Now().Add(10 * time.Second)
	for a.metric(t, "llmrouter_shared_state_up") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the shared state not back up within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rep, err := a.keysSend(otherSecret, "m", false, "hi", 0); err != nil || rep.status != 200 {
		t.Fatalf("back with Redis: %v %d", err, rep.status)
	}
	if got := waitRedis(20e9, 5*time.Second); got != 20e9 {
		t.Errorf("Redis holds $%g for other, want $20: the $15 spent while it was away and the $5 after", float64(got)/1e9)
	}
	for _, p := range routers {
		p.stop()
	}
}
