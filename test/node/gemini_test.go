package nodesdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// geminiMarker is in the file Gemini CLI's read_file tool reads; the
// fakes' final answer quotes the tool result, so the marker in the CLI's
// answer proves the whole loop.
const geminiMarker = "the marker is amber-heron-7"

// geminiOrSkip returns node's path and Gemini CLI's entry point, skipping
// t when either is missing, except in CI.
func geminiOrSkip(t *testing.T) (node, cli string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		cli, err = filepath.Abs(filepath.Join("node_modules", "@google", "gemini-cli", "bundle", "gemini.js"))
	}
	if err == nil {
		_, err = os.Stat(cli)
	}
	if err == nil {
		_, err = os.Stat(filepath.Join("node_modules", "@google", "genai"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or Gemini CLI missing in CI (.ci/run runs npm ci): %v", err)
		}
		t.Skip("run `npm ci` in test/node to drive the router with Gemini CLI")
	}
	return node, cli
}

// geminiRead is the call the fakes make Gemini CLI run: read_file of a
// file in its working directory.
func geminiRead(t *testing.T) (dir string, call toolCall) {
	t.Helper()
	dir = t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte(geminiMarker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]string{"file_path": file})
	return dir, toolCall{Name: "read_file", Input: string(input)}
}

// runGemini runs `gemini -p prompt --yolo` in dir against the router's
// root baseURL with key, in an environment of its own (a fresh HOME whose
// settings pick API-key auth and turn off telemetry, update checks and
// folder trust; no proxy), and returns its answer.
func runGemini(t *testing.T, node, cli, dir, baseURL, key, prompt string) string {
	t.Helper()
	home := t.TempDir()
	settings := `{"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},` +
		`"telemetry":{"enabled":false},"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}}}`
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), claudeBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "-p", prompt, "--yolo")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GOOGLE_GEMINI_BASE_URL=" + baseURL, "GEMINI_API_KEY=" + key}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gemini -p still running after %s; stdout:\n%s\nstderr:\n%s", claudeBound, &stdout, &stderr)
	}
	if err != nil {
		t.Fatalf("gemini -p: %v; stdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	return stdout.String()
}

// runGeminiScript runs gemini.test.mjs against the router's root with key.
func runGeminiScript(t *testing.T, node, baseURL, key, model string) {
	t.Helper()
	if _, err := os.Stat("gemini.test.mjs"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "gemini.test.mjs")
	cmd.Env = append(cleanEnv(), "ROUTER_URL="+baseURL, "ROUTER_KEY="+key, "MODEL="+model)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test gemini.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// dying serves h's first n requests and answers every later one 503, as a
// provider that went down mid-conversation.
func dying(h http.Handler, n int64) http.Handler {
	var seen atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) > n {
			oaiError(w, http.StatusServiceUnavailable, "server_error", "", "The server is overloaded.")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestGeminiFrontDoor runs Gemini CLI (a tool loop: read_file and its
// output back to the model) and the Gen AI SDK script through the router
// binary onto a Gemini-format fake natively (one that enforces Gemini 3's
// thought signatures), onto OpenAI- and Anthropic-format fakes translated,
// and across a move from an OpenAI fake that dies after its first answer
// to the Gemini fake; then checks what the providers saw.
func TestGeminiFrontDoor(t *testing.T) {
	node, cli := geminiOrSkip(t)
	const clientKey, gemKey, oaiKey, antKey = "gemini-client-key", "gem-provider-key", "oai-provider-key", "ant-provider-key"
	for _, tc := range []struct {
		name   string
		native bool // every target a Gemini-format one
		moved  bool
		anthr  bool
	}{
		{name: "native", native: true},
		{name: "openai"},
		{name: "anthropic", anthr: true},
		{name: "moved", moved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, read := geminiRead(t)
			gem := newFakeGemini(t, "gemini-fake", gemKey, true, read)
			oai := newFakeOpenAI(t, "openai-fake", oaiKey, read)
			ant := newFakeAnthropic(t, "anthropic-fake", antKey, read)
			oaiURL := oai.srv.URL
			if tc.moved {
				d := httptestServer(t, dying(http.HandlerFunc(oai.serve), 1))
				oaiURL = d
			}
			var b strings.Builder
			b.WriteString("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nlog: {level: info, format: json}\nshutdown_timeout: 5s\n" +
				"auth: {api_keys_env: NODE_CLIENT_KEYS}\n" +
				"routing:\n  retry: {max_attempts: 3, initial_backoff: 10ms, max_backoff: 50ms, multiplier: 2.0, jitter: 0.5}\nproviders:\n")
			fmt.Fprintf(&b, "  - {name: gemini-fake, type: gemini, base_url: %q, api_key_env: NODE_GEMINI_KEY}\n", gem.srv.URL)
			fmt.Fprintf(&b, "  - {name: openai-fake, type: openai, base_url: %q, api_key_env: NODE_OPENAI_KEY}\n", oaiURL+"/v1")
			fmt.Fprintf(&b, "  - {name: anthropic-fake, type: anthropic, base_url: %q, api_key_env: NODE_ANTHROPIC_KEY}\n", ant.srv.URL)
			b.WriteString("models:\n")
			// Gemini CLI's model router asks a lite model for a JSON
			// verdict before each turn (gemini-3.5-flash-lite in 0.61): served by the Gemini fake in the
			// moved setup, so that the OpenAI fake's one answer is the
			// tool loop's first turn, and in the Anthropic one, whose fake
			// answers no JSON (the CLI retries such a verdict for a minute).
			if tc.moved || tc.anthr {
				b.WriteString("  - name: gemini-3.5-flash-lite\n    targets:\n      - {provider: gemini-fake, model: gemini-3-flash-lite-upstream}\n")
			}
			b.WriteString("  - name: \"gemini-*\"\n    targets:\n")
			switch {
			case tc.native:
				b.WriteString("      - {provider: gemini-fake, model: gemini-3-pro-upstream}\n")
			case tc.anthr:
				b.WriteString("      - {provider: anthropic-fake, model: claude-upstream-1}\n")
			case tc.moved:
				b.WriteString("      - {provider: openai-fake, model: gpt-upstream-1, tier: 0}\n      - {provider: gemini-fake, model: gemini-3-pro-upstream, tier: 1}\n")
			default:
				b.WriteString("      - {provider: openai-fake, model: gpt-upstream-1}\n")
			}
			cfg := filepath.Join(t.TempDir(), "router.yaml")
			if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"NODE_CLIENT_KEYS=" + clientKey, "NODE_GEMINI_KEY=" + gemKey, "NODE_OPENAI_KEY=" + oaiKey, "NODE_ANTHROPIC_KEY=" + antKey}
			l := startRouter(t, env, "serve", "--config", cfg)

			out := runGemini(t, node, cli, dir, l.api, clientKey, "Read notes.txt and tell me the marker it holds.")
			if !strings.Contains(out, geminiMarker) {
				t.Errorf("gemini -p answered %q, want the read_file tool's output (%q)", out, geminiMarker)
			}
			if !tc.moved {
				runGeminiScript(t, node, l.api, clientKey, "gemini-2.5-flash")
			}
			checkGeminiProviders(t, tc.native || tc.moved, gem, oai, ant, clientKey)
		})
	}
}

// httptestServer serves h on a new local server that stops when t ends.
func httptestServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// checkGeminiProviders checks that the client's key reached no provider,
// and that a native setup's Gemini fake got Gemini's own requests.
func checkGeminiProviders(t *testing.T, native bool, gem *fakeGemini, oai *fakeOpenAI, ant *fakeAnthropic, clientKey string) {
	t.Helper()
	var all []exchange
	all = append(all, gem.requests()...)
	all = append(all, oai.requests()...)
	all = append(all, ant.requests()...)
	for _, e := range all {
		for k, vs := range e.Header {
			for _, v := range vs {
				if strings.Contains(v, clientKey) {
					t.Errorf("%s %s carried the client's key in %s", e.Method, e.URI, k)
				}
			}
		}
		if strings.Contains(e.URI, clientKey) || bytes.Contains(e.Body, []byte(clientKey)) {
			t.Errorf("%s %s carried the client's key", e.Method, e.URI)
		}
	}
	if !native {
		return
	}
	n := 0
	for _, e := range gem.requests() {
		if strings.Contains(e.URI, ":streamGenerateContent") && strings.Contains(e.URI, "gemini-3-pro-upstream") {
			n++
		}
	}
	if n == 0 {
		t.Errorf("the Gemini fake got no streamGenerateContent for its model; got %d requests", len(gem.requests()))
	}
}
