package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Server is one redis-server process on a loopback port. Stop and Start
// simulate losing Redis and getting it back on the same address.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	Port int
	opts Options

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Options make a server like the ones operators run.
type Options struct {
	// Password is required of clients (requirepass) when not "".
	Password string
	// TLS serves TLS only, with a certificate for 127.0.0.1 signed by a CA
	// whose PEM is at Server.CAFile.
	TLS bool
}

// Start runs a fresh redis-server (no persistence) and stops it when the
// test ends.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith is Start with options.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("REQUIRE_REDIS_SERVER") == "1" {
			t.Fatalf("redis-server not found and REQUIRE_REDIS_SERVER=1: %v", err)
		}
		t.Skip("redis-server not installed (apt-get install redis-server); skipping a shared-state test")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), Port: freePort(t), opts: o}
	if o.TLS {
		writeCerts(t, s.dir)
	}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's redis:// (rediss:// with TLS) URL, database 0,
// without the password.
func (s *Server) URL() string {
	scheme := "redis"
	if s.opts.TLS {
		scheme = "rediss"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d/0", scheme, s.Port)
}

// CAFile is the PEM file of the CA that signed a TLS server's certificate.
func (s *Server) CAFile() string { return filepath.Join(s.dir, "ca.pem") }

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Start (re)starts the server on its port and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	args := []string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log")}
	if s.opts.TLS {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.Port),
			"--tls-cert-file", filepath.Join(s.dir, "cert.pem"), "--tls-key-file", filepath.Join(s.dir, "key.pem"),
			"--tls-ca-cert-file", s.CAFile(), "--tls-auth-clients", "no")
	}
	if s.opts.Password != "" {
		args = append(args, "--requirepass", s.opts.Password)
	}
	cmd := exec.Command(s.bin, args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s.opts.TLS || s.opts.Password != "" {
			// Ping speaks plain RESP without AUTH: wait for the port.
			if c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond); err == nil {
				c.Close()
				return
			}
		} else if s.ping() {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.t.Fatalf("redis-server did not answer on %s within 10s; its log:\n%s", s.Addr(), log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop kills the server (as a crash would) and waits for it to exit.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Do sends one command in RESP (plain servers without a password only) and returns the raw first reply line, for
// tests that inspect keys without a client library.
func (s *Server) Do(args ...string) string {
	s.t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		s.t.Fatalf("redis %v: %v", args, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	msg := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		msg += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		s.t.Fatalf("redis %v: %v", args, err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		s.t.Fatalf("redis %v: %v", args, err)
	}
	return line[:len(line)-2]
}

func (s *Server) ping() bool {
	c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartSentinel runs a Redis Sentinel (redis-server --sentinel) that
// monitors master under the name "mymaster", and returns its address; it
// stops when the test ends.
func StartSentinel(t testing.TB, master *Server) string {
	t.Helper()
	port := freePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster 127.0.0.1 %d 1\n", port, dir, master.Port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(master.bin, conf, "--sentinel", "--logfile", filepath.Join(dir, "sentinel.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis sentinel: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
			t.Fatalf("sentinel did not listen on %s within 10s; its log:\n%s", addr, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
