package nodesdk

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Codex CLI (@openai/codex, pinned in package.json) through the router's
// Responses API (issue 34, item 1). What Codex 0.171 sends (captured
// against a recording fake before this was built): POST {base_url}/responses
// only (no WebSocket upgrade, no GET /models), stream true, store false,
// include ["reasoning.encrypted_content"], reasoning {summary: auto},
// parallel_tool_calls, prompt_cache_key and client_metadata (its session),
// the headers session-id, thread-id, x-client-request-id,
// x-codex-turn-metadata, x-codex-window-id, originator and its key as a
// Bearer token; input items of role developer and user (later function_call,
// function_call_output with fco_ ids, reasoning); tools: functions
// (exec_command, write_stdin, …), a namespace (multi_agent_v1), web_search,
// and with code mode a custom tool with a lark grammar. It expects a
// namespaced call back as a function_call with namespace and name.
//
// TestCodex runs `codex exec` against the router binary in four setups:
// native (gpt-* → the OpenAI fake's own Responses API), translated (gpt-*
// → the Anthropic fake), failover (gpt-* → an OpenAI fake answering 503
// in tier 0, the Anthropic fake in tier 1) and the embedded default (the
// simulated providers); and the first three again with
// supports_websockets = true (issue 34 item 2). In each, Codex must
// finish a tool loop (a tool call run and its output back to the model:
// on the fakes a shell command's) without the router answering any of
// its requests with a 4xx.
//
// What Codex 0.171 does with supports_websockets = true (captured against
// a recording server before the router served it): GET {base_url}/responses
// upgrading, no Origin, no subprotocol, permessage-deflate offered, the
// same headers as its POSTs and OpenAI-Beta: responses_websockets=2026-02-06;
// then one response.create text message at a time, each awaiting its
// response.completed: first a warm-up (generate: false, its developer
// message alone), then each turn with previous_response_id (the previous
// response on the same connection, store false) and only the new input
// items. An error event for an unknown previous_response_id makes it
// reconnect and resend the whole input; it sends no pings and ends by
// closing the socket.

// codexBound bounds one Codex run: generous, it catches hangs.
const codexBound = claudeBound

// codexMarker is what the fakes' shell command prints; their final
// answer quotes the tool's output, so the marker in Codex's last message
// proves the whole loop.
const codexMarker = "codex-marker-51"

// codexModel is what Codex asks for: a name gpt-* matches.
const codexModel = "gpt-5.1-codex"

// codexShell is the tool call the fakes make Codex run: its exec_command
// with a harmless echo.
var codexShell = toolCall{Name: "exec_command", Input: `{"cmd":"echo ` + codexMarker + `"}`}

// codexOrSkip returns node's path and Codex's launcher, which runs the
// native binary npm installs for linux-x64 (and other platforms) as an
// optional package: missing, t is skipped, except in CI.
func codexOrSkip(t *testing.T) (node, launcher string) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the pinned Codex binary is tested on linux-x64, not %s-%s", runtime.GOOS, runtime.GOARCH)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		launcher, err = filepath.Abs(filepath.Join("node_modules", "@openai", "codex", "bin", "codex.js"))
	}
	if err == nil {
		_, err = os.Stat(filepath.Join("node_modules", "@openai", "codex-linux-x64"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Codex missing in CI (.ci/run runs npm ci): %v", err)
		}
		t.Skip("run `npm ci` in test/node to drive the router with Codex")
	}
	return node, launcher
}

// runCodex runs `codex exec prompt` in a fresh directory, with a
// CODEX_HOME of its own whose config.toml names baseURL (ending in /v1)
// as a Responses API provider keyed by key (over WebSocket when
// websockets), and returns Codex's last message; it fails t unless Codex
// ended well.
func runCodex(t *testing.T, node, launcher, baseURL, key, model, prompt string, websockets bool) string {
	t.Helper()
	home, dir := t.TempDir(), t.TempDir()
	cfg := fmt.Sprintf(`model = %q
model_provider = "router"

[model_providers.router]
name = "llmrouter"
base_url = %q
env_key = "ROUTER_KEY"
wire_api = "responses"
supports_websockets = %t
`, model, baseURL, websockets)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(home, "last.txt")
	ctx, cancel := context.WithTimeout(context.Background(), codexBound)
	defer cancel()
	// The fakes' command is an echo: no sandbox is needed, and none may be
	// available where the tests run.
	cmd := exec.CommandContext(ctx, node, launcher, "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access",
		"-C", dir, "-o", last, prompt)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CODEX_HOME=" + home, "ROUTER_KEY=" + key}
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("codex exec still running after %s:\n%s", codexBound, &out)
	}
	if err != nil {
		t.Fatalf("codex exec: %v\n%s", err, &out)
	}
	b, err := os.ReadFile(last)
	if err != nil {
		t.Fatalf("codex exec wrote no last message (%v):\n%s", err, &out)
	}
	t.Logf("codex exec:\n%s", &out)
	return string(b)
}

// codexSetup is one setup of TestCodex.
type codexSetup struct {
	name string
	// openai and anthropic are the tiers of the two fakes as targets of
	// gpt-*; -1 leaves the provider out.
	openai, anthropic int
	// dead makes the OpenAI fake answer everything with 503.
	dead bool
	// websockets: Codex speaks the Responses API over WebSocket
	// (supports_websockets = true).
	websockets bool
}

// config is the router's YAML for s, with the fakes' URLs.
func (s codexSetup) config(oai *fakeOpenAI, ant *fakeAnthropic) string {
	var b strings.Builder
	b.WriteString(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
log: {level: info, format: json}
shutdown_timeout: 5s
auth: {api_keys_env: NODE_CLIENT_KEYS}
routing:
  retry: {max_attempts: 3, initial_backoff: 10ms, max_backoff: 50ms, multiplier: 2.0, jitter: 0.5}
providers:
`)
	if s.openai >= 0 {
		fmt.Fprintf(&b, "  - {name: openai-fake, type: openai, base_url: %q, api_key_env: NODE_OPENAI_KEY}\n", oai.srv.URL+"/v1")
	}
	if s.anthropic >= 0 {
		fmt.Fprintf(&b, "  - {name: anthropic-fake, type: anthropic, base_url: %q, api_key_env: NODE_ANTHROPIC_KEY}\n", ant.srv.URL)
	}
	b.WriteString("models:\n  - name: \"gpt-*\"\n    targets:\n")
	if s.openai >= 0 {
		fmt.Fprintf(&b, "      - {provider: openai-fake, model: gpt-upstream-1, tier: %d}\n", s.openai)
	}
	if s.anthropic >= 0 {
		fmt.Fprintf(&b, "      - {provider: anthropic-fake, model: claude-upstream-1, tier: %d}\n", s.anthropic)
	}
	return b.String()
}

// codexPrompt asks for the tool loop the fakes drive.
const codexPrompt = "Run `echo " + codexMarker + "` with exec_command and tell me what it printed."

// TestCodex runs Codex through the router binary in front of the fakes,
// then checks what the providers saw.
func TestCodex(t *testing.T) {
	node, launcher := codexOrSkip(t)
	for _, s := range []codexSetup{
		{name: "native", openai: 0, anthropic: -1},
		{name: "translated", openai: -1, anthropic: 0},
		{name: "failover", openai: 0, anthropic: 1, dead: true},
		{name: "native over websocket", openai: 0, anthropic: -1, websockets: true},
		{name: "translated over websocket", openai: -1, anthropic: 0, websockets: true},
		{name: "failover over websocket", openai: 0, anthropic: 1, dead: true, websockets: true},
	} {
		t.Run(s.name, func(t *testing.T) {
			oai := newFakeOpenAI(t, "openai", openaiKey, codexShell)
			oai.dead = s.dead
			ant := newFakeAnthropic(t, "anthropic", anthropicKey, codexShell)
			path := filepath.Join(t.TempDir(), "router.yaml")
			if err := os.WriteFile(path, []byte(s.config(oai, ant)), 0o600); err != nil {
				t.Fatal(err)
			}
			router := startRouter(t, []string{
				"NODE_CLIENT_KEYS=" + frontClientKey,
				"NODE_ANTHROPIC_KEY=" + anthropicKey,
				"NODE_OPENAI_KEY=" + openaiKey,
			}, "serve", "--config", path)

			last := runCodex(t, node, launcher, router.api+"/v1", frontClientKey, codexModel, codexPrompt, s.websockets)
			if !strings.Contains(last, codexMarker) {
				t.Errorf("Codex's last message %q, want the shell command's output (%q)", last, codexMarker)
			}
			if n := refusedAPI(t, router.admin, "responses"); n > 0 {
				t.Errorf("the router refused %d of Codex's Responses requests with a 4xx", n)
			}
			if s.websockets {
				checkOverWebSocket(t, router.log.String())
			}
			switch {
			case s.openai == 0 && !s.dead:
				checkCodexNative(t, oai)
			case !ant.sawToolResult():
				t.Error("the Anthropic fake got no tool result: the tool loop did not pass through the router")
			}
			if s.dead && len(oai.requests()) == 0 {
				t.Error("the dead tier-0 OpenAI fake got no request: failover was not exercised")
			}
			checkProviderKeys(t, ant, oai)
		})
	}
	t.Run("embedded default", func(t *testing.T) {
		url := startDefaultRouter(t)
		// The simulated model calls the tool the prompt names, with
		// arguments made from its schema; Codex answers the call with the
		// tool's output (today its refusal of those arguments: the
		// simulated model fills every optional property, and numbers with
		// 1.5, which exec_command's max_output_tokens does not take), and
		// the model's answer quotes it: the loop went through the router
		// both ways.
		last := runCodex(t, node, launcher, url, "unused", "gpt-4o-mini", "Use exec_command.", false)
		if !strings.Contains(last, "Simulated answer") || !strings.Contains(last, "The tool exec_command returned") {
			t.Errorf("Codex's last message %q, want the simulated provider's answer quoting the tool's output", last)
		}
	})
}

// checkCodexNative: Codex's requests reached the OpenAI fake's own
// Responses API, every field as Codex sent it (its namespace and
// web_search tools, include, store false, prompt_cache_key), and the
// second carried the shell command's output and, back as Codex got it,
// the encrypted reasoning of the first.
func checkCodexNative(t *testing.T, oai *fakeOpenAI) {
	t.Helper()
	var bodies []gjson.Result
	for _, e := range oai.requests() {
		if e.Method == http.MethodPost && e.URI == "/v1/responses" {
			bodies = append(bodies, gjson.ParseBytes(e.Body))
		} else {
			t.Errorf("the OpenAI fake got %s %s", e.Method, e.URI)
		}
	}
	if len(bodies) < 2 {
		t.Fatalf("the OpenAI fake got %d Responses requests, want the tool loop's 2 or more", len(bodies))
	}
	first := bodies[0]
	if first.Get("model").Str != "gpt-upstream-1" || first.Get("store").Raw != "false" || first.Get("include.0").Str != "reasoning.encrypted_content" ||
		first.Get("prompt_cache_key").Str == "" || !first.Get(`tools.#(type=="namespace")`).Exists() || !first.Get(`tools.#(type=="web_search")`).Exists() {
		t.Errorf("the first request was not Codex's as sent: model %s, store %s, include %s, prompt_cache_key %q, tools %s",
			first.Get("model").Raw, first.Get("store").Raw, first.Get("include").Raw, first.Get("prompt_cache_key").Str, first.Get("tools.#.type").Raw)
	}
	second := bodies[1].Get("input")
	if !strings.Contains(second.Get(`#(type=="function_call_output").output`).String(), codexMarker) {
		t.Errorf("the second request carries no output of the shell command: %s", second.Raw)
	}
	if second.Get(`#(type=="reasoning").encrypted_content`).Str != encryptedReasoning {
		t.Errorf("the second request lost the encrypted reasoning Codex sent back: %s", second.Raw)
	}
}

// checkOverWebSocket: the router's log says Codex's turns went over one
// WebSocket connection (GET /v1/responses, 200 each, and the upgrade's
// 101 once it closed), none as a POST (Codex falls back to POST for good
// when the WebSocket fails).
func checkOverWebSocket(t *testing.T, log string) {
	t.Helper()
	var turns, upgrades, posts int
	for line := range strings.Lines(log) {
		r := gjson.Parse(line)
		if r.Get("msg").Str != "request" || r.Get("path").Str != "/v1/responses" {
			continue
		}
		switch {
		case r.Get("method").Str == http.MethodPost:
			posts++
		case r.Get("status").Int() == http.StatusSwitchingProtocols:
			upgrades++
		case r.Get("status").Int() == http.StatusOK:
			turns++
		}
	}
	// The warm-up, the tool call, the answer quoting its output.
	if turns < 3 || posts > 0 {
		t.Errorf("Codex sent %d turns over WebSocket (want 3 or more) and %d as POST (want none); log:\n%s", turns, posts, log)
	}
	t.Logf("over WebSocket: %d turns, %d connections closed so far", turns, upgrades)
}

// refusedAPI is the number of requests of api the router has answered
// with a 4xx status, from its metrics (llmrouter_requests_total).
func refusedAPI(t *testing.T, admin, api string) int {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		labels, value, ok := strings.Cut(strings.TrimSpace(line), "} ")
		if !ok || !strings.HasPrefix(labels, "llmrouter_requests_total{") ||
			!strings.Contains(labels, `api="`+api+`"`) || !strings.Contains(labels, `code="4`) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}
