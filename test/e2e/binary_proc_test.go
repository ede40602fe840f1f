package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/provider/bedrock/bedrocktest"
	"github.com/llmrouter/llmrouter/internal/provider/vertex/vertextest"
)

// Bounds of the binary harness: generous, they catch hangs.
const (
	buildBound = 5 * time.Minute  // go build of the router
	readyBound = 15 * time.Second // start to GET /readyz 200
	exitSlack  = 5 * time.Second  // past shutdown_timeout before SIGKILL
)

// anthropicKeyEnv, openaiKeyEnv and azureKeyEnv name the variables the
// router reads the fake Anthropic, OpenAI and Azure providers' keys from;
// the subprocess gets them and nothing else.
const (
	anthropicKeyEnv = "E2E_ANTHROPIC_KEY"
	openaiKeyEnv    = "E2E_OPENAI_KEY"
	azureKeyEnv     = "E2E_AZURE_KEY"
)

// buildRouter builds ./cmd/router into a directory removed when t ends
// (with the race detector when this test binary has it, so a data race in
// the router fails its exit code) and returns the binary's path.
func buildRouter(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if mod, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.Contains(string(mod), "module github.com/llmrouter/llmrouter\n") {
		t.Fatalf("module root %s: no llmrouter go.mod (%v)", root, err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "router")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, append(args, "./cmd/router")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/router: %v\n%s", err, out)
	}
	return bin
}

// binProvider is one provider of a binary scenario's config.
type binProvider struct {
	fake *binFake
	typ  string // openai_compatible, anthropic (matching fake's dialect), openai or azure (a respFake), bedrock, vertex
	// bedrock or vertex is the fake of a provider of type bedrock or
	// vertex (fake is then nil), named name, for its region.
	bedrock        *bedrocktest.Server
	vertex         *vertextest.Server
	name           string
	tier           int
	maxConcurrency int           // 0: the default
	firstToken     time.Duration // first_token_timeout; 0: the default
	timeout        time.Duration // timeout; 0: the default
	domain         string        // the failure domain; "": none
}

// binModel is a model of a binary scenario's config beside "m".
type binModel struct {
	name    string
	targets []binTarget
}

// binTarget is one target of a binModel.
type binTarget struct {
	provider, model string
	tier            int
	maxOutput       int64         // max_output_tokens; 0: none
	window          int64         // context_window; 0: the embedded table's, else unknown
	firstToken      time.Duration // first_token_timeout; 0: the provider's
}

// binConfig is a binary scenario's config: providers for model "m",
// extra YAML lines for the routing section and YAML for the breaker
// section ("" keeps the defaults).
type binConfig struct {
	providers       []binProvider
	routing         string
	breaker         string
	shutdownTimeout time.Duration // 0: 10s
	// limits are extra entries of the limits block ("body_read_timeout:
	// 1s, max_body_bytes: 1048576"); "" keeps the defaults.
	limits string
	// auth turns client authentication on with the key clientKey.
	auth bool
	// top is more top-level YAML (a shared_state block, say).
	top string
	// models are more models after "m"; logLevel is log.level ("": warn).
	models   []binModel
	logLevel string
	// stateFile is state_file ("": off).
	stateFile string
	// custom, when not nil, renders the whole config below the listen
	// addresses instead of the fields above (a scenario with providers
	// and models of its own).
	custom func() string
	// env is more of the router's environment ("NAME=value").
	env []string
	// tierWait is routing.retry.tier_wait ("": the embedded default, 3s).
	// "0s" pins a scenario that asserts a failover to a lower tier on
	// the first failure, as before tier_wait existed.
	tierWait string
}

// providerName is p's name in the config.
func (p binProvider) providerName() string {
	if p.bedrock != nil || p.vertex != nil {
		return p.name
	}
	return p.fake.name
}

// clientKey is the client key of a scenario with auth on.
const clientKey = "e2e-client-key"

// yaml renders c with the two listen addresses.
func (c binConfig) yaml(listen, admin string) string {
	if c.shutdownTimeout == 0 {
		c.shutdownTimeout = 10 * time.Second
	}
	var b strings.Builder
	fmt.Fprintf(&b, "listen: %s\nadmin_listen: %s\nshutdown_timeout: %s\n", listen, admin, c.shutdownTimeout)
	if c.custom != nil {
		b.WriteString(c.custom())
		return b.String()
	}
	if c.logLevel == "" {
		c.logLevel = "warn"
	}
	fmt.Fprintf(&b, "log: {level: %s, format: text}\n", c.logLevel)
	if c.stateFile != "" {
		fmt.Fprintf(&b, "state_file: %s\n", c.stateFile)
	}
	if c.limits != "" {
		fmt.Fprintf(&b, "limits: {request_timeout: 30s, %s}\n", c.limits)
	} else {
		b.WriteString("limits: {request_timeout: 30s}\n")
	}
	if c.top != "" {
		b.WriteString(strings.TrimSpace(c.top) + "\n")
	}
	if c.auth {
		b.WriteString("auth: {api_keys_env: E2E_CLIENT_KEYS}\n")
	} else {
		b.WriteString("auth: {api_keys_env: \"\"}\n")
	}
	// Backoffs scaled down so retries never slow a scenario.
	b.WriteString("routing:\n  retry: {max_attempts: 3, initial_backoff: 10ms, max_backoff: 50ms, multiplier: 2.0, jitter: 0.5")
	if c.tierWait != "" {
		b.WriteString(", tier_wait: " + c.tierWait)
	}
	b.WriteString("}\n")
	if c.routing != "" {
		b.WriteString(indent(c.routing))
	}
	if c.breaker != "" {
		b.WriteString("breaker:\n" + indent(c.breaker))
	}
	b.WriteString("providers:\n")
	for _, p := range c.providers {
		fmt.Fprintf(&b, "  - name: %s\n    type: %s\n", p.providerName(), p.typ)
		switch p.typ {
		case "bedrock":
			fmt.Fprintf(&b, "    base_url: %s\n    bedrock: {region: %s, control_plane_url: %s}\n", p.bedrock.URL, p.bedrock.Region, p.bedrock.URL)
		case "vertex":
			fmt.Fprintf(&b, "    base_url: %s\n    vertex: {project: %s, region: %s}\n", p.vertex.URL, p.vertex.Project, p.vertex.Region)
		case "anthropic":
			fmt.Fprintf(&b, "    base_url: %s\n    api_key_env: %s\n", p.fake.srv.URL, anthropicKeyEnv)
		case "openai":
			fmt.Fprintf(&b, "    base_url: %s/v1\n    api_key_env: %s\n", p.fake.srv.URL, openaiKeyEnv)
		case "azure":
			fmt.Fprintf(&b, "    base_url: %s\n    api_key_env: %s\n", p.fake.srv.URL, azureKeyEnv)
		default:
			fmt.Fprintf(&b, "    base_url: %s/v1\n", p.fake.srv.URL)
		}
		if p.maxConcurrency > 0 {
			fmt.Fprintf(&b, "    max_concurrency: %d\n", p.maxConcurrency)
		}
		if p.firstToken > 0 {
			fmt.Fprintf(&b, "    first_token_timeout: %s\n", p.firstToken)
		}
		if p.timeout > 0 {
			fmt.Fprintf(&b, "    timeout: %s\n", p.timeout)
		}
		if p.domain != "" {
			fmt.Fprintf(&b, "    domain: %s\n", p.domain)
		}
	}
	b.WriteString("models:\n  - name: m\n    targets:\n")
	for _, p := range c.providers {
		fmt.Fprintf(&b, "      - {provider: %s, model: model-of-%s, tier: %d}\n", p.providerName(), p.providerName(), p.tier)
	}
	for _, m := range c.models {
		fmt.Fprintf(&b, "  - name: %s\n    targets:\n", m.name)
		for _, tg := range m.targets {
			fmt.Fprintf(&b, "      - {provider: %s, model: %s, tier: %d", tg.provider, tg.model, tg.tier)
			if tg.maxOutput > 0 {
				fmt.Fprintf(&b, ", max_output_tokens: %d", tg.maxOutput)
			}
			if tg.window > 0 {
				fmt.Fprintf(&b, ", context_window: %d", tg.window)
			}
			if tg.firstToken > 0 {
				fmt.Fprintf(&b, ", first_token_timeout: %s", tg.firstToken)
			}
			b.WriteString("}\n")
		}
	}
	return b.String()
}

func indent(s string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		b.WriteString("  " + strings.TrimSpace(l) + "\n")
	}
	return b.String()
}

// routerProc is the router binary running as a subprocess.
type routerProc struct {
	t        testing.TB
	cmd      *exec.Cmd
	api      string // http://host:port of the API listener
	apiAddr  string // host:port of the API listener
	admin    string // http://host:port of the admin listener
	config   string // the config file's path
	client   *http.Client
	stderr   *lockedBuffer
	shutdown time.Duration
	done     chan struct{} // closed when the process has exited
	waitErr  error         // cmd.Wait's result, set before done closes
}

// startRouter writes c to a file and runs bin on it, on free loopback
// ports, until GET /readyz answers 200. The process is stopped with
// SIGKILL at cleanup if the test has not stopped it.
func startRouter(t testing.TB, bin string, c binConfig) *routerProc {
	t.Helper()
	// A port picked free may be taken before the router binds it; a few
	// tries make that race harmless.
	for try := 1; ; try++ {
		p, err := tryStart(t, bin, c)
		if err == nil {
			return p
		}
		if try == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("starting the router: %v", err)
		}
	}
}

func tryStart(t testing.TB, bin string, c binConfig) (*routerProc, error) {
	ports := freePorts(t, 2)
	path := filepath.Join(t.TempDir(), "router.yaml")
	if err := os.WriteFile(path, []byte(c.yaml(ports[0], ports[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &routerProc{
		t:        t,
		apiAddr:  ports[0],
		api:      "http://" + ports[0],
		admin:    "http://" + ports[1],
		config:   path,
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		stderr:   &lockedBuffer{},
		shutdown: c.shutdownTimeout,
		done:     make(chan struct{}),
	}
	if p.shutdown == 0 {
		p.shutdown = 10 * time.Second
	}
	p.cmd = exec.Command(bin, "serve", "--config", path)
	// Only these: no LLMROUTER_* override from the test's environment. A
	// race-enabled router would otherwise sleep a second at exit.
	p.cmd.Env = []string{anthropicKeyEnv + "=sk-ant-test", openaiKeyEnv + "=sk-test", azureKeyEnv + "=az-key",
		"E2E_CLIENT_KEYS=" + clientKey, "GORACE=atexit_sleep_ms=0"}
	p.cmd.Env = append(p.cmd.Env, c.env...)
	p.cmd.Stdout = p.stderr
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	if err := p.waitReady(); err != nil {
		p.kill()
		return nil, fmt.Errorf("%w; router output:\n%s", err, p.stderr)
	}
	return p, nil
}

// freePorts returns n distinct loopback addresses that were free a moment
// ago.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().String())
	}
	return out
}

// waitReady polls GET /readyz until 200, the process exits, or readyBound.
func (p *routerProc) waitReady() error {
	deadline := time.Now().Add(readyBound)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if code, err := p.readyz(); err == nil && code == http.StatusOK {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("router exited before ready: %v", p.waitErr)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("router not ready after %s", readyBound)
		}
	}
}

// readyz returns the status of GET /readyz.
func (p *routerProc) readyz() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.admin+"/readyz", nil)
	if err != nil {
		return 0, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// adminState is one provider as GET /admin/providers shows it.
type adminState struct {
	Name            string   `json:"name"`
	State           string   `json:"state"`
	InFlight        int      `json:"in_flight"`
	Domain          string   `json:"domain"`
	OutOfQuota      bool     `json:"out_of_quota"`
	DisabledTargets []string `json:"disabled_targets"`
	Shared          bool     `json:"shared"`
}

// providers returns GET /admin/providers.
func (p *routerProc) providers() ([]adminState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.admin+"/admin/providers", nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Providers []adminState `json:"providers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("decoding /admin/providers: %w", err)
	}
	return body.Providers, nil
}

// chat sends one chat completion for model "m" through the router and
// reads the whole answer; a transport or read error is returned.
func (p *routerProc) chat(stream bool) (reply, error) {
	return postChat(p.client, p.api, stream)
}

// startStream sends one stream request and returns once its first
// content event has arrived, so the router has the upstream's headers;
// finish reads the rest and returns the whole reply.
func (p *routerProc) startStream() (finish func() (reply, error), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.api+"/v1/chat/completions",
		strings.NewReader(chatBody(true)))
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("sending: %w", err)
	}
	var head bytes.Buffer
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil {
			resp.Body.Close()
			cancel()
			return nil, fmt.Errorf("reading to the first content (%q): %w", head.String(), err)
		}
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && gjson.Get(d, "choices.0.delta.content").Str != "" {
			break
		}
	}
	return func() (reply, error) {
		defer cancel()
		defer resp.Body.Close()
		rest, err := io.ReadAll(br)
		body := append(head.Bytes(), rest...)
		rep := reply{status: resp.StatusCode, header: resp.Header, body: body, elapsed: time.Since(start)}
		if err != nil {
			return rep, fmt.Errorf("reading the body (%d bytes so far %q): %w", len(body), body, err)
		}
		return rep, nil
	}, nil
}

// chatOK sends one request and checks it got a well-formed 200; it
// returns the reply (events filled for a stream) or reports why not.
func (p *routerProc) chatOK(stream bool) (reply, error) {
	rep, err := p.chat(stream)
	if err != nil {
		return rep, err
	}
	class, err := check(&rep, stream)
	if err != nil {
		return rep, err
	}
	if rep.status != http.StatusOK || (class != completion && class != streamDone) {
		return rep, fmt.Errorf("got %d %s, want a complete 200 answer: %s", rep.status, class, rep.body)
	}
	return rep, nil
}

// rewriteConfig replaces the router's config file with c, on the same
// listen addresses; the router reloads on its own or on SIGHUP.
func (p *routerProc) rewriteConfig(c binConfig) {
	p.t.Helper()
	if err := os.WriteFile(p.config, []byte(c.yaml(p.apiAddr, strings.TrimPrefix(p.admin, "http://"))), 0o600); err != nil {
		p.t.Fatal(err)
	}
}

// signal sends sig to the router.
func (p *routerProc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signalling the router: %v", err)
	}
}

// waitExit waits up to bound for the process to exit and returns its exit
// code; on timeout it kills the process and fails the test.
func (p *routerProc) waitExit(bound time.Duration) int {
	p.t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.kill()
		p.t.Fatalf("router still running %s after SIGTERM; output:\n%s", bound, p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// stop sends SIGTERM and checks the router exits 0 within its
// shutdown_timeout (plus slack) and logged no panic or data race.
func (p *routerProc) stop() {
	p.t.Helper()
	p.signal(syscall.SIGTERM)
	if code := p.waitExit(p.shutdown + exitSlack); code != 0 {
		p.t.Errorf("router exited %d after SIGTERM, want 0; output:\n%s", code, p.stderr)
	}
	p.checkLog()
}

// checkLog fails the test when the router's output shows a panic or a
// data race.
func (p *routerProc) checkLog() {
	p.t.Helper()
	out := p.stderr.String()
	for _, bad := range []string{"panic", "DATA RACE", "superfluous"} {
		if strings.Contains(out, bad) {
			p.t.Errorf("router output contains %q:\n%s", bad, out)
			return
		}
	}
}

// kill ends the process if it still runs and releases the client's idle
// connections; it is idempotent.
func (p *routerProc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.client.CloseIdleConnections()
}

// connRefused reports whether a new TCP connection to addr is refused.
func connRefused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
