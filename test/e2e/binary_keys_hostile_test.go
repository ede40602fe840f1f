package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// testKeysHostile: issue 31's findings on client keys, each with its
// hostile input, on the real binary.
func testKeysHostile(t *testing.T, bin string) {
	t.Run("max_tokens 1e999 cannot overspend a budget", func(t *testing.T) { testKeysHostileMaxTokens(t, bin) })
	t.Run("the empty string's hash is refused", func(t *testing.T) { testKeysEmptyHash(t, bin) })
	t.Run("count_tokens within the key's rpm", func(t *testing.T) { testKeysCountTokens(t, bin) })
	t.Run("the model list follows the key", func(t *testing.T) { testKeysModelList(t, bin) })
}

// post sends body to path with the client key secret (x-api-key) and
// hdr (name, value pairs), and reads the whole answer.
func (p *routerProc) post(path, secret, body string, hdr ...string) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	method := http.MethodPost
	if body == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, p.api+path, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Api-Key", secret)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("sending: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, err
}

// testKeysHostileMaxTokens (finding 2): a key with $10 left of its $50
// budget, $5 requests: 21 concurrent Messages requests with max_tokens
// 1e999 (read as 2^53 before, an estimate saturating at MaxInt64
// nano-dollars that wrapped the reservations: on a $0.20 budget 21 were
// admitted and $1.707 spent) and chat's and completions' hostile values
// are 400s naming the field, and nothing reaches the provider; with the
// largest max_tokens accepted (2^31, an estimate far above what is left)
// they are served one at a time: 2 served, $50 spent, the rest 429.
func testKeysHostileMaxTokens(t *testing.T, bin string) {
	f := newKeysFake(t)
	f.delay.Store(int64(20 * time.Millisecond))
	p := startRouter(t, bin, keysConfig(f, ""))
	// capped's budget is $50: $40 of it spent first.
	for range 8 {
		if rep, err := p.keysSend(cappedSecret, "m", false, "hi", 1); err != nil || rep.status != http.StatusOK {
			t.Fatalf("spending: %v %d %s", err, rep.status, rep.body)
		}
	}
	msg := func(maxTokens string) string {
		return `{"model":"m","max_tokens":` + maxTokens + `,"messages":[{"role":"user","content":"hi"}]}`
	}
	concurrently := func(n int, send func() (reply, error)) []reply {
		out := make([]reply, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				rep, err := send()
				if err != nil {
					t.Errorf("request: %v", err)
				}
				out[i] = rep
			})
		}
		wg.Wait()
		return out
	}
	calls := f.calls.Load()
	for _, rep := range concurrently(21, func() (reply, error) {
		return p.post("/v1/messages", cappedSecret, msg("1e999"), "anthropic-version", "2023-06-01")
	}) {
		if rep.status != http.StatusBadRequest || gjson.GetBytes(rep.body, "error.type").Str != "invalid_request_error" ||
			!strings.HasPrefix(gjson.GetBytes(rep.body, "error.message").Str, "max_tokens:") {
			t.Fatalf("messages max_tokens 1e999: %d %s, want 400 invalid_request_error naming max_tokens", rep.status, rep.body)
		}
	}
	for _, body := range []string{
		`{"model":"m","max_tokens":9e18,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_completion_tokens":1e999,"messages":[{"role":"user","content":"hi"}]}`,
	} {
		rep, err := p.post("/v1/chat/completions", cappedSecret, body)
		if field := gjson.Get(body, "max_tokens").Exists(); err != nil || rep.status != http.StatusBadRequest ||
			gjson.GetBytes(rep.body, "error.param").Str != map[bool]string{true: "max_tokens", false: "max_completion_tokens"}[field] {
			t.Fatalf("chat %s: %v %d %s, want 400 naming the field", body, err, rep.status, rep.body)
		}
	}
	if rep, err := p.post("/v1/completions", cappedSecret, `{"model":"m","max_tokens":1e999,"prompt":"hi"}`); err != nil ||
		rep.status != http.StatusBadRequest || gjson.GetBytes(rep.body, "error.param").Str != "max_tokens" {
		t.Fatalf("completions max_tokens 1e999: %v %d %s", err, rep.status, rep.body)
	}
	if got := f.calls.Load() - calls; got != 0 {
		t.Fatalf("the provider saw %d hostile requests, want 0", got)
	}
	var served, refused int
	for _, rep := range concurrently(21, func() (reply, error) {
		return p.post("/v1/messages", cappedSecret, msg("2147483648"), "anthropic-version", "2023-06-01")
	}) {
		switch {
		case rep.status == http.StatusOK:
			served++
		case rep.status == http.StatusTooManyRequests:
			refused++
		default:
			t.Errorf("max_tokens 2^31: %d %s", rep.status, rep.body)
		}
	}
	t.Logf("21 concurrent requests of max_tokens 2^31 on the last $10 of $50: %d served, %d refused", served, refused)
	if served != 2 || refused != 19 {
		t.Errorf("served %d, refused %d; want 2 and 19 (an estimate above the budget runs alone)", served, refused)
	}
	if got := p.spend(t, "capped", 50); !near(got, 50) {
		t.Errorf("spend %g, want 50", got)
	}
	p.stop()
}

// testKeysEmptyHash (finding 6): `validate` refuses a key whose
// key_sha256 is the SHA-256 of the empty string (what sha256sum prints
// for an unset variable), naming the key; a router whose key it was
// accepted Unicode spaces as that key's credential.
func testKeysEmptyHash(t *testing.T, bin string) {
	f := newKeysFake(t)
	sum := sha256.Sum256(nil)
	c := keysConfig(f, "")
	yaml := strings.Replace(c.custom(), "- {name: limited, key_env: E2E_LIMITED_KEY,",
		"- {name: unset, key_sha256: "+hex.EncodeToString(sum[:])+"}\n    - {name: limited, key_env: E2E_LIMITED_KEY,", 1)
	path := filepath.Join(t.TempDir(), "router.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n"+yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "validate", "--config", path)
	cmd.Env = append([]string{openaiKeyEnv + "=sk-test", "E2E_CLIENT_KEYS=" + clientKey}, c.env...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "auth.keys[2].key_sha256: is the SHA-256 of the empty string") {
		t.Fatalf("validate: %v\n%s\nwant a failure naming auth.keys[2].key_sha256", err, out)
	}
}

// countFake is an Anthropic provider that counts tokens (42) and
// answers messages, counting its count_tokens calls.
type countFake struct {
	srv            *httptest.Server
	counts, helped atomic.Int32
}

func newCountFake(t *testing.T) *countFake {
	t.Helper()
	f := &countFake{}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/messages/count_tokens":
			f.counts.Add(1)
			io.WriteString(w, `{"input_tokens":42}`)
		case "/v1/messages":
			f.helped.Add(1)
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake","content":[{"type":"text","text":"hi"}],`+
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`)
		default:
			io.WriteString(w, `{"data":[{"type":"model","id":"claude-fake"}],"has_more":false}`)
		}
	}))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// testKeysCountTokens (finding 7): a key of rpm 2 spends both on
// messages; six count_tokens calls after it are answered 200 with the
// router's estimate and none reaches the provider (before, each did).
func testKeysCountTokens(t *testing.T, bin string) {
	f := newCountFake(t)
	p := startRouter(t, bin, binConfig{env: []string{"E2E_LIMITED_KEY=" + limitedSecret}, custom: func() string {
		return fmt.Sprintf(`log: {level: warn, format: text}
auth:
  keys:
    - {name: limited, key_env: E2E_LIMITED_KEY, rpm: 2}
providers:
  - {name: claude, type: anthropic, base_url: %s, api_key_env: %s}
models:
  - {name: m, targets: [{provider: claude, model: claude-fake}]}
`, f.srv.URL, anthropicKeyEnv)
	}})
	count := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 100) + `"}]}`
	av := []string{"anthropic-version", "2023-06-01"}
	if rep, err := p.post("/v1/messages/count_tokens", limitedSecret, count, av...); err != nil || rep.status != 200 ||
		gjson.GetBytes(rep.body, "input_tokens").Int() != 42 {
		t.Fatalf("first count: %v %d %s, want the provider's 42", err, rep.status, rep.body)
	}
	msg := `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	if rep, err := p.post("/v1/messages", limitedSecret, msg, av...); err != nil || rep.status != 200 {
		t.Fatalf("message: %v %d %s", err, rep.status, rep.body)
	}
	if rep, err := p.post("/v1/messages", limitedSecret, msg, av...); err != nil || rep.status != http.StatusTooManyRequests {
		t.Fatalf("message over rpm 2: %v %d %s, want 429", err, rep.status, rep.body)
	}
	before := f.counts.Load()
	for range 6 {
		rep, err := p.post("/v1/messages/count_tokens", limitedSecret, count, av...)
		if n := gjson.GetBytes(rep.body, "input_tokens").Int(); err != nil || rep.status != 200 || n == 42 || n < 100 {
			t.Fatalf("count over rpm: %v %d %s, want 200 and the router's estimate", err, rep.status, rep.body)
		}
	}
	if got := f.counts.Load() - before; got != 0 {
		t.Errorf("after rpm 2 was spent, %d counts reached the provider, want 0", got)
	}
	p.stop()
}

// testKeysModelList (finding 10): the key limited to model m sees only m
// in both list shapes; the others see all three.
func testKeysModelList(t *testing.T, bin string) {
	f := newKeysFake(t)
	p := startRouter(t, bin, keysConfig(f, ""))
	for _, tt := range []struct{ secret, want string }{
		{limitedSecret, "m"},
		{cappedSecret, "cached m other-model"},
	} {
		for _, hdr := range [][]string{nil, {"anthropic-version", "2023-06-01"}} {
			rep, err := p.post("/v1/models", tt.secret, "", hdr...)
			var ids []string
			for _, id := range gjson.GetBytes(rep.body, "data.#.id").Array() {
				ids = append(ids, id.Str)
			}
			if got := strings.Join(ids, " "); err != nil || rep.status != 200 || got != tt.want {
				t.Errorf("GET /v1/models %v: %v %d %q, want %q", hdr, err, rep.status, got, tt.want)
			}
		}
	}
	p.stop()
}
