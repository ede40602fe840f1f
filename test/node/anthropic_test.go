package nodesdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The Anthropic Messages front door (POST /v1/messages) proved with real
// clients: Claude Code (its native binary, from the npm package
// @anthropic-ai/claude-code-linux-x64) and anthropic.test.mjs (the
// Anthropic TypeScript SDK, the Vercel AI SDK's Anthropic provider,
// LangChain's ChatAnthropic), all pinned in package.json.
//
// TestAnthropicClientsOnFake points the clients straight at the fake
// Anthropic (fakes_test.go): it proves the fake and the script, so that
// a failure of TestAnthropicFrontDoor is the router's.
// TestAnthropicFrontDoor runs the router binary in front of the fakes in
// four setups: native (claude-* → the Anthropic fake), translated
// (claude-* → the OpenAI fake), failover (claude-* → an Anthropic fake
// answering 529 to everything in tier 0, the OpenAI fake in tier 1) and
// capped (claude-* → an OpenAI fake whose model writes at most 16384
// tokens and answers 400 past them, as gpt-4o does, through a target with
// max_output_tokens: 16384: Claude Code asks for more). In
// each, Claude Code must finish its tool loop without the router refusing
// any of its requests (it would retry without what was refused, losing
// it quietly), the script must pass, and no provider may see the client's
// key.

// Keys of the front-door tests: what clients send, and what the router
// sends each provider. A provider must never see the client's.
const (
	frontClientKey = "client-key-never-forwarded"
	anthropicKey   = "sk-ant-provider-key"
	openaiKey      = "sk-openai-provider-key"
)

// Bounds of one client run: generous, they catch hangs.
const (
	claudeBound = 2 * time.Minute
	scriptBound = 2 * time.Minute
)

// clientModel is what the clients ask for: a name the claude-* pattern
// matches, the one Claude Code picks by itself.
const clientModel = "claude-opus-5-5"

// claudeMarker is in the file Claude Code's Read tool reads; the fakes'
// final answer quotes the tool result, so the marker in Claude Code's
// result proves the whole loop.
const claudeMarker = "the marker is purple-otter-42"

// anthropicNodeOrSkip returns node's path, skipping t when node or the
// Anthropic-dialect npm packages are missing, except in CI, where .ci/run
// installs them.
func anthropicNodeOrSkip(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		for _, pkg := range []string{"@anthropic-ai/sdk", "@ai-sdk/anthropic", "ai", "@langchain/anthropic", "@langchain/core"} {
			if _, err = os.Stat(filepath.Join("node_modules", pkg)); err != nil {
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or node_modules missing in CI (.ci/run runs npm ci): %v", err)
		}
		t.Skip("run `npm ci` in test/node to drive the router with the Anthropic-dialect clients")
	}
	return node
}

// claudeOrSkip returns the absolute path of Claude Code's native binary,
// which npm installs on linux-x64 (glibc) only: elsewhere t is skipped;
// missing there, t is skipped too, except in CI.
func claudeOrSkip(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the pinned Claude Code binary is for linux-x64, not %s-%s", runtime.GOOS, runtime.GOARCH)
	}
	bin, err := filepath.Abs(filepath.Join("node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"))
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Claude Code missing in CI (.ci/run runs npm ci): %v", err)
		}
		t.Skip("run `npm ci` in test/node to drive the router with Claude Code")
	}
	return bin
}

// claudeRead is the tool call the fakes make Claude Code run: a Read of a
// file in its working directory. Read is read-only, so print mode runs it
// without --dangerously-skip-permissions and without a prompt; it touches
// nothing and needs no network. It returns the working directory and the
// call.
func claudeRead(t *testing.T) (dir string, call toolCall) {
	t.Helper()
	dir = t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte(claudeMarker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]string{"file_path": file})
	return dir, toolCall{Name: "Read", Input: string(input)}
}

// claudeResult is the part of `claude -p --output-format json` checked.
type claudeResult struct {
	Type              string            `json:"type"`
	Subtype           string            `json:"subtype"`
	IsError           bool              `json:"is_error"`
	Result            string            `json:"result"`
	NumTurns          int               `json:"num_turns"`
	PermissionDenials []json.RawMessage `json:"permission_denials"`
}

// runClaude runs Claude Code in print mode in dir against baseURL with
// key, in an environment of its own (a fresh HOME, no proxy, no other
// ANTHROPIC_* variable), and checks that it ended without error, with
// the tool loop's answer (claudeMarker) as its result.
func runClaude(t *testing.T, bin, dir, baseURL, key string) {
	t.Helper()
	r := claudePrint(t, bin, dir, baseURL, key, "Read notes.txt and tell me the marker it holds.")
	if !strings.Contains(r.Result, claudeMarker) || r.NumTurns < 2 {
		t.Errorf("claude -p result %q after %d turns, want the Read tool's output (%q) after 2 or more turns", r.Result, r.NumTurns, claudeMarker)
	}
	if len(r.PermissionDenials) > 0 {
		t.Errorf("claude -p denied tools: %s", r.PermissionDenials)
	}
}

// claudePrint runs `claude -p prompt --output-format json` in dir against
// baseURL with key, in an environment of its own (a fresh HOME, no proxy,
// no other ANTHROPIC_* variable), and fails t unless it ended without
// error.
func claudePrint(t *testing.T, bin, dir, baseURL, key, prompt string) claudeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), claudeBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", prompt, "--output-format", "json")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=" + key,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("claude -p still running after %s; stdout:\n%s\nstderr:\n%s", claudeBound, &stdout, &stderr)
	}
	var r claudeResult
	if jerr := json.Unmarshal(stdout.Bytes(), &r); jerr != nil {
		t.Fatalf("claude -p: %v, output not JSON (%v); stdout:\n%s\nstderr:\n%s", err, jerr, &stdout, &stderr)
	}
	if err != nil || r.IsError || r.Subtype != "success" {
		t.Fatalf("claude -p: exit %v, is_error %v, subtype %q; stdout:\n%s\nstderr:\n%s", err, r.IsError, r.Subtype, &stdout, &stderr)
	}
	return r
}

// runScript runs anthropic.test.mjs against baseURL with key.
func runScript(t *testing.T, node, baseURL, key string) {
	t.Helper()
	// Stat the script so that go test's cache knows this test reads it.
	if _, err := os.Stat("anthropic.test.mjs"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "anthropic.test.mjs")
	cmd.Env = append(cleanEnv(), "ROUTER_URL="+baseURL, "ROUTER_KEY="+key, "MODEL="+clientModel)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test anthropic.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// cleanEnv is the test's environment without proxy settings and
// ANTHROPIC_* or OPENAI_* variables, which would redirect or
// authenticate the clients behind the test's back.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(k)
		if strings.HasSuffix(up, "_PROXY") || strings.HasPrefix(up, "ANTHROPIC_") || strings.HasPrefix(up, "OPENAI_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// TestAnthropicClientsOnFake runs the clients straight against the fake
// Anthropic, as against api.anthropic.com.
func TestAnthropicClientsOnFake(t *testing.T) {
	node := anthropicNodeOrSkip(t)
	t.Run("claude code", func(t *testing.T) {
		bin := claudeOrSkip(t)
		dir, read := claudeRead(t)
		f := newFakeAnthropic(t, "anthropic", anthropicKey, read)
		runClaude(t, bin, dir, f.srv.URL, anthropicKey)
		if !f.sawToolResult() {
			t.Error("the fake got no tool_result: Claude Code did not run the tool loop")
		}
	})
	t.Run("sdks", func(t *testing.T) {
		f := newFakeAnthropic(t, "anthropic", anthropicKey)
		runScript(t, node, f.srv.URL, anthropicKey)
	})
}

// frontDoor is one setup of TestAnthropicFrontDoor.
type frontDoor struct {
	name string
	// anthropic and openai are the tiers of the two fakes as targets of
	// claude-*; -1 leaves the provider out.
	anthropic, openai int
	// dead makes the Anthropic fake answer everything with 529.
	dead bool
	// capped, when above 0, is the most output tokens the OpenAI fake's
	// model writes (a 400 past it) and its target's max_output_tokens.
	capped int64
}

// servedByAnthropic reports whether the Anthropic fake answers in s (a
// live target), rather than the OpenAI fake.
func (s frontDoor) servedByAnthropic() bool { return s.anthropic >= 0 && !s.dead }

// config is the router's YAML for s, with the fakes' URLs.
func (s frontDoor) config(ant *fakeAnthropic, oai *fakeOpenAI) string {
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
	if s.anthropic >= 0 {
		fmt.Fprintf(&b, "  - {name: anthropic-fake, type: anthropic, base_url: %q, api_key_env: NODE_ANTHROPIC_KEY}\n", ant.srv.URL)
	}
	if s.openai >= 0 {
		fmt.Fprintf(&b, "  - {name: openai-fake, type: openai, base_url: %q, api_key_env: NODE_OPENAI_KEY}\n", oai.srv.URL+"/v1")
	}
	b.WriteString("models:\n  - name: \"claude-*\"\n    targets:\n")
	if s.anthropic >= 0 {
		fmt.Fprintf(&b, "      - {provider: anthropic-fake, model: claude-upstream-1, tier: %d}\n", s.anthropic)
	}
	if s.openai >= 0 {
		fmt.Fprintf(&b, "      - {provider: openai-fake, model: gpt-upstream-1, tier: %d", s.openai)
		if s.capped > 0 {
			fmt.Fprintf(&b, ", max_output_tokens: %d", s.capped)
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// TestAnthropicFrontDoor runs Claude Code and the SDK script through the
// router binary in each setup, then checks what the providers saw.
func TestAnthropicFrontDoor(t *testing.T) {
	node := anthropicNodeOrSkip(t)
	for _, s := range []frontDoor{
		{name: "native", anthropic: 0, openai: -1},
		{name: "translated", anthropic: -1, openai: 0},
		{name: "failover", anthropic: 0, openai: 1, dead: true},
		{name: "capped", anthropic: -1, openai: 0, capped: 16384},
	} {
		t.Run(s.name, func(t *testing.T) {
			dir, read := claudeRead(t)
			ant := newFakeAnthropic(t, "anthropic", anthropicKey, read)
			ant.overloaded = s.dead
			oai := newFakeOpenAI(t, "openai", openaiKey, read)
			oai.maxOutput = s.capped
			path := filepath.Join(t.TempDir(), "router.yaml")
			if err := os.WriteFile(path, []byte(s.config(ant, oai)), 0o600); err != nil {
				t.Fatal(err)
			}
			router := startRouter(t, []string{
				"NODE_CLIENT_KEYS=" + frontClientKey,
				"NODE_ANTHROPIC_KEY=" + anthropicKey,
				"NODE_OPENAI_KEY=" + openaiKey,
			}, "serve", "--config", path)

			t.Run("claude code", func(t *testing.T) {
				bin := claudeOrSkip(t)
				refusedBefore := refused(t, router.admin)
				runClaude(t, bin, dir, router.api, frontClientKey)
				// Claude Code recovers from some refusals by retrying
				// without what was refused (a beta, a field): a run that
				// ends well may still have lost something on the way.
				if n := refused(t, router.admin) - refusedBefore; n > 0 {
					t.Errorf("the router refused %d of Claude Code's Messages requests with a 4xx", n)
				}
				sawResult := oai.sawToolResult()
				if s.servedByAnthropic() {
					sawResult = ant.sawToolResult()
				}
				if !sawResult {
					t.Error("the serving fake got no tool result: the tool loop did not pass through the router")
				}
				if s.name == "native" {
					checkForwardedBetas(t, ant)
				}
				if s.capped > 0 {
					checkCapped(t, oai, s.capped)
				}
			})
			if s.capped == 0 {
				// The script's limits are small: a cap has nothing to do.
				t.Run("sdks", func(t *testing.T) { runScript(t, node, router.api, frontClientKey) })
			}

			checkProviderKeys(t, ant, oai)
			if s.dead {
				if n := countMessages(ant.requests()); n == 0 {
					t.Error("the dead tier-0 Anthropic fake got no Messages request: failover was not exercised")
				}
			}
		})
	}
}

// checkForwardedBetas: a native Messages request carries the client's
// anthropic-beta list as it was sent (docs/ARCHITECTURE.md, "HTTP surface"); Claude Code's includes
// claude-code-20250219.
func checkForwardedBetas(t *testing.T, ant *fakeAnthropic) {
	t.Helper()
	for _, e := range ant.requests() {
		if strings.Contains(e.Header.Get("Anthropic-Beta"), "claude-code-20250219") {
			return
		}
	}
	t.Error("no Messages request reached the Anthropic fake with Claude Code's anthropic-beta header")
}

// checkCapped: the OpenAI fake got Claude Code's requests with their
// output limit at most capped (docs/ARCHITECTURE.md, "Output limits"),
// and at least one at capped exactly: Claude Code asked for more than
// the model writes, and the router lowered it.
func checkCapped(t *testing.T, oai *fakeOpenAI, capped int64) {
	t.Helper()
	var limits []int64
	for _, e := range oai.requests() {
		if e.Method == "POST" {
			limits = append(limits, max(gjson.GetBytes(e.Body, "max_tokens").Int(), gjson.GetBytes(e.Body, "max_completion_tokens").Int()))
		}
	}
	if len(limits) == 0 || slices.Max(limits) != capped {
		t.Errorf("the OpenAI fake was asked for %v output tokens, want each at most %d and one at %d", limits, capped, capped)
	}
}

// checkProviderKeys: every request a fake got carried that provider's own
// key, and none carried the client's key anywhere, header or body.
func checkProviderKeys(t *testing.T, ant *fakeAnthropic, oai *fakeOpenAI) {
	t.Helper()
	check := func(name string, got []exchange, ok func(exchange) bool) {
		for _, e := range got {
			for k, vs := range e.Header {
				for _, v := range vs {
					if strings.Contains(v, frontClientKey) {
						t.Errorf("%s: %s %s carried the client key in %s", name, e.Method, e.URI, k)
					}
				}
			}
			if bytes.Contains(e.Body, []byte(frontClientKey)) {
				t.Errorf("%s: %s %s carried the client key in its body", name, e.Method, e.URI)
			}
			if !ok(e) {
				t.Errorf("%s: %s %s without the provider's key (x-api-key %q, authorization %q)",
					name, e.Method, e.URI, e.Header.Get("X-Api-Key"), e.Header.Get("Authorization"))
			}
		}
	}
	check("anthropic fake", ant.requests(), func(e exchange) bool { return e.Header.Get("X-Api-Key") == anthropicKey })
	check("openai fake", oai.requests(), func(e exchange) bool { return e.Header.Get("Authorization") == "Bearer "+openaiKey })
}

// countMessages counts the Messages requests among got.
func countMessages(got []exchange) int {
	n := 0
	for _, e := range got {
		if e.Method == "POST" && strings.HasPrefix(e.URI, "/v1/messages") {
			n++
		}
	}
	return n
}

// refused is the number of Messages requests the router has answered
// with a 4xx status, from its metrics (llmrouter_requests_total).
func refused(t *testing.T, admin string) int { return refusedAPI(t, admin, "messages") }
