// Package nodesdk runs real clients against the router, from npm packages
// pinned in package.json: .ci/run installs them with `npm ci`; locally, run
// `npm ci` in test/node first. Its tests drive the router in-process on a
// simulated provider with the OpenAI Node SDK (sdk.test.mjs); the router
// binary on its embedded default with the Node SDK (default.test.mjs) and
// the Go SDK (TestEmbeddedDefault); and the router binary's Anthropic
// Messages front door, in front of fake Anthropic and OpenAI providers
// (fakes_test.go), with Claude Code and the Anthropic-dialect SDKs
// (anthropic_test.go, anthropic.test.mjs); its Responses API with Codex
// CLI (codex_test.go), natively, translated, across a failover and on the
// embedded default; its Gemini API front door, in front of a fake Gemini
// (gemini_fake_test.go) and the same fakes, with Gemini CLI and the Google
// Gen AI SDK (gemini_test.go, gemini.test.mjs); opencode on chat
// completions (opencode_test.go); and the router binary's status page in
// headless Chromium, driven by playwright-core (status_test.go,
// status.test.mjs).
package nodesdk

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

func TestOpenAINodeSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join("node_modules", "openai")); err != nil || statErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or node_modules/openai missing in CI (.ci/run runs npm ci): %v %v", err, statErr)
		}
		t.Skip("run `npm ci` in test/node to drive the router with the Node SDK")
	}
	sim, err := simulated.New(provider.Config{Name: "sim"}, simulated.Config{Reply: "Hello from the router"})
	if err != nil {
		t.Fatal(err)
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "gpt-4o-mini", Targets: []route.Target{{Provider: "sim", Model: "sim-1"}}}})
	s, err := proxy.Open(routing.Options{
		Providers:  []provider.Descriptor{{Name: "sim", Type: "simulated", Adapter: sim}},
		Models:     table,
		Limits:     limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 30 * time.Second},
		ClientKeys: []string{"node-key"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	// Stat the script so that go test's cache knows this test reads it.
	if _, err := os.Stat("sdk.test.mjs"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "sdk.test.mjs")
	cmd.Env = append(os.Environ(), "ROUTER_URL="+srv.URL+"/v1", "ROUTER_KEY=node-key")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
