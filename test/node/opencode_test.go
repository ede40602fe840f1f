package nodesdk

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// opencode (opencode-ai, pinned in package.json) through the router's
// chat completions, with the router as an @ai-sdk/openai-compatible
// provider (issue 34: kept as a regression test beside Claude Code). What
// opencode 1.18.33 sends (captured against a recording fake): POST
// {baseURL}/chat/completions only, streamed with stream_options
// include_usage and max_tokens 32000 (above what gpt-4o takes: a real
// target wants max_output_tokens); a first request without tools that
// titles the session, then the turn with its ten tools (bash, edit, glob,
// grep, read, skill, task, todowrite, webfetch, write) and tool_choice
// auto; the key as a Bearer token; the headers x-session-id and
// x-session-affinity naming its session.
//
// TestOpencode runs `opencode run` against the router binary: onto the
// OpenAI fake, translated onto the Anthropic fake, and across a failover
// from a dead OpenAI fake to the Anthropic one. In each, opencode must
// finish a tool loop (its bash tool run and the output back to the model)
// without the router answering any of its requests with a 4xx.

// opencodeMarker is what the fakes' bash call prints.
const opencodeMarker = "opencode-marker-73"

// opencodeShell is the tool call the fakes make opencode run.
var opencodeShell = toolCall{Name: "bash", Input: `{"command":"echo ` + opencodeMarker + `","description":"Print the marker"}`}

// opencodeOrSkip returns opencode's launcher, which runs the native binary
// npm installs for linux-x64 as an optional package: missing, t is
// skipped, except in CI.
func opencodeOrSkip(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the pinned opencode binary is tested on linux-x64, not %s-%s", runtime.GOOS, runtime.GOARCH)
	}
	bin, err := filepath.Abs(filepath.Join("node_modules", ".bin", "opencode"))
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("opencode missing in CI (.ci/run runs npm ci): %v", err)
		}
		t.Skip("run `npm ci` in test/node to drive the router with opencode")
	}
	return bin
}

// runOpencode runs `opencode run prompt` in a fresh project directory
// whose opencode.json names baseURL (ending in /v1) as an
// OpenAI-compatible provider keyed by key, with a home of its own, and
// returns what it printed; it fails t unless opencode ended well.
func runOpencode(t *testing.T, bin, baseURL, key, model, prompt string) string {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	cfg, err := json.Marshal(map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"router": map[string]any{
			"npm": "@ai-sdk/openai-compatible", "name": "llmrouter",
			"options": map[string]any{"baseURL": baseURL, "apiKey": key},
			"models":  map[string]any{model: map[string]any{"name": model}},
		}},
		"model":      "router/" + model,
		"autoupdate": false,
		"share":      "disabled",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), claudeBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", prompt)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"OPENCODE_DISABLE_AUTOUPDATE=true"}
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("opencode run still running after %s:\n%s", claudeBound, &out)
	}
	if err != nil {
		t.Fatalf("opencode run: %v\n%s", err, &out)
	}
	t.Logf("opencode run:\n%s", &out)
	return out.String()
}

// TestOpencode runs opencode through the router binary in front of the
// fakes, then checks what the providers saw.
func TestOpencode(t *testing.T) {
	bin := opencodeOrSkip(t)
	for _, s := range []codexSetup{
		{name: "chat", openai: 0, anthropic: -1},
		{name: "translated", openai: -1, anthropic: 0},
		{name: "failover", openai: 0, anthropic: 1, dead: true},
	} {
		t.Run(s.name, func(t *testing.T) {
			oai := newFakeOpenAI(t, "openai", openaiKey, opencodeShell)
			oai.dead = s.dead
			ant := newFakeAnthropic(t, "anthropic", anthropicKey, opencodeShell)
			path := filepath.Join(t.TempDir(), "router.yaml")
			if err := os.WriteFile(path, []byte(s.config(oai, ant)), 0o600); err != nil {
				t.Fatal(err)
			}
			router := startRouter(t, []string{
				"NODE_CLIENT_KEYS=" + frontClientKey,
				"NODE_ANTHROPIC_KEY=" + anthropicKey,
				"NODE_OPENAI_KEY=" + openaiKey,
			}, "serve", "--config", path)

			out := runOpencode(t, bin, router.api+"/v1", frontClientKey, "gpt-4o-mini", "Run `echo "+opencodeMarker+"` with the bash tool and tell me what it printed.")
			// The command, its output, and the model's answer quoting it.
			if !strings.Contains(out, "The tool returned: "+opencodeMarker) || strings.Count(out, opencodeMarker) < 3 {
				t.Errorf("opencode's output does not show the command, its output and the answer quoting it (%q):\n%s", opencodeMarker, out)
			}
			if n := refusedAPI(t, router.admin, "chat"); n > 0 {
				t.Errorf("the router refused %d of opencode's chat requests with a 4xx", n)
			}
			switch {
			case s.name == "chat":
				var withResult bool
				for _, e := range oai.requests() {
					if gjson.GetBytes(e.Body, `messages.#(role=="tool").content`).Exists() {
						withResult = true
					}
				}
				if !withResult {
					t.Error("the OpenAI fake got no tool result: the tool loop did not pass through the router")
				}
			case !ant.sawToolResult():
				t.Error("the Anthropic fake got no tool result: the tool loop did not pass through the router")
			}
			if s.dead && len(oai.requests()) == 0 {
				t.Error("the dead tier-0 OpenAI fake got no request: failover was not exercised")
			}
			checkProviderKeys(t, ant, oai)
		})
	}
}
