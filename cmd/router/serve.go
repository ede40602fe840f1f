package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
	"golang.org/x/time/rate"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/fleet"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/responses/api"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/statefile"
	"github.com/llmrouter/llmrouter/internal/warm"
)

// Server timeouts a slow or hostile client cannot hold open.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 32 << 10 // request line and headers; Go allows 4 KiB more
)

func loadConfig(path string) (*config.Config, error) {
	return config.Load(path)
}

// daemon is one running router: its listeners, proxy and readiness.
type daemon struct {
	cfgPath string
	log     *slog.Logger
	proxy   *proxy.Server
	resp    *api.Server   // the Responses API
	fleet   *fleet.Client // nil without shared_state
	ready   atomic.Bool
	api     *http.Server
	admin   *http.Server
	apiLn   net.Listener
	adminLn net.Listener
	cfg     atomic.Pointer[config.Config]
	reg     *prometheus.Registry
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

// stateSaveInterval is how often learned state is saved to state_file.
const stateSaveInterval = 30 * time.Second

// stateSaveDelay is how soon after a change worth keeping (a breaker
// transition, a rate-limit block, a quota block or lift, a target disabled
// or enabled) the state is saved: long enough to gather the changes one
// failure brings (a trip and a block) into one write, short enough that a
// router killed a second later finds them on restart
// (docs/ARCHITECTURE.md, "Warm restart").
const stateSaveDelay = 250 * time.Millisecond

// restoreState loads state_file, if set; trouble is a warning and a fresh
// start, never a failure.
func (d *daemon) restoreState() {
	path := d.cfg.Load().StateFile
	if path == "" {
		return
	}
	var raw json.RawMessage
	err := statefile.Load(path, &raw)
	var st warm.State
	if err == nil {
		st, err = warm.Decode(raw)
	}
	var r warm.Restored
	now := time.Now()
	if err == nil {
		r, err = warm.Restore(d.proxy, now, st)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.log.Info("no state file yet; starting fresh", "state_file", path)
		return
	case err != nil:
		d.log.Warn("ignoring state file; starting fresh", "state_file", path, "error", err.Error())
		return
	}
	for _, name := range slices.Sorted(maps.Keys(r.Fresh)) {
		d.log.Info("provider starts fresh: its configuration changed since the state was saved",
			"provider", name, "reason", r.Fresh[name].Error())
	}
	attrs := []any{"state_file", path, "providers", len(r.Providers), "version", st.Version}
	if !st.SavedAt.IsZero() { // version 1 did not say
		attrs = append(attrs, "saved_ago", now.Round(0).Sub(st.SavedAt).Round(time.Millisecond).String(), "writer", st.Writer)
	}
	d.log.Info("restored learned state", attrs...)
}

// saveState writes learned state to state_file, if set. Two routers on
// one file do not corrupt it (each save replaces it whole, atomically);
// the newest save wins, and a router that finds the file replaced by
// someone else since its own last save says so.
func (d *daemon) saveState() {
	path := d.cfg.Load().StateFile
	if path == "" {
		return
	}
	if prev := d.savedFile; prev != nil {
		if cur, err := os.Stat(path); err == nil && !sameSave(prev, cur) {
			d.otherWriter.Do(func() {
				d.log.Warn("the state file was replaced by another process since this router's last save: "+
					"routers sharing a state_file overwrite each other's state (the newest save wins); give each its own file",
					"state_file", path)
			})
		}
	}
	st := warm.Export(d.proxy, time.Now())
	st.Writer = d.stateWriter
	if err := statefile.Save(path, st); err != nil {
		d.log.Warn("saving state file failed", "state_file", path, "error", err.Error())
		return
	}
	d.savedFile, _ = os.Stat(path)
}

// sameSave reports whether cur is still the file a save of ours left
// (the same inode, time and size: an inode can be reused).
func sameSave(ours, cur os.FileInfo) bool {
	return os.SameFile(ours, cur) && ours.ModTime().Equal(cur.ModTime()) && ours.Size() == cur.Size()
}

// saveStateLoop saves every stateSaveInterval, and stateSaveDelay after
// a change worth keeping, until stopState.
func (d *daemon) saveStateLoop() {
	defer close(d.stateDone)
	t := time.NewTicker(stateSaveInterval)
	defer t.Stop()
	soon := time.NewTimer(stateSaveDelay)
	soon.Stop()
	defer soon.Stop()
	changed := d.proxy.StateChanged()
	pending := false // soon is armed
	for {
		var due <-chan time.Time
		if pending {
			due = soon.C
		}
		select {
		case <-d.stateCtx.Done():
			return
		case <-changed:
			if !pending {
				soon.Reset(stateSaveDelay)
				pending = true
			}
		case <-due:
			pending = false
			d.saveState()
		case <-t.C:
			soon.Stop()
			pending = false
			d.saveState()
		}
	}
}

func cmdServe(ctx context.Context, args []string, stderr io.Writer) int {
	path, err := configFlag("serve", args, stderr)
	if err != nil {
		return 2
	}
	cfg, err := loadConfig(path)
	if err != nil {
		fmt.Fprintln(stderr, "router:", err)
		return 1
	}
	log := newLogger(stderr, cfg.Log.Level, cfg.Log.Format)
	d, err := start(cfg, path, log)
	if err != nil {
		log.Error("starting", "error", err.Error())
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	for {
		select {
		case <-ctx.Done():
			return d.shutdown()
		case s := <-sigs:
			if s == syscall.SIGHUP {
				d.reload()
				continue
			}
			log.Info("shutting down", "signal", s.String())
			return d.shutdown()
		}
	}
}

// start builds everything from cfg and starts both listeners. hooks run
// on the daemon before anything starts (test seams).
func start(cfg *config.Config, path string, log *slog.Logger, hooks ...func(*daemon)) (*daemon, error) {
	opts, err := buildOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts.Registerer = reg
	var (
		fl     *fleet.Client
		stored store.Store // nil: in this process
	)
	if sc := cfg.SharedState; sc.On() {
		// Redis down is no reason not to start: fleet.New decides locally
		// until it answers (docs/ARCHITECTURE.md, "Fleet").
		if fl, err = fleet.New(sc, log, reg); err != nil {
			return nil, err
		}
		opts.Fleet = fl
		// Stored responses live in the same Redis, so that any replica
		// continues a conversation; while it is down, in this process
		// (docs/ARCHITECTURE.md, "Responses API").
		stored = store.NewShared(
			store.NewRedis(fl.Redis(), fl.KeyPrefix(), fl.Timeout(), fl.Fail, cfg.Responses),
			store.NewMemory(cfg.Responses, nil), fl.Up)
	}
	p, err := proxy.New(opts)
	if err != nil {
		if fl != nil {
			fl.Close()
		}
		return nil, err
	}
	resp, err := api.New(p, api.Options{Config: cfg.Responses, Store: stored, Logger: log, Registerer: reg})
	if err != nil {
		p.Close()
		if fl != nil {
			fl.Close()
		}
		return nil, err
	}
	d := &daemon{cfgPath: path, log: log, proxy: p, resp: resp, reg: reg, fleet: fl}
	d.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmrouter_config_last_reload_successful",
		Help: "1 if the last config reload succeeded (or none was tried), 0 if it failed."})
	d.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmrouter_config_reloads_total",
		Help: "Config reload attempts by result."}, []string{"result"})
	reg.MustRegister(d.reloadOK, d.reloads)
	d.reloadOK.Set(1)
	d.cfg.Store(cfg)
	if d.apiLn, err = net.Listen("tcp", cfg.Listen); err != nil {
		p.Close()
		d.closeFleet()
		return nil, fmt.Errorf("listen: %w", err)
	}
	// limits.max_connections: past it, connections wait in the kernel's
	// accept queue; with the body budget it bounds memory
	// (docs/ARCHITECTURE.md, "Memory").
	d.apiLn = netutil.LimitListener(d.apiLn, cfg.Limits.WithDefaults().MaxConnections)
	if d.adminLn, err = net.Listen("tcp", cfg.AdminListen); err != nil {
		d.apiLn.Close()
		p.Close()
		d.closeFleet()
		return nil, fmt.Errorf("admin_listen: %w", err)
	}
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	conns := prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmrouter_client_connections",
		Help: "Open client connections on the API listener (at most limits.max_connections)."})
	reg.MustRegister(conns)
	mux := http.NewServeMux()
	p.Register(mux)
	resp.Register(mux)
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
		Handler:           d.adminHandler(),
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
	log.Info("serving", "listen", d.apiLn.Addr().String(), "admin_listen", d.adminLn.Addr().String(),
		"providers", len(cfg.Providers), "models", len(cfg.Models), "version", version, "config", configSource(path))
	return d, nil
}

func (d *daemon) serve(s *http.Server, ln net.Listener, name string) {
	if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		d.log.Error("listener failed", "listener", name, "error", err.Error())
	}
}

// shutdown fails readiness, stops accepting, lets in-flight requests and
// streams finish up to shutdown_timeout, and reports the exit code.
func (d *daemon) shutdown() int {
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
	d.saveState()
	d.proxy.Close()
	d.closeFleet()
	d.log.Info("stopped")
	return code
}

func (d *daemon) closeFleet() {
	if d.fleet != nil {
		d.fleet.Close()
	}
}

// reload re-reads the config file; an invalid file leaves the old config
// serving.
func (d *daemon) reload() {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	cfg, err := loadConfig(d.cfgPath)
	if err == nil {
		var opts proxy.Options
		if opts, err = buildOptions(cfg, d.log); err == nil {
			if err = d.proxy.Update(opts); err == nil {
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
	d.log.Info("config reloaded", "providers", len(cfg.Providers), "models", len(cfg.Models))
}

func (d *daemon) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{Registry: d.reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !d.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "draining\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	if d.cfg.Load().Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("POST /admin/providers/{name}/enable", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		res, ok := d.proxy.Enable(name)
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "no provider named " + strconv.Quote(name)})
			return
		}
		d.log.Info("provider enabled", "provider", name, "quota_lifted", res.QuotaLifted, "targets_enabled", res.TargetsEnabled)
		_ = json.NewEncoder(w).Encode(res)
	})
	mux.HandleFunc("GET /admin/providers", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"providers": d.proxy.Providers()})
	})
	return mux
}
