package nodesdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of the router process: generous, they catch hangs.
const (
	buildBound = 5 * time.Minute  // go build of the router
	readyBound = 30 * time.Second // start to the "serving" log line
	stopBound  = 40 * time.Second // SIGTERM to exit (the default's shutdown_timeout is 30s)
)

// startDefaultRouter runs `router serve` with no --config, that is on the
// embedded default (simulated providers), on ports the kernel picks
// (LLMROUTER_LISTEN=127.0.0.1:0), and returns the API's base URL ending in
// /v1.
func startDefaultRouter(t *testing.T) string {
	t.Helper()
	// Only these: no LLMROUTER_* override from the test's environment,
	// and no client keys, so that authentication is off as for a newcomer.
	env := []string{"LLMROUTER_LISTEN=127.0.0.1:0", "LLMROUTER_ADMIN_LISTEN=127.0.0.1:0"}
	return startRouter(t, env, "serve").api + "/v1"
}

// build is the package's one build of the router, made by routerBinary.
var build struct {
	once sync.Once
	dir  string // removed by TestMain
	bin  string
	err  error
}

// routerBinary builds ./cmd/router once for the package's tests and
// returns its path. It is built without the race detector: test/e2e runs
// the router under it, and these tests are about what clients see.
func routerBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			build.err = err
			return
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		if build.dir, build.err = os.MkdirTemp("", "llmrouter-node-"); build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "router")
		ctx, cancel := context.WithTimeout(context.Background(), buildBound)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", build.bin, "./cmd/router")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/router: %w\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// removeBuild removes routerBinary's directory, if it made one.
func removeBuild() {
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
}

// listeners are a running router's root URLs (http://host:port), and
// its log so far.
type listeners struct {
	api, admin string
	log        fmt.Stringer
}

// startRouter runs the router binary with args and exactly the
// environment env, and returns its listeners once the router has logged
// that it is serving; the config must log JSON at level info or lower.
// The router gets SIGTERM when t ends and must exit 0.
func startRouter(t *testing.T, env []string, args ...string) listeners {
	t.Helper()
	logs := &serveWatch{addr: make(chan listeners, 1)}
	cmd := exec.Command(routerBinary(t), args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			if waitErr != nil {
				t.Errorf("router exit: %v; log:\n%s", waitErr, logs)
			}
		case <-time.After(stopBound):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("router still running %s after SIGTERM; log:\n%s", stopBound, logs)
		}
	})
	select {
	case l := <-logs.addr:
		l.log = logs
		return l
	case <-done:
		t.Fatalf("router exited before serving: %v; log:\n%s", waitErr, logs)
	case <-time.After(readyBound):
		t.Fatalf("router not serving after %s; log:\n%s", readyBound, logs)
	}
	return listeners{}
}

// serveWatch keeps the router's log and sends the listeners of its
// "serving" line on addr, once.
type serveWatch struct {
	addr chan listeners // buffered: the one send never blocks

	mu   sync.Mutex // guards buf, seen
	buf  bytes.Buffer
	seen int // bytes of buf already scanned for the serving line
	sent bool
}

func (w *serveWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for !w.sent {
		line, _, ok := bytes.Cut(w.buf.Bytes()[w.seen:], []byte("\n"))
		if !ok {
			break
		}
		w.seen += len(line) + 1
		var rec struct {
			Msg, Listen string
			Admin       string `json:"admin_listen"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "serving" && rec.Listen != "" {
			w.addr <- listeners{api: "http://" + rec.Listen, admin: "http://" + rec.Admin}
			w.sent = true
		}
	}
	return len(p), nil
}

func (w *serveWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(w.buf.String())
}
