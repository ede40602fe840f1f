package nodesdk

import (
	"bufio"
	"context"
	"fmt"
	"io"
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
)

// The status page (docs/ARCHITECTURE.md, "Status page") in a real
// browser: status.test.mjs drives headless Chromium (Debian's chromium
// package, which .ci/run installs) with playwright-core against the
// router binary in front of two OpenAI-shaped fakes: flaky (tier 0),
// which the script turns to failing, and steady (tier 1). This test runs
// the fakes, the router, a page of another site for the cross-site POST,
// and a reader of the page's event stream, and then searches what that
// stream carried for the prompt and the client key.

const (
	statusClientKey = "sk-status-client-0123456789"
	statusPrompt    = "the launch code is tangerine-9931"
	statusHostile   = `<img src=x onerror="window.__pwned=1">`
)

// chromiumOrSkip returns node's path when Chromium and playwright-core
// are there, and skips t otherwise (fails in CI, where .ci/run installs
// both).
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat("/usr/bin/chromium")
	}
	if err == nil {
		_, err = os.Stat(filepath.Join("node_modules", "playwright-core"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium or node_modules/playwright-core missing in CI (.ci/run installs them): %v", err)
		}
		t.Skip("install Debian's chromium and run `npm ci` in test/node to test the status page in a browser")
	}
	return node
}

// statusFake is an OpenAI-shaped provider that answers chat completions
// with usage, or, while failing, 500 with an error message holding an
// <img onerror> (a provider's error is text the page must not run); its
// models list (the breaker's probe) fails too.
type statusFake struct {
	name    string
	failing atomic.Bool
	srv     *httptest.Server
	sawKey  atomic.Bool // a request carried the client's key
}

func newStatusFake(t *testing.T, name string) *statusFake {
	f := &statusFake{name: name}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(r.Header.Get("Authorization"), statusClientKey) || strings.Contains(string(body), statusClientKey) {
			f.sawKey.Store(true)
		}
		w.Header().Set("Content-Type", "application/json")
		if f.failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"server_error"}}`, statusHostile+" upstream exploded")
			return
		}
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"x","object":"model"}]}`)
			return
		}
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"%s-model","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":1000,"total_tokens":2000}}`, f.name)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func statusConfig(flaky, steady *statusFake) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
log: {level: info, format: json}
shutdown_timeout: 5s
auth:
  keys:
    - {name: team-a, key_env: STATUS_CLIENT_KEY, budget_usd: 100}
routing:
  retry: {max_attempts: 3, initial_backoff: 10ms, max_backoff: 50ms, multiplier: 2.0, jitter: 0.5, tier_wait: 0s}
breaker:
  failure_threshold: {consecutive: 3}
providers:
  - {name: flaky, type: openai, base_url: %q, api_key_env: STATUS_PROVIDER_KEY}
  - {name: steady, type: openai, base_url: %q, api_key_env: STATUS_PROVIDER_KEY}
models:
  - name: m
    targets:
      - {provider: flaky, model: flaky-model, tier: 0}
      - {provider: steady, model: steady-model, tier: 1}
pricing:
  - {model: flaky-model, input: 1000, output: 1000}
  - {model: steady-model, input: 1000, output: 1000}
`, flaky.srv.URL+"/v1", steady.srv.URL+"/v1")
}

// TestStatusPage runs status.test.mjs against the router binary.
func TestStatusPage(t *testing.T) {
	node := chromiumOrSkip(t)
	flaky, steady := newStatusFake(t, "flaky"), newStatusFake(t, "steady")
	path := filepath.Join(t.TempDir(), "router.yaml")
	if err := os.WriteFile(path, []byte(statusConfig(flaky, steady)), 0o600); err != nil {
		t.Fatal(err)
	}
	router := startRouter(t, []string{"STATUS_CLIENT_KEY=" + statusClientKey, "STATUS_PROVIDER_KEY=sk-provider"}, "serve", "--config", path)

	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		flaky.failing.Store(r.URL.Path == "/fail")
	}))
	defer control.Close()
	// Another site (localhost is not 127.0.0.1's site) whose page posts a
	// form to the admin listener's enable route as soon as it loads.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" enctype="text/plain" action="%s/admin/providers/flaky/enable">`+
			`<input name='{"x":"' value='"}'></form><script>document.getElementById("f").submit()</script>`, router.admin)
	}))
	defer evil.Close()
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)

	// Everything the page's event stream carries while the browser runs.
	ctx, stop := context.WithCancel(context.Background())
	var streamed strings.Builder
	var wg sync.WaitGroup
	req, _ := http.NewRequestWithContext(ctx, "GET", router.admin+"/admin/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			streamed.WriteString(sc.Text())
			streamed.WriteByte('\n')
		}
	}()

	shots := filepath.Join("screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("status.test.mjs"); err != nil { // go test's cache: this test reads it
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "--test", "--test-concurrency=1", "status.test.mjs")
	cmd.Env = append(os.Environ(), "ADMIN_URL="+router.admin, "API_URL="+router.api, "CLIENT_KEY="+statusClientKey,
		"PROMPT="+statusPrompt, "HOSTILE="+statusHostile, "CONTROL_URL="+control.URL, "EVIL_URL="+evilURL, "SHOTS="+shots)
	out, err := cmd.CombinedOutput()
	stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("node --test status.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)

	got := streamed.String()
	if !strings.Contains(got, "event: state") || !strings.Contains(got, `"id":"status-served"`) {
		t.Errorf("the event stream carried no state or not the served request:\n%.2000s", got)
	}
	for _, never := range []string{statusPrompt, statusClientKey, "sk-provider"} {
		if strings.Contains(got, never) {
			t.Errorf("the event stream carried %q", never)
		}
	}
	if flaky.sawKey.Load() || steady.sawKey.Load() {
		t.Error("a provider saw the client's key")
	}
}
