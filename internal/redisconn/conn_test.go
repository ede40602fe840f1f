package redisconn

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/redistest"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTLSAndPassword: a rediss:// Redis with its own CA and a password
// from an environment variable; the password reaches no log line.
func TestTLSAndPassword(t *testing.T) {
	const password = "s3cret-redis-pw"
	srv := redistest.StartWith(t, redistest.Options{TLS: true, Password: password})
	t.Setenv("E2E_REDIS_PW", password)
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := Config{RedisURL: srv.URL(), PasswordEnv: "E2E_REDIS_PW", TLSCAFile: srv.CAFile(), Timeout: time.Second}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Up() {
		t.Fatalf("not up over TLS with the password; log:\n%s", logs.String())
	}
	// The wrong password: down, and the log names neither password.
	t.Setenv("E2E_REDIS_PW", "wrong-pw-123")
	bad, err := New(cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad.Close()
	if bad.Up() {
		t.Error("up with the wrong password")
	}
	withURLPassword := Config{RedisURL: "rediss://user:" + password + "@127.0.0.1:1/0", TLSCAFile: srv.CAFile()}
	if r := withURLPassword.Redacted(); strings.Contains(r, password) {
		t.Errorf("Redacted() = %q shows the password", r)
	}
	for _, pw := range []string{password, "wrong-pw-123"} {
		if strings.Contains(logs.String(), pw) {
			t.Errorf("a log line shows a password:\n%s", logs.String())
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
