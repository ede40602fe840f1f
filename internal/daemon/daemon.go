package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/net/netutil"
	"golang.org/x/time/rate"

	"github.com/llmrouter/llmrouter/internal/admin"
	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/fleet"
	messages "github.com/llmrouter/llmrouter/internal/messages/api"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/redisconn"
	"github.com/llmrouter/llmrouter/internal/responses/api"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/store/redisstore"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// Server timeouts a slow or hostile client cannot hold open.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 32 << 10 // request line and headers; Go allows 4 KiB more
)

// Options are what the binary gives a daemon beside its config.
type Options struct {
	// Types are the provider types the binary serves, the values a
	// provider entry's `type:` may take.
	Types provider.Types
	// Version is the binary's version, for the serving log line.
	Version string
}

// Daemon is one running router: its listeners, the front door and the
// Responses API behind them, readiness, reloads and the state file.
type Daemon struct {
	cfgPath string
	log     *slog.Logger
	types   provider.Types  // the provider types served
	routes  *routing.Routes // the routing state in force
	resp    *api.Server     // the Responses API
	fleet   *fleet.Client   // nil without shared_state
	spend   *fleet.Spend    // the client keys' spend in the fleet; nil without shared_state
	// affinity is the conversations' affinity in the fleet; nil without
	// shared_state.
	affinity *fleet.Affinity
	redis    *redisconn.Conn // the fleet's and the stored responses'; nil without shared_state
	tracer   *tracing.Tracer // nil: tracing off
	ready    atomic.Bool
	api      *http.Server
	admin    *http.Server
	apiLn    net.Listener
	adminLn  net.Listener
	cfg      atomic.Pointer[config.Config]
	reg      *prometheus.Registry
	// reloadOK is config_last_reload_successful; reloads counts attempts
	// by result.
	reloadOK prometheus.Gauge
	reloads  *prometheus.CounterVec
	// The state-file saver loop: stopState ends it, stateDone closes
	// when it has.
	stateCtx  context.Context
	stopState context.CancelFunc
	stateDone chan struct{}
	// stateWriter names this process in the state file; savedFile is the
	// file as this process last wrote it, to notice another writer; and
	// otherWriter thins the warning about one. Only saveState uses them,
	// and it never runs twice at once (the saver loop, then shutdown
	// after the loop has ended).
	stateWriter string
	savedFile   os.FileInfo
	otherWriter rate.Sometimes
	// The config watcher: stopWatch ends it, watchDone closes when it has.
	stopWatch context.CancelFunc
	watchDone chan struct{}
	reloadMu  sync.Mutex // serializes reloads (SIGHUP and file changes)
	// onReload, when not nil, is told the result of every reload.
	onReload func(error)
}

// Start builds everything from cfg, read from path ("": the embedded
// default), and starts both listeners; it logs on log. The caller stops
// it with Shutdown.
func Start(cfg *config.Config, path string, log *slog.Logger, o Options) (*Daemon, error) {
	return start(cfg, path, log, o)
}

// start is Start whose hooks run on the daemon before anything starts
// (test seams).
func start(cfg *config.Config, path string, log *slog.Logger, o Options, hooks ...func(*Daemon)) (*Daemon, error) {
	if cfg.Tracing.On() {
		// Log records made with a request's context say its trace
		// (docs/ARCHITECTURE.md, "Tracing"); with tracing off the log
		// is not wrapped, and costs nothing more.
		log = slog.New(tracing.LogHandler(log.Handler()))
	}
	opts, err := Build(cfg, o.Types, log)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts.Registerer = reg
	tr, err := tracing.New(cfg.Tracing, tracing.Options{Version: o.Version, Registerer: reg, Logger: log})
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			_ = tr.Shutdown(context.Background()) // nothing was traced yet
		}
	}()
	var (
		fl     *fleet.Client
		sp     *fleet.Spend
		af     *fleet.Affinity
		rc     *redisconn.Conn
		stored store.Store // nil: in this process
	)
	if sc := cfg.SharedState; sc.On() {
		// Redis down is no reason not to start: redisconn.New decides
		// locally until it answers (docs/ARCHITECTURE.md, "Fleet").
		if rc, err = redisconn.New(sc, log, reg); err != nil {
			return nil, err
		}
		fl = fleet.New(rc)
		opts.Fleet = fl
		sp = fleet.NewSpend(rc)
		opts.Spend = sp
		af = fleet.NewAffinity(rc)
		opts.SharedAffinity = af
		// Stored responses live in the same Redis, so that any replica
		// continues a conversation; while it is down, in this process
		// (docs/ARCHITECTURE.md, "Responses API").
		stored = redisstore.NewShared(
			redisstore.New(rc.Client(), rc.KeyPrefix(), rc.Timeout(), rc.Fail, cfg.Responses),
			store.NewMemory(cfg.Responses, nil), rc.Up)
	}
	rt, err := routing.New(opts)
	if err != nil {
		if fl != nil {
			sp.Close()
			af.Close()
			fl.Close()
			rc.Close()
		}
		return nil, err
	}
	p := proxy.New(rt, proxy.Options{Logger: log, Registerer: reg, Tracer: tr})
	admin.Register(reg, rt)
	resp, err := api.New(api.Options{Config: cfg.Responses, Store: stored, Logger: log, Registerer: reg})
	if err != nil {
		rt.Close()
		if fl != nil {
			sp.Close()
			af.Close()
			fl.Close()
			rc.Close()
		}
		return nil, err
	}
	d := &Daemon{cfgPath: path, log: log, types: o.Types, routes: rt, resp: resp, reg: reg, fleet: fl, spend: sp, affinity: af, redis: rc, tracer: tr}
	d.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmrouter_config_last_reload_successful",
		Help: "1 if the last config reload succeeded (or none was tried), 0 if it failed."})
	d.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmrouter_config_reloads_total",
		Help: "Config reload attempts by result."}, []string{"result"})
	reg.MustRegister(d.reloadOK, d.reloads)
	d.reloadOK.Set(1)
	d.cfg.Store(cfg)
	if d.apiLn, err = net.Listen("tcp", cfg.Listen); err != nil {
		rt.Close()
		d.closeFleet()
		return nil, fmt.Errorf("listen: %w", err)
	}
	// limits.max_connections: past it, connections wait in the kernel's
	// accept queue; with the body budget it bounds memory
	// (docs/ARCHITECTURE.md, "Memory").
	d.apiLn = netutil.LimitListener(d.apiLn, cfg.Limits.WithDefaults().MaxConnections)
	if d.adminLn, err = net.Listen("tcp", cfg.AdminListen); err != nil {
		d.apiLn.Close()
		rt.Close()
		d.closeFleet()
		return nil, fmt.Errorf("admin_listen: %w", err)
	}
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	conns := prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmrouter_client_connections",
		Help: "Open client connections on the API listener (at most limits.max_connections)."})
	reg.MustRegister(conns)
	mux := http.NewServeMux()
	// The front-door dialects beyond the chat family (docs/ARCHITECTURE.md,
	// "Front doors").
	p.Register(mux, resp.Dialect(), messages.New(log).Dialect())
	d.api = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errLog,
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				conns.Inc()
			case http.StateClosed, http.StateHijacked:
				conns.Dec()
			}
		},
	}
	d.admin = &http.Server{
		Handler:           admin.Handler(admin.Options{Routes: rt, Registry: reg, Ready: d.ready.Load, Pprof: cfg.Pprof, Logger: log}),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute, // a CPU profile runs 30s by default
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errLog,
	}
	for _, h := range hooks {
		h(d)
	}
	host, _ := os.Hostname()
	d.stateWriter = fmt.Sprintf("%s pid %d", host, os.Getpid())
	d.otherWriter = rate.Sometimes{Interval: 10 * time.Minute}
	d.restoreState()
	d.stateCtx, d.stopState = context.WithCancel(context.Background())
	d.stateDone = make(chan struct{})
	go d.saveStateLoop()
	d.watchDone = make(chan struct{})
	var wctx context.Context
	wctx, d.stopWatch = context.WithCancel(context.Background())
	if path != "" {
		go d.watchConfig(wctx, d.watchDone)
	} else {
		close(d.watchDone)
	}
	go d.serve(d.api, d.apiLn, "api")
	go d.serve(d.admin, d.adminLn, "admin")
	d.ready.Store(true)
	started = true
	log.Info("serving", "listen", d.apiLn.Addr().String(), "admin_listen", d.adminLn.Addr().String(),
		"providers", len(cfg.Providers), "models", len(cfg.Models), "version", o.Version, "config", Source(path))
	return d, nil
}

func (d *Daemon) serve(s *http.Server, ln net.Listener, name string) {
	if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		d.log.Error("listener failed", "listener", name, "error", err.Error())
	}
}

// Shutdown fails readiness, stops accepting, lets in-flight requests and
// streams finish up to shutdown_timeout, and reports the exit code.
func (d *Daemon) Shutdown() int {
	d.ready.Store(false)
	timeout := d.cfg.Load().ShutdownTimeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	code := 0
	if err := d.api.Shutdown(ctx); err != nil {
		d.log.Warn("in-flight requests cut at shutdown_timeout", "error", err.Error())
		_ = d.api.Close()
		code = 1
	}
	actx, acancel := context.WithTimeout(context.Background(), time.Second)
	defer acancel()
	_ = d.admin.Shutdown(actx)
	d.stopWatch()
	<-d.watchDone
	d.stopState()
	<-d.stateDone
	if d.spend != nil {
		// The spend still on its way to Redis goes to the state file
		// instead, to be sent after the restart.
		d.spend.Close()
	}
	d.saveState()
	d.routes.Close()
	d.closeFleet()
	// The drained requests' spans are exported last, in what is left of
	// shutdown_timeout and at most flushTimeout: a collector that is down
	// must not hold the exit (docs/ARCHITECTURE.md, "Reload and
	// shutdown").
	fctx, fcancel := context.WithTimeout(ctx, flushTimeout)
	defer fcancel()
	if err := d.tracer.Shutdown(fctx); err != nil {
		d.log.Warn("tracing: spans not all exported at shutdown", "error", err.Error())
	}
	d.log.Info("stopped")
	return code
}

// flushTimeout bounds the export of the last spans at shutdown.
const flushTimeout = 5 * time.Second

func (d *Daemon) closeFleet() {
	if d.fleet != nil {
		d.spend.Close()
		d.affinity.Close()
		d.fleet.Close()
		d.redis.Close()
	}
}

// Reload re-reads the config file (SIGHUP, a change the watcher saw); an
// invalid file leaves the old config serving.
func (d *Daemon) Reload() {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	cfg, err := config.Load(d.cfgPath)
	if err == nil {
		var opts routing.Options
		if opts, err = Build(cfg, d.types, d.log); err == nil {
			if err = d.routes.Update(opts); err == nil {
				err = d.resp.Configure(cfg.Responses)
			}
		}
	}
	if err == nil && d.cfgPath == "" {
		d.log.Info("reload: serving the embedded default, nothing to re-read")
	}
	if d.onReload != nil {
		defer func() { d.onReload(err) }()
	}
	if err != nil {
		d.reloadOK.Set(0)
		d.reloads.WithLabelValues("failure").Inc()
		d.log.Error("reload failed; the previous config stays in force", "error", err.Error())
		return
	}
	d.reloadOK.Set(1)
	d.reloads.WithLabelValues("success").Inc()
	old := d.cfg.Swap(cfg)
	if old.Listen != cfg.Listen || old.AdminListen != cfg.AdminListen {
		d.log.Warn("listen addresses changed; they take effect at the next restart")
	}
	if old.SharedState != cfg.SharedState {
		d.log.Warn("shared_state changed; it takes effect at the next restart")
	}
	if old.Tracing != cfg.Tracing {
		d.log.Warn("tracing changed; it takes effect at the next restart")
	}
	d.log.Info("config reloaded", "providers", len(cfg.Providers), "models", len(cfg.Models))
}

// Source names the config read from path, for logs and messages.
func Source(path string) string {
	if path == "" {
		return "embedded default (simulated providers)"
	}
	return path
}
