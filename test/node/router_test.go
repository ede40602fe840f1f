package nodesdk

import (
	"bytes"
	"context"
	"encoding/json"
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

// startDefaultRouter builds ./cmd/router and runs `router serve` with no
// --config, that is on the embedded default (simulated providers), on
// ports the kernel picks (LLMROUTER_LISTEN=127.0.0.1:0). It returns the
// API's base URL ending in /v1, once the router has logged that it is
// serving. The router gets SIGTERM when t ends and must exit 0.
//
// The binary is built without the race detector: test/e2e runs the
// router under it, and this test is about what clients see.
func startDefaultRouter(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "router")
	ctx, cancel := context.WithTimeout(context.Background(), buildBound)
	defer cancel()
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/router")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/router: %v\n%s", err, out)
	}

	logs := &serveWatch{addr: make(chan string, 1)}
	cmd := exec.Command(bin, "serve")
	// Only these: no LLMROUTER_* override from the test's environment,
	// and no client keys, so that authentication is off as for a newcomer.
	cmd.Env = []string{"LLMROUTER_LISTEN=127.0.0.1:0", "LLMROUTER_ADMIN_LISTEN=127.0.0.1:0"}
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
	case addr := <-logs.addr:
		return "http://" + addr + "/v1"
	case <-done:
		t.Fatalf("router exited before serving: %v; log:\n%s", waitErr, logs)
	case <-time.After(readyBound):
		t.Fatalf("router not serving after %s; log:\n%s", readyBound, logs)
	}
	return ""
}

// serveWatch keeps the router's log and sends the API address of its
// "serving" line on addr, once.
type serveWatch struct {
	addr chan string // buffered: the one send never blocks

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
		var rec struct{ Msg, Listen string }
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "serving" && rec.Listen != "" {
			w.addr <- rec.Listen
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
