package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/time/rate"

	"github.com/llmrouter/llmrouter/internal/admin"
	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/fleet"
	gemini "github.com/llmrouter/llmrouter/internal/gemini/api"
	"github.com/llmrouter/llmrouter/internal/h1server"
	messages "github.com/llmrouter/llmrouter/internal/messages/api"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/recent"
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
	reg     *prometheus.Registry
	cfg     atomic.Pointer[config.Config]
	ready   atomic.Bool
	parts   group           // what start started, stopped in reverse by Shutdown
	tracer  *tracing.Tracer // nil: tracing off
	// spend is the client keys' spend in the fleet; nil without
	// shared_state.
	spend *fleet.Spend
	// api and admin are the listeners' servers, apiLn and adminLn the
	// addresses they listen on.
	api            *h1server.Server
	admin          *http.Server
	apiLn, adminLn net.Listener
	// exitCode is Shutdown's: 1 when in-flight requests were cut at
	// shutdown_timeout.
	exitCode int
	// reloadOK is config_last_reload_successful; reloads counts attempts
	// by result.
	reloadOK prometheus.Gauge
	reloads  *prometheus.CounterVec
	// saver is the state-file saver loop (nil until started).
	saver *loop
	// stateWriter names this process in the state file; savedFile is the
	// file as this process last wrote it, to notice another writer; and
	// otherWriter thins the warning about one. Only saveState uses them,
	// and it never runs twice at once (the saver loop, then shutdown
	// after the loop has ended).
	stateWriter string
	savedFile   os.FileInfo
	otherWriter rate.Sometimes
	reloadMu    sync.Mutex // serializes reloads (SIGHUP and file changes)
	// onReload, when not nil, is told the result of every reload.
	onReload func(error)
	// recent is the ring of the last requests the status page shows
	// (docs/ARCHITECTURE.md, "Status page").
	recent  *recent.Ring
	histMu  sync.Mutex     // guards history
	history []admin.Reload // the last maxHistory reloads, oldest first
}

// Sizes of what the status page shows (docs/ARCHITECTURE.md, "Status
// page"): the ring of recent requests and the reloads kept.
const (
	recentRequests = 512
	maxHistory     = 10
)

// Start builds everything from cfg, read from path ("": the embedded
// default), and starts both listeners; it logs on log. The caller stops
// it with Shutdown.
func Start(cfg *config.Config, path string, log *slog.Logger, o Options) (*Daemon, error) {
	return start(cfg, path, log, o)
}

// start is Start whose hooks run on the daemon before anything serves
// (test seams). The daemon is its components (group.go), started in this
// order and stopped in reverse: the tracer is flushed last, the API
// listener drains first while the admin listener still answers probes.
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
	d := newDaemon(cfg, path, log, o)
	opts.Registerer = d.reg
	var stored store.Store // nil: in this process
	err = d.parts.start(
		d.tracing(cfg.Tracing, o.Version),
		d.fleet(cfg, &opts, &stored),
		component{name: "routing", start: func() (err error) { d.routes, err = routing.New(opts); return err },
			stop: func(context.Context) { d.routes.Close() }},
		component{name: "responses", start: func() (err error) {
			d.resp, err = api.New(api.Options{Config: cfg.Responses, Store: stored, Logger: log, Registerer: d.reg, IdleTimeout: idleTimeout})
			return err
		}},
		d.listen(cfg),
		component{name: "hooks", start: func() error {
			for _, h := range hooks {
				h(d)
			}
			return nil
		}},
		d.state(),
		d.watcher(path),
		d.serve("admin", func() (server, net.Listener) { return d.admin, d.adminLn }, func(ctx context.Context) {
			actx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_ = d.admin.Shutdown(actx)
		}),
		d.serve("api", func() (server, net.Listener) { return d.api, d.apiLn }, func(ctx context.Context) {
			if err := d.api.Shutdown(ctx); err != nil {
				d.log.Warn("in-flight requests cut at shutdown_timeout", "error", err.Error())
				_ = d.api.Close()
				d.exitCode = 1
			}
			// The WebSocket connections the server handed over: drained
			// since Shutdown began (RegisterOnShutdown), waited for here.
			if err := d.resp.Shutdown(ctx); err != nil {
				d.log.Warn("WebSocket turns cut at shutdown_timeout", "error", err.Error())
				d.exitCode = 1
			}
		}),
	)
	if err != nil {
		return nil, err
	}
	d.ready.Store(true)
	log.Info("serving", "listen", d.apiLn.Addr().String(), "admin_listen", d.adminLn.Addr().String(),
		"providers", len(cfg.Providers), "models", len(cfg.Models), "version", o.Version, "config", Source(path))
	return d, nil
}

// newDaemon is a daemon with nothing started: its registry with the
// process's collectors, and the reload metrics.
func newDaemon(cfg *config.Config, path string, log *slog.Logger, o Options) *Daemon {
	d := &Daemon{cfgPath: path, log: log, types: o.Types, reg: prometheus.NewRegistry(), recent: recent.New(recentRequests)}
	d.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmrouter_config_last_reload_successful",
		Help: "1 if the last config reload succeeded (or none was tried), 0 if it failed."})
	d.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmrouter_config_reloads_total",
		Help: "Config reload attempts by result."}, []string{"result"})
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		d.reloadOK, d.reloads)
	d.reloadOK.Set(1)
	d.cfg.Store(cfg)
	return d
}

// tracing starts the tracer (d.tracer; nil with tracing off). Stopped last
// of all, it exports the drained requests' spans in what is left of
// shutdown_timeout and at most flushTimeout: a collector that is down
// must not hold the exit (docs/ARCHITECTURE.md, "Reload and shutdown").
func (d *Daemon) tracing(cfg tracing.Config, version string) component {
	return component{name: "tracing",
		start: func() (err error) {
			d.tracer, err = tracing.New(cfg, tracing.Options{Version: version, Registerer: d.reg, Logger: d.log})
			return err
		},
		stop: func(ctx context.Context) {
			fctx, cancel := context.WithTimeout(ctx, flushTimeout)
			defer cancel()
			if err := d.tracer.Shutdown(fctx); err != nil {
				d.log.Warn("tracing: spans not all exported at shutdown", "error", err.Error())
			}
		}}
}

// flushTimeout bounds the export of the last spans at shutdown.
const flushTimeout = 5 * time.Second

// fleet connects to shared_state's Redis, if set, and puts the fleet's
// parts in opts and the stored responses' store in *stored. Redis down is
// no reason not to start: redisconn.New decides locally until it answers
// (docs/ARCHITECTURE.md, "Fleet"). The spend it sends to Redis is closed
// by the state component, before the last save.
func (d *Daemon) fleet(cfg *config.Config, opts *routing.Options, stored *store.Store) component {
	sc := cfg.SharedState
	if !sc.On() {
		return component{name: "fleet"}
	}
	var (
		rc *redisconn.Conn
		fl *fleet.Client
		af *fleet.Affinity
	)
	return component{name: "fleet",
		start: func() (err error) {
			if rc, err = redisconn.New(sc, d.log, d.reg); err != nil {
				return err
			}
			fl = fleet.New(rc)
			opts.Fleet = fl
			d.spend = fleet.NewSpend(rc)
			opts.Spend = d.spend
			af = fleet.NewAffinity(rc)
			opts.SharedAffinity = af
			// Stored responses live in the same Redis, so that any
			// replica continues a conversation; while it is down, in
			// this process (docs/ARCHITECTURE.md, "Responses API").
			*stored = redisstore.NewShared(
				redisstore.New(rc.Client(), rc.KeyPrefix(), rc.Timeout(), rc.Fail, cfg.Responses),
				store.NewMemory(cfg.Responses, nil), rc.Up)
			return nil
		},
		stop: func(context.Context) {
			d.spend.Close()
			af.Close()
			fl.Close()
			rc.Close()
		}}
}

// listen opens both listeners and builds their servers; the front-door
// dialects are registered here (docs/ARCHITECTURE.md, "Front doors").
func (d *Daemon) listen(cfg *config.Config) component {
	return component{name: "listeners",
		start: func() (err error) {
			token, err := cfg.AdminToken(os.Getenv)
			if err != nil {
				return err
			}
			if d.apiLn, err = net.Listen("tcp", cfg.Listen); err != nil {
				return fmt.Errorf("listen: %w", err)
			}
			if d.adminLn, err = net.Listen("tcp", cfg.AdminListen); err != nil {
				d.apiLn.Close()
				return fmt.Errorf("admin_listen: %w", err)
			}
			d.api, d.admin = d.servers(cfg, token)
			return nil
		},
		// A server that served closed its listener already; this closes
		// the ones a failed start left unserved.
		stop: func(context.Context) {
			d.apiLn.Close()
			d.adminLn.Close()
		}}
}

// servers builds the API and admin listeners' servers.
func (d *Daemon) servers(cfg *config.Config, adminToken string) (apiSrv *h1server.Server, adminSrv *http.Server) {
	p := proxy.New(d.routes, proxy.Options{Logger: d.log, Registerer: d.reg, Tracer: d.tracer, Recent: d.recent})
	admin.Register(d.reg, d.routes)
	conns := prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmrouter_client_connections",
		Help: "Open client connections on the API listener (at most limits.max_connections)."})
	d.reg.MustRegister(conns)
	mux := http.NewServeMux()
	// The front-door dialects beyond the chat family (docs/ARCHITECTURE.md,
	// "Front doors").
	p.Register(mux, d.resp.Dialect(), messages.New(d.log).Dialect(), gemini.New(d.log).Dialect())
	// The API listener's own server (docs/ARCHITECTURE.md, "The API
	// listener"). limits.max_connections: past it, connections wait in
	// the kernel's accept queue; with the body budget it bounds memory
	// (docs/ARCHITECTURE.md, "Memory").
	apiSrv = &h1server.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		MaxConns:          cfg.Limits.WithDefaults().MaxConnections,
		Logger:            d.log,
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				conns.Inc()
			case http.StateClosed, http.StateHijacked:
				conns.Dec()
			}
		},
	}
	// Shutdown does not wait for hijacked connections (the Responses API
	// over WebSocket): they drain as it begins.
	apiSrv.RegisterOnShutdown(d.resp.Drain)
	// The admin server's requests live in a context its Shutdown ends: an
	// open status page event stream must not hold the shutdown.
	base, stopStreams := context.WithCancel(context.Background())
	adminSrv = &http.Server{
		Handler: admin.Handler(admin.Options{Routes: d.routes, Registry: d.reg, Ready: d.ready.Load, Pprof: cfg.Pprof, Logger: d.log, Token: adminToken,
			Recent: d.recent, Config: d.configStatus}),
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute, // a CPU profile runs 30s by default
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	adminSrv.RegisterOnShutdown(stopStreams)
	return apiSrv, adminSrv
}

// configStatus is the status page's config section: the routing table in
// force and the last reloads.
func (d *Daemon) configStatus() admin.ConfigStatus {
	d.histMu.Lock()
	reloads := slices.Clone(d.history)
	d.histMu.Unlock()
	if reloads == nil {
		reloads = []admin.Reload{}
	}
	return admin.ConfigStatus{Source: Source(d.cfgPath), Table: table(d.cfg.Load()), Reloads: reloads}
}

// remember keeps a reload's result for the status page.
func (d *Daemon) remember(err error) {
	r := admin.Reload{At: time.Now(), OK: err == nil}
	if err != nil {
		r.Error = err.Error()
	}
	d.histMu.Lock()
	defer d.histMu.Unlock()
	d.history = append(d.history, r)
	if n := len(d.history); n > maxHistory {
		d.history = slices.Delete(d.history, 0, n-maxHistory)
	}
}

// state restores the state file and starts the saver loop; stopped, it
// ends the loop and saves once more, after closing the fleet's spend so
// that what was still on its way to Redis goes to the state file, to be
// sent after the restart.
func (d *Daemon) state() component {
	return component{name: "state file",
		start: func() error {
			host, _ := os.Hostname()
			d.stateWriter = fmt.Sprintf("%s pid %d", host, os.Getpid())
			d.otherWriter = rate.Sometimes{Interval: 10 * time.Minute}
			d.restoreState()
			d.saver = goLoop(d.saveStateLoop)
			return nil
		},
		stop: func(context.Context) {
			d.saver.stop()
			if d.spend != nil {
				d.spend.Close()
			}
			d.saveState()
		}}
}

// watcher reloads on changes of the config file at path ("": nothing to
// watch).
func (d *Daemon) watcher(path string) component {
	if path == "" {
		return component{name: "config watcher"}
	}
	var l *loop
	return component{name: "config watcher",
		start: func() error { l = goLoop(d.watchConfig); return nil },
		stop:  func(context.Context) { l.stop() }}
}

// serve serves a server on its listener (both built by the listeners'
// component) until stop.
func (d *Daemon) serve(name string, srv func() (server, net.Listener), stop func(ctx context.Context)) component {
	var done chan struct{}
	return component{name: name + " listener",
		start: func() error {
			s, ln := srv()
			done = make(chan struct{})
			go func() {
				defer close(done)
				if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					d.log.Error("listener failed", "listener", name, "error", err.Error())
				}
			}()
			return nil
		},
		stop: func(ctx context.Context) {
			stop(ctx)
			<-done
		}}
}

// server is what serve runs: the API listener's h1server or the admin
// listener's net/http server.
type server interface{ Serve(net.Listener) error }

// Shutdown fails readiness, stops accepting, lets in-flight requests and
// streams finish up to shutdown_timeout, stops every component in reverse
// and reports the exit code.
func (d *Daemon) Shutdown() int {
	d.ready.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Load().ShutdownTimeout)
	defer cancel()
	d.parts.stop(ctx)
	d.log.Info("stopped")
	return d.exitCode
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
	defer func() { d.remember(err) }()
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
