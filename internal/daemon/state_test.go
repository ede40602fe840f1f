package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/llmrouter/llmrouter/internal/admin"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/statefile"
	"github.com/llmrouter/llmrouter/internal/warm"
)

// stateConfig is a config whose provider "broken" fails every call with
// 503 and trips after five, "fallback" serving model m after it, with
// state_file path.
func stateConfig(path string) string {
	return `
state_file: ` + path + `
routing: {adaptive_throttle_k: 0}
providers:
  - {name: broken, type: simulated, simulated: {failure_rate: 1, failure_status: 503}}
  - {name: fallback, type: simulated}
models:
  - name: m
    targets:
      - {provider: broken, model: x, tier: 0}
      - {provider: fallback, model: y, tier: 1}
`
}

// TestStateFileTroubleIsNeverFatal: whatever is wrong with the state
// file, the router starts, says why it ignored the file, serves, and saves
// a good one at shutdown where it can.
func TestStateFileTroubleIsNeverFatal(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		why     string // in the warning
		saves   bool   // shutdown can write a good file there
	}{
		{"corrupt", func(t *testing.T, path string) { write(t, path, `{"version":2,"providers":{`) }, "corrupt", true},
		{"empty", func(t *testing.T, path string) { write(t, path, "") }, "corrupt", true},
		{"newer version", func(t *testing.T, path string) {
			write(t, path, `{"version":3,"providers":["a layout this router does not know"]}`)
		}, "newer than this router", true},
		{"no version", func(t *testing.T, path string) { write(t, path, `{"providers":{}}`) }, "state version 0", true},
		{"a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is a directory", false},
		{"unreadable", func(t *testing.T, path string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads files whatever their mode")
			}
			write(t, path, `{"version":2,"providers":{}}`)
			if err := os.Chmod(path, 0); err != nil {
				t.Fatal(err)
			}
		}, "permission denied", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			tt.prepare(t, path)
			d, _, logs := startFile(t, stateConfig(path))
			if code, _, body := post(t, d.url("/v1/chat/completions"), `{"model":"m","messages":[{"role":"user","content":"x"}]}`); code != 200 {
				t.Errorf("serving after a bad state file: %d %s", code, body)
			}
			if code := d.Shutdown(); code != 0 {
				t.Errorf("shutdown exit %d", code)
			}
			if !strings.Contains(logs.String(), "ignoring state file") || !strings.Contains(logs.String(), tt.why) {
				t.Errorf("no warning naming %q in the logs:\n%s", tt.why, logs)
			}
			if !tt.saves {
				return
			}
			var raw json.RawMessage
			if err := statefile.Load(path, &raw); err != nil {
				t.Fatal(err)
			}
			if st, err := warm.Decode(raw); err != nil || len(st.Providers) != 2 {
				t.Errorf("shutdown saved %s (%v), want a good state of both providers", raw, err)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBreakerOpenSurvivesACrash: a breaker that opens is in the state file
// well within a second (not at the next 30s save), so a router killed then
// comes back with it open: the admin row, the gauge from the first scrape,
// and no request sent to the provider.
func TestBreakerOpenSurvivesACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	a, _, _ := startFile(t, stateConfig(path))
	defer a.Shutdown()
	for i := range 5 {
		if code, _, body := post(t, a.url("/v1/chat/completions"), `{"model":"m","messages":[{"role":"user","content":"x"}]}`); code != 200 {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	if g := gauge(t, a, "llmrouter_breaker_state", map[string]string{"provider": "broken"}); g != 2 {
		t.Fatalf("breaker_state{broken} = %v after five failures, want 2", g)
	}
	tripped := time.Now()
	var saved time.Duration
	for {
		b, _ := os.ReadFile(path)
		if st, err := warm.Decode(b); err == nil && st.Providers["broken"].Breaker != nil && st.Providers["broken"].Breaker.State == "open" {
			saved = time.Since(tripped)
			break
		}
		if time.Since(tripped) > time.Second {
			t.Fatalf("the open breaker was not in the state file a second after the trip: %s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A "restart" while a still runs: a never saves again before b reads.
	b, _, logs := startFile(t, stateConfig(path))
	defer b.Shutdown()
	if g := gauge(t, b, "llmrouter_breaker_state", map[string]string{"provider": "broken"}); g != 2 {
		t.Errorf("restarted: breaker_state{broken} = %v on the first scrape, want 2", g)
	}
	if g := gauge(t, b, "llmrouter_breaker_transitions_total", map[string]string{"provider": "broken", "to": "open"}); g != 1 {
		t.Errorf("restarted: breaker_transitions_total{broken,open} = %v, want 1", g)
	}
	for _, ps := range admin.Providers(b.routes) {
		if ps.Name == "broken" && (ps.State != "open" || ps.CooldownLeftSeconds < 28 || ps.CooldownLeftSeconds > 30 || ps.ConsecutiveTrips != 1) {
			t.Errorf("restarted row %+v, want open with about 30s of cooldown left after 1 trip", ps)
		}
	}
	if code, h, body := post(t, b.url("/v1/chat/completions"), `{"model":"m","messages":[{"role":"user","content":"x"}]}`); code != 200 || h.Get("X-LLMRouter-Provider") != "fallback" {
		t.Errorf("restarted: %d from %q %s, want 200 from fallback", code, h.Get("X-LLMRouter-Provider"), body)
	}
	if g := gauge(t, b, "llmrouter_upstream_requests_total", map[string]string{"provider": "broken", "kind": "overloaded"}); g != 0 {
		t.Errorf("restarted: %v attempts reached broken, want 0", g)
	}
	if !strings.Contains(logs.String(), `"msg":"restored learned state"`) {
		t.Errorf("no restore in the log:\n%s", logs)
	}
	t.Logf("the trip was in the state file %s after it", saved.Round(time.Millisecond))
}

// TestAnotherWriterIsNoticed: a router whose state file another process
// replaced since its last save warns (once in a while) and saves anyway:
// the newest save wins.
func TestAnotherWriterIsNoticed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	d, _, logs := startFile(t, stateConfig(path))
	defer d.Shutdown()
	d.saver.stop() // the saver loop: this test saves by hand
	d.saveState()
	d.saveState()
	if strings.Contains(logs.String(), "another process") {
		t.Fatalf("warned about another writer when there was none:\n%s", logs)
	}
	if err := statefile.Save(path, warm.State{Version: 2, Writer: "elsewhere pid 7"}); err != nil {
		t.Fatal(err)
	}
	d.saveState()
	d.saveState()
	if n := strings.Count(logs.String(), "replaced by another process"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, logs)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte(`"broken"`)) || bytes.Contains(b, []byte("elsewhere")) {
		t.Errorf("the router's save did not replace the other writer's: %s", b)
	}
}

// TestVersion1StateFileRestores: a state file an older router wrote
// (version 1: stats and learned limits) still restores both.
func TestVersion1StateFileRestores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	write(t, path, fmt.Sprintf(`{"version":1,"providers":{"broken":{"stats":{"version":1,"saved_at_unix_ms":%d,"bucket_ms":5000,`+
		`"buckets":[{"start_ago_ms":1000,"successes":7,"failures":0}],"since_success_ms":-1},"requests_limit":60}}}`, time.Now().UnixMilli()))
	d, _, logs := startFile(t, stateConfig(path))
	defer d.Shutdown()
	for _, ps := range admin.Providers(d.routes) {
		if ps.Name == "broken" && (ps.RPMLimit != 60 || ps.Stats.Requests != 7 || ps.State != "closed") {
			t.Errorf("restored from version 1: %+v, want 7 requests, rpm limit 60, closed", ps)
		}
	}
	if !strings.Contains(logs.String(), `"msg":"restored learned state","state_file":"`+path+`","providers":1,"version":1}`) {
		t.Errorf("no restore of one provider from version 1 in the log:\n%s", logs)
	}
}
