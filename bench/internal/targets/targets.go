// Package targets starts what the bench's load is sent to: nginx, the bare
// httputil.ReverseProxy (the bench re-executed with -role httputil) and
// llmrouter, each its own process on 127.0.0.1 in front of the fake
// upstream; direct is the upstream itself. llmrouter+tracing is a second
// llmrouter, configured alike but with tracing on, exporting to the
// bench's trace sink (package collector).
package targets

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/load"
	"github.com/llmrouter/llmrouter/bench/internal/proc"
	"github.com/llmrouter/llmrouter/bench/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// Target names, in table order.
const (
	Direct   = "direct"
	Nginx    = "nginx"
	HTTPUtil = "httputil"
	Router   = "llmrouter"
	// RouterBase is a second llmrouter binary (-router-base, built from
	// an older commit), configured as Router and measured right beside
	// it: the before and after of a change in one run.
	RouterBase = "llmrouter-base"
	// RouterTracing is llmrouter with its tracing: block on, beside
	// Router in the same run so that the difference is tracing's.
	RouterTracing = "llmrouter+tracing"
)

// All is every target name, in table order.
var All = []string{Direct, Nginx, HTTPUtil, Router, RouterBase, RouterTracing}

// Default is the targets a run measures unless told otherwise: all but
// RouterTracing, which is asked for by name, and RouterBase, which a
// binary given with -router-base adds.
var Default = []string{Direct, Nginx, HTTPUtil, Router}

// StartTimeout bounds how long one child may take to become ready.
const StartTimeout = 15 * time.Second

// Target is one thing the load is sent to.
type Target struct {
	Name string
	URL  string      // the chat completions URL
	TLS  *tls.Config // for an https URL (direct to a TLS upstream); nil for the proxies
	Proc *proc.Proc  // the proxy process measured; nil for direct
	// Admin is the router's admin base URL (http://127.0.0.1:PORT, which
	// serves /metrics); "" for the other targets.
	Admin string
	// Tracing is the router's tracing: block; the zero Config (off) for
	// every target but RouterTracing.
	Tracing tracing.Config
}

// StartBareProxy re-executes the bench as the httputil proxy to upBase;
// caFile is the CA of a TLS upstream, else "".
func StartBareProxy(ctx context.Context, f *proc.Fleet, self, upBase, caFile string, goEnv []string) (Target, error) {
	lf, addr, err := proc.ListenerFile()
	if err != nil {
		return Target{}, err
	}
	defer lf.Close()
	args := []string{"-role", BareProxyRole, "-upstream-url", upBase}
	if caFile != "" {
		args = append(args, "-ca", caFile)
	}
	p, err := f.Start(HTTPUtil, self, args, proc.Env(goEnv...), syscall.SIGKILL, lf)
	if err != nil {
		return Target{}, err
	}
	base := "http://" + addr
	if err := proc.WaitHTTP(ctx, p, base+"/v1/models", nil, StartTimeout); err != nil {
		return Target{}, err
	}
	return Target{Name: HTTPUtil, URL: base + "/v1/chat/completions", Proc: p}, nil
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
            proxy_pass {{.Scheme}}://fake;
            proxy_http_version 1.1;{{if .CAFile}}
            proxy_ssl_trusted_certificate {{.CAFile}};
            proxy_ssl_verify on;
            proxy_ssl_name 127.0.0.1;
            proxy_ssl_session_reuse on;{{end}}
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }
    }
}
`))

// StartNginx writes nginx.conf into dir and runs nginx in the foreground.
// For an https upBase nginx verifies the upstream's certificate against
// caFile; it speaks HTTP/1.1 to its upstreams either way.
func StartNginx(ctx context.Context, f *proc.Fleet, dir, workers, upBase, caFile string) (Target, error) {
	u, err := parseLoopbackURL(upBase)
	if err != nil {
		return Target{}, err
	}
	bin, err := exec.LookPath("nginx")
	if err != nil {
		return Target{}, fmt.Errorf("nginx not found (apt-get install -y nginx, or leave it out with -only): %w", err)
	}
	port, err := proc.FreePort()
	if err != nil {
		return Target{}, err
	}
	dir = filepath.Join(dir, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Target{}, fmt.Errorf("nginx dir: %w", err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	var b strings.Builder
	if err := nginxConf.Execute(&b, map[string]string{
		"Workers": workers, "Dir": dir, "Upstream": u.Host, "Scheme": u.Scheme, "CAFile": caFile, "Listen": listen,
	}); err != nil {
		return Target{}, fmt.Errorf("nginx.conf: %w", err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		return Target{}, fmt.Errorf("writing nginx.conf: %w", err)
	}
	p, err := f.Start(Nginx, bin, []string{"-p", dir, "-c", conf, "-e", "stderr", "-g", "daemon off;"}, proc.Env(), syscall.SIGTERM)
	if err != nil {
		return Target{}, err
	}
	base := "http://" + listen
	if err := proc.WaitHTTP(ctx, p, base+"/v1/models", nil, StartTimeout); err != nil {
		return Target{}, err
	}
	return Target{Name: Nginx, URL: base + "/v1/chat/completions", Proc: p}, nil
}

// routerConf points one model at the upstream through one
// openai_compatible provider. Everything else is the embedded default:
// breaker, learned RPM/TPM buckets (rpm/tpm 0), adaptive throttling,
// retries, tracing off. The load's requests carry a named client key with
// RPM, TPM and a budget (limits it never reaches) and the model is priced:
// the key's limits and spend are on every request's path, as in
// production.
var routerConf = template.Must(template.New("router").Parse(`# written by go run ./bench
listen: {{.Listen}}
admin_listen: {{.Admin}}{{if .Pprof}}
pprof: true{{end}}{{if .Tracing.On}}
tracing:
  otlp_endpoint: {{.Tracing.OTLPEndpoint}}
  sample_ratio: {{.Tracing.SampleRatio}}{{end}}
auth:
  api_keys_env: ""
  keys:
    - {name: bench, key_sha256: ` + load.KeySHA256 + `, rpm: 100000000, tpm: 1000000000000, budget_usd: 100000000}
pricing:
  - {model: ` + upstream.Model + `, input: 1, output: 2}
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
  - name: ` + upstream.Model + `
    targets:
      - {provider: fake, model: ` + upstream.Model + `, tier: 0}
`))

// ShipFlags are the build flags of the router the Dockerfile ships (a
// static binary: no cgo, no libc mapped; no symbol table or DWARF), so
// the bench measures the binary a deployment runs. A cgo build of the
// same source maps libc and its loader too: about 1.9 MB more resident
// at rest (docs/BENCHMARKS.md, "What ships").
var ShipFlags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w"}

// BuildRouter builds ./cmd/router of the module the bench belongs to, as
// the Dockerfile does (CGO_ENABLED=0 and ShipFlags).
func BuildRouter(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the llmrouter module; pass -router PATH")
	}
	bin := filepath.Join(dir, "router")
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, ShipFlags...), "-o", bin, "./cmd/router")...)
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/router: %w", err)
	}
	return bin, nil
}

// routerYAML is the config of a router listening on listen and admin,
// routed to upBase, with the tracing: block tr (written only when on) and
// Go's profiler on the admin listener when pprof.
func routerYAML(listen, admin, upBase string, tr tracing.Config, pprof bool) (string, error) {
	if err := tr.Validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := routerConf.Execute(&b, struct {
		Listen, Admin, Upstream string
		Tracing                 tracing.Config
		Pprof                   bool
	}{listen, admin, upBase, tr, pprof}); err != nil {
		return "", fmt.Errorf("router config: %w", err)
	}
	return b.String(), nil
}

// StartRouter writes the config of the router target name into a
// directory of its own under dir (the router watches that directory for
// changes) and runs it; tr is its tracing: block, the zero Config for
// off. For an https upBase, the provider's HTTP client trusts caFile
// through SSL_CERT_FILE: the config has no CA key for a provider, its
// client uses the system's roots, and Go on Linux reads them from
// SSL_CERT_FILE when it is set. The bench's OTEL_* variables reach the
// router (OTEL_BSP_SCHEDULE_DELAY, OTEL_EXPORTER_OTLP_COMPRESSION, ...);
// its LLMROUTER_* ones do not (proc.Env). With pprof the admin listener
// serves /debug/pprof/ (for profiles taken by hand during a run).
func StartRouter(ctx context.Context, f *proc.Fleet, name, bin, dir, upBase, caFile string, tr tracing.Config, pprof bool, goEnv []string) (Target, error) {
	api, err := proc.FreePort()
	if err != nil {
		return Target{}, err
	}
	admin, err := proc.FreePort()
	if err != nil {
		return Target{}, err
	}
	dir = filepath.Join(dir, name+"-config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Target{}, fmt.Errorf("router config dir: %w", err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", api)
	adminAddr := fmt.Sprintf("127.0.0.1:%d", admin)
	yaml, err := routerYAML(listen, adminAddr, upBase, tr, pprof)
	if err != nil {
		return Target{}, fmt.Errorf("%s config: %w", name, err)
	}
	conf := filepath.Join(dir, "router.yaml")
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		return Target{}, fmt.Errorf("writing router config: %w", err)
	}
	env := proc.Env(append([]string{"LLMROUTER_LOG_LEVEL=warn"}, goEnv...)...)
	if caFile != "" {
		env = append(env, "SSL_CERT_FILE="+caFile)
	}
	p, err := f.Start(name, bin, []string{"serve", "--config", conf}, env, syscall.SIGKILL)
	if err != nil {
		return Target{}, err
	}
	if err := proc.WaitHTTP(ctx, p, "http://"+adminAddr+"/readyz", nil, StartTimeout); err != nil {
		return Target{}, err
	}
	return Target{Name: name, URL: "http://" + listen + "/v1/chat/completions", Proc: p, Admin: "http://" + adminAddr, Tracing: tr}, nil
}
