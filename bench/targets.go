package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"
)

// Target names, in table order.
const (
	nameDirect   = "direct"
	nameNginx    = "nginx"
	nameHTTPUtil = "httputil"
	nameRouter   = "llmrouter"
)

var allTargets = []string{nameDirect, nameNginx, nameHTTPUtil, nameRouter}

// startTimeout bounds how long one child may take to become ready.
const startTimeout = 15 * time.Second

// benchModel is the model the load asks for; the router maps it to the
// upstream's model of the same name.
const benchModel = "bench-model"

// target is one thing the load is sent to.
type target struct {
	name string
	url  string // the chat completions URL
	proc *proc  // the proxy process measured; nil for direct
}

// env is the bench's environment without LLMROUTER_ variables (a
// developer's overrides must not change the router under test), plus add.
func env(add ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LLMROUTER_") {
			out = append(out, kv)
		}
	}
	return append(out, add...)
}

// startUpstream re-executes the bench as the fake upstream and returns
// it and its base URL (http://127.0.0.1:PORT).
func startUpstream(ctx context.Context, f *fleet, self string, u upstream) (*proc, string, error) {
	lf, addr, err := listenerFile()
	if err != nil {
		return nil, "", err
	}
	defer lf.Close()
	args := []string{"-role", roleUpstream, "-chunk-interval", u.interval.String(), "-chunks", fmt.Sprint(u.chunks)}
	p, err := f.start("upstream", self, args, env(), syscall.SIGKILL, lf)
	if err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	if err := waitHTTP(ctx, p, base+"/v1/models", startTimeout); err != nil {
		return nil, "", err
	}
	return p, base, nil
}

// startBareProxy re-executes the bench as the httputil proxy to upBase.
func startBareProxy(ctx context.Context, f *fleet, self, upBase string) (target, error) {
	lf, addr, err := listenerFile()
	if err != nil {
		return target{}, err
	}
	defer lf.Close()
	p, err := f.start(nameHTTPUtil, self, []string{"-role", roleHTTPUtil, "-upstream", upBase}, env(), syscall.SIGKILL, lf)
	if err != nil {
		return target{}, err
	}
	base := "http://" + addr
	if err := waitHTTP(ctx, p, base+"/v1/models", startTimeout); err != nil {
		return target{}, err
	}
	return target{name: nameHTTPUtil, url: base + "/v1/chat/completions", proc: p}, nil
}

// nginxConf is a plain reverse proxy: HTTP/1.1 keep-alive to the upstream,
// no response buffering (streams pass as they come), no access log.
// keepalive_requests is raised on both sides so neither nginx nor the Go
// client churns connections every 1,000 requests (Go's pools never do).
var nginxConf = template.Must(template.New("nginx").Parse(`# written by go run ./bench
worker_processes {{.Workers}};
worker_rlimit_nofile 16384;
pid {{.Dir}}/nginx.pid;
error_log stderr warn;
events {
    worker_connections 8192;
}
http {
    access_log off;
    client_body_temp_path {{.Dir}}/client_body;
    proxy_temp_path {{.Dir}}/proxy;
    fastcgi_temp_path {{.Dir}}/fastcgi;
    uwsgi_temp_path {{.Dir}}/uwsgi;
    scgi_temp_path {{.Dir}}/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    upstream fake {
        server {{.Upstream}};
        keepalive 1024;
        keepalive_requests 1000000;
    }
    server {
        listen {{.Listen}} backlog=4096;
        location / {
            proxy_pass http://fake;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }
    }
}
`))

// startNginx writes nginx.conf into dir and runs nginx in the foreground.
func startNginx(ctx context.Context, f *fleet, dir, workers, upBase string) (target, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		return target{}, fmt.Errorf("nginx not found (apt-get install -y nginx, or leave it out with -only): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return target{}, err
	}
	dir = filepath.Join(dir, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return target{}, fmt.Errorf("nginx dir: %w", err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	var b strings.Builder
	if err := nginxConf.Execute(&b, map[string]string{
		"Workers": workers, "Dir": dir, "Upstream": strings.TrimPrefix(upBase, "http://"), "Listen": listen,
	}); err != nil {
		return target{}, fmt.Errorf("nginx.conf: %w", err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		return target{}, fmt.Errorf("writing nginx.conf: %w", err)
	}
	p, err := f.start(nameNginx, bin, []string{"-p", dir, "-c", conf, "-e", "stderr", "-g", "daemon off;"}, env(), syscall.SIGTERM)
	if err != nil {
		return target{}, err
	}
	base := "http://" + listen
	if err := waitHTTP(ctx, p, base+"/v1/models", startTimeout); err != nil {
		return target{}, err
	}
	return target{name: nameNginx, url: base + "/v1/chat/completions", proc: p}, nil
}

// routerConf points one model at the upstream through one
// openai_compatible provider. Everything else is the embedded default:
// breaker, learned RPM/TPM buckets (rpm/tpm 0), adaptive throttling,
// retries. No client auth.
var routerConf = template.Must(template.New("router").Parse(`# written by go run ./bench
listen: {{.Listen}}
admin_listen: {{.Admin}}
auth:
  api_keys_env: ""
log:
  level: warn
providers:
  - name: fake
    type: openai_compatible
    base_url: {{.Upstream}}/v1
    max_concurrency: 1024
    rpm: 0
    tpm: 0
models:
  - name: ` + benchModel + `
    targets:
      - {provider: fake, model: ` + benchModel + `, tier: 0}
`))

// buildRouter builds ./cmd/router of the module the bench belongs to.
func buildRouter(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the llmrouter module; pass -router PATH")
	}
	bin := filepath.Join(dir, "router")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/router")
	cmd.Dir = filepath.Dir(mod)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/router: %w", err)
	}
	return bin, nil
}

// startRouter writes the router's config into its own directory (the
// router watches that directory for changes) and runs it.
func startRouter(ctx context.Context, f *fleet, bin, dir, upBase string) (target, error) {
	api, err := freePort()
	if err != nil {
		return target{}, err
	}
	admin, err := freePort()
	if err != nil {
		return target{}, err
	}
	dir = filepath.Join(dir, "router-config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return target{}, fmt.Errorf("router config dir: %w", err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", api)
	adminAddr := fmt.Sprintf("127.0.0.1:%d", admin)
	var b strings.Builder
	if err := routerConf.Execute(&b, map[string]string{"Listen": listen, "Admin": adminAddr, "Upstream": upBase}); err != nil {
		return target{}, fmt.Errorf("router config: %w", err)
	}
	conf := filepath.Join(dir, "router.yaml")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		return target{}, fmt.Errorf("writing router config: %w", err)
	}
	p, err := f.start(nameRouter, bin, []string{"serve", "--config", conf}, env("LLMROUTER_LOG_LEVEL=warn"), syscall.SIGKILL)
	if err != nil {
		return target{}, err
	}
	if err := waitHTTP(ctx, p, "http://"+adminAddr+"/readyz", startTimeout); err != nil {
		return target{}, err
	}
	return target{name: nameRouter, url: "http://" + listen + "/v1/chat/completions", proc: p}, nil
}
