package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmrouter/llmrouter/internal/admin"
	"github.com/llmrouter/llmrouter/internal/config"
)

// syncBuffer is a log sink safe for the daemon's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startFile writes yaml to a config file and starts the daemon on it.
func startFile(t *testing.T, yaml string, hooks ...func(*Daemon)) (*Daemon, string, *syncBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:0")
	t.Setenv("LLMROUTER_ADMIN_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	d, err := start(cfg, path, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), testOptions, hooks...)
	if err != nil {
		t.Fatal(err)
	}
	return d, path, logs
}

func (d *Daemon) url(path string) string      { return "http://" + d.apiLn.Addr().String() + path }
func (d *Daemon) adminURL(path string) string { return "http://" + d.adminLn.Addr().String() + path }

func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const reloadBase = `
providers:
  - {name: keep, type: simulated, simulated: {reply: "kept"}}
models:
  - name: m
    targets: [{provider: keep, model: x}]
`

func TestReload(t *testing.T) {
	results := make(chan error, 8)
	d, path, _ := startFile(t, reloadBase, func(d *Daemon) { d.onReload = func(err error) { results <- err } })
	defer d.Shutdown()
	for i := 0; i < 3; i++ {
		if code, _, body := post(t, d.url("/v1/chat/completions"), `{"model":"m","messages":[{"role":"user","content":"x"}]}`); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}

	t.Run("valid change applied through the file watcher, state kept", func(t *testing.T) {
		next := reloadBase + "  - name: m2\n    targets: [{provider: keep, model: y}]\n"
		if err := os.WriteFile(path, []byte(next), 0o600); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("reload failed: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no reload after the file changed")
		}
		if code, _, body := post(t, d.url("/v1/chat/completions"), `{"model":"m2","messages":[{"role":"user","content":"x"}]}`); code != 200 {
			t.Fatalf("new model: %d %s", code, body)
		}
		if got := admin.Providers(d.routes)[0].Stats.Requests; got != 4 {
			t.Errorf("unchanged provider has %d requests in its window, want 4 (3 before the reload + 1): state was lost", got)
		}
		if v := gauge(t, d, "llmrouter_config_last_reload_successful", nil); v != 1 {
			t.Errorf("config_last_reload_successful = %v", v)
		}
	})

	t.Run("invalid change rejected, old config serving", func(t *testing.T) {
		if err := os.WriteFile(path, []byte(reloadBase+"bogus_key: 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-results:
			if err == nil || !strings.Contains(err.Error(), "bogus_key") {
				t.Fatalf("reload error %v, want one naming bogus_key", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no reload after the file changed")
		}
		if code, _, body := post(t, d.url("/v1/chat/completions"), `{"model":"m2","messages":[{"role":"user","content":"x"}]}`); code != 200 {
			t.Fatalf("old config not serving: %d %s", code, body)
		}
		if v := gauge(t, d, "llmrouter_config_last_reload_successful", nil); v != 0 {
			t.Errorf("config_last_reload_successful = %v, want 0", v)
		}
	})

	t.Run("the status page's config: the table in force and both reloads", func(t *testing.T) {
		code, body := get(t, d.adminURL("/admin/config"))
		var c admin.ConfigStatus
		if err := json.Unmarshal([]byte(body), &c); err != nil || code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		if len(c.Reloads) != 2 || !c.Reloads[0].OK || c.Reloads[1].OK || !strings.Contains(c.Reloads[1].Error, "bogus_key") {
			t.Errorf("reloads %+v", c.Reloads)
		}
		if !strings.Contains(c.Table, "m2 ") || !strings.HasPrefix(c.Table, "MODEL") || c.Source != path {
			t.Errorf("source %q, table:\n%s", c.Source, c.Table)
		}
	})
}

// TestStatusPageStream: a request the router answered is in the ring the
// status page reads, and an open event stream neither outlives the
// daemon nor holds its shutdown (the admin server's Shutdown would
// otherwise wait its whole second for it).
func TestStatusPageStream(t *testing.T) {
	d, _, _ := startFile(t, reloadBase)
	resp, err := http.Get(d.adminURL("/admin/events"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	if code, _, body := post(t, d.url("/v1/chat/completions"), `{"model":"m","messages":[{"role":"user","content":"tangerine"}]}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: [{") && strings.Contains(line, `"model":"m"`) {
			if strings.Contains(line, "tangerine") {
				t.Error("the requests event holds the prompt")
			}
			break
		}
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for sc.Scan() {
		}
	}()
	start := time.Now()
	d.Shutdown()
	if took := time.Since(start); took >= time.Second {
		t.Errorf("shutdown took %v with an event stream open", took)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		resp.Body.Close()
		<-ended
		t.Error("the event stream outlived the daemon")
	}
}

func TestDrainCompletesStreamsAndRefusesNewConnections(t *testing.T) {
	cfg := `
shutdown_timeout: 10s
providers:
  - {name: slow, type: simulated, simulated: {first_token_delay: 1ms, token_interval: 20ms, reply: "one two three four five six seven eight nine ten eleven twelve"}}
models:
  - name: m
    targets: [{provider: slow, model: x}]
`
	listenersClosed := make(chan struct{})
	d, _, _ := startFile(t, cfg, func(d *Daemon) { d.api.RegisterOnShutdown(func() { close(listenersClosed) }) })
	resp, err := http.Post(d.url("/v1/chat/completions"), "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "data: ") {
		t.Fatalf("first event: %q %v", first, err)
	}
	exit := make(chan int, 1)
	go func() { exit <- d.Shutdown() }() // what SIGTERM does
	<-listenersClosed
	if code, _ := get(t, d.adminURL("/readyz")); code != 503 {
		t.Errorf("/readyz during drain = %d, want 503", code)
	}
	if _, err := http.Post(d.url("/v1/models"), "application/json", nil); err == nil {
		t.Error("a new connection was accepted during drain")
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream cut during drain: %v", err)
	}
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || !strings.Contains(first+string(rest), "twelve") {
		t.Errorf("stream did not complete: %q", rest)
	}
	if code := <-exit; code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// gauge reads one series from the daemon's registry; labels must match
// exactly the given subset.
func gauge(t *testing.T, d *Daemon, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				switch {
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
	}
	return -1
}

func matches(m *dto.Metric, labels map[string]string) bool {
	for k, v := range labels {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestMetricsAfterFaults(t *testing.T) {
	// Adaptive throttling off so the breaker alone decides (it would
	// otherwise start refusing the broken provider before five failures);
	// tier_wait 0s so each request meets the broken provider once and
	// fails over at once (the wait for the better tier is failover's).
	cfg := `
routing: {adaptive_throttle_k: 0, retry: {tier_wait: 0s}}
providers:
  - {name: broken, type: simulated, simulated: {failure_rate: 1, failure_status: 503}}
  - {name: fallback, type: simulated}
models:
  - name: m
    targets:
      - {provider: broken, model: x, tier: 0}
      - {provider: fallback, model: y, tier: 1}
`
	d, _, _ := startFile(t, cfg)
	defer d.Shutdown()
	const n = 8
	for i := 0; i < n; i++ {
		code, h, body := post(t, d.url("/v1/chat/completions"), `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		if code != 200 || h.Get("X-LLMRouter-Degraded") != "true" {
			t.Fatalf("request %d: %d degraded=%q %s", i, code, h.Get("X-LLMRouter-Degraded"), body)
		}
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"llmrouter_requests_total", map[string]string{"model": "m", "code": "200"}, n},
		{"llmrouter_degraded_responses_total", map[string]string{"model": "m"}, n},
		// The breaker opens after 5 consecutive failures; later requests
		// skip the broken provider without an attempt.
		{"llmrouter_upstream_requests_total", map[string]string{"provider": "broken", "kind": "overloaded"}, 5},
		{"llmrouter_upstream_requests_total", map[string]string{"provider": "fallback", "kind": "ok"}, n},
		{"llmrouter_fallbacks_total", map[string]string{"from_tier": "0", "to_tier": "1"}, 5},
		{"llmrouter_breaker_state", map[string]string{"provider": "broken"}, 2},
		{"llmrouter_breaker_state", map[string]string{"provider": "fallback"}, 0},
		{"llmrouter_breaker_transitions_total", map[string]string{"provider": "broken", "to": "open"}, 1},
		{"llmrouter_system_health", nil, 0.5},
		{"llmrouter_request_duration_seconds", map[string]string{"model": "m"}, n},
		{"llmrouter_tokens_total", map[string]string{"provider": "fallback", "type": "output"}, -2}, // present
	}
	// A request is counted when its handler returns, just after its
	// answer is flushed: the client can see the last answer first.
	for deadline := time.Now().Add(5 * time.Second); gauge(t, d, "llmrouter_requests_total", checks[0].labels) < n && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range checks {
		got := gauge(t, d, c.name, c.labels)
		if c.want == -2 {
			if got <= 0 {
				t.Errorf("%s%v = %v, want > 0", c.name, c.labels, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	code, text := get(t, d.adminURL("/metrics"))
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed in CI (.ci/run installs Debian's prometheus package)")
		}
		t.Skip("promtool not installed; `apt-get install prometheus` to run this check")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestProviderKeyNeverLeaks(t *testing.T) {
	const canary = "sk-canary-7f3a9c1e5b"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case strings.Contains(r.URL.Path, "models"):
			w.WriteHeader(401)
		case strings.Contains(string(body), "client-fault"):
			w.WriteHeader(400)
		default:
			w.WriteHeader(500)
		}
		// A careless provider echoing the key it was sent.
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+got+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer up.Close()
	t.Setenv("TEST_PROVIDER_KEY", canary)
	cfg := `
routing: {adaptive_throttle_k: 0, retry: {initial_backoff: 1ms, max_backoff: 2ms}}
providers:
  - {name: careless, type: openai_compatible, base_url: ` + up.URL + `/v1, api_key_env: TEST_PROVIDER_KEY}
models:
  - name: m
    targets: [{provider: careless, model: x}]
`
	d, _, logs := startFile(t, cfg)
	var seen strings.Builder
	for _, hdr := range []string{"client-fault", "server-fault"} {
		req, _ := http.NewRequest("POST", d.url("/v1/chat/completions"), strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"`+hdr+`"}]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen.Write(b)
		for k, v := range resp.Header {
			seen.WriteString(k + ": " + strings.Join(v, ",") + "\n")
		}
		if !strings.Contains(string(b), "[redacted]") {
			t.Errorf("%s error: %s (expected the echoed key to be redacted)", hdr, b)
		}
	}
	for _, path := range []string{"/admin/providers", "/metrics"} {
		_, body := get(t, d.adminURL(path))
		seen.WriteString(body)
	}
	d.Shutdown()
	seen.WriteString(logs.String())
	if strings.Contains(seen.String(), canary) {
		t.Errorf("the provider key leaked into a response, /admin, /metrics or the logs")
	}
}

func TestPprofIsOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := "pprof: " + map[bool]string{false: "false", true: "true"}[on] + "\n" + reloadBase
		d, _, _ := startFile(t, cfg)
		code, _ := get(t, d.adminURL("/debug/pprof/cmdline"))
		d.Shutdown()
		if want := map[bool]int{false: 404, true: 200}[on]; code != want {
			t.Errorf("pprof: %v: /debug/pprof/cmdline answered %d, want %d", on, code, want)
		}
	}
}
