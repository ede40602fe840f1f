package admin

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/recent"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// Options configure the admin listener's handler.
type Options struct {
	// Routes is the routing state whose providers /admin/providers shows
	// and enable lifts, and whose client keys /admin/keys shows.
	Routes *routing.Routes
	// Registry is what /metrics serves.
	Registry *prometheus.Registry
	// Ready reports whether the router takes traffic: /readyz answers 503
	// while it says false (draining).
	Ready func() bool
	// Pprof serves Go's profiler at /debug/pprof/.
	Pprof bool
	// Logger receives a line per provider enabled; nil discards.
	Logger *slog.Logger
	// Token, when not "", is admin_token_env's token: everything but
	// /healthz, /readyz and /metrics requires it. "" leaves them open to a
	// loopback Host only (guard).
	Token string
	// Recent is the ring of the last requests the status page shows
	// (GET /admin/recent, the requests events); nil shows none.
	Recent *recent.Ring
	// Config reports the routing table in force and the last reloads
	// (GET /admin/config, the status page's config section); nil reports
	// nothing.
	Config func() ConfigStatus
}

// ConfigStatus is GET /admin/config: where the config came from, the
// routing table `router validate` prints, and the last reloads, newest
// last.
type ConfigStatus struct {
	Source  string   `json:"source"`
	Table   string   `json:"table"`
	Reloads []Reload `json:"reloads"`
}

// Reload is one reload and its result: Error is "" when it succeeded.
type Reload struct {
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Error string    `json:"error"`
}

// State is the status page's state event (GET /admin/state): the
// providers, the models and the client keys at one moment, and the last
// reloads.
type State struct {
	At        time.Time        `json:"at"`
	Providers []ProviderStatus `json:"providers"`
	Models    []ModelStatus    `json:"models"`
	Keys      []KeyStatus      `json:"keys"`
	Reloads   []Reload         `json:"reloads"`
}

// Snapshot returns the state of o at this moment.
func Snapshot(o Options) State {
	rows := Providers(o.Routes)
	st := State{At: o.Routes.View().At, Providers: rows, Models: Models(o.Routes, rows), Keys: Keys(o.Routes), Reloads: []Reload{}}
	if o.Config != nil {
		if r := o.Config().Reloads; r != nil {
			st.Reloads = r
		}
	}
	return st
}

// Handler returns the admin listener's handler.
func Handler(o Options) http.Handler {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{Registry: o.Registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !o.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "draining\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("POST /admin/providers/{name}/enable", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		res, ok := Enable(o.Routes, name)
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "no provider named " + strconv.Quote(name)})
			return
		}
		log.Info("provider enabled", "provider", name, "quota_lifted", res.QuotaLifted, "targets_enabled", res.TargetsEnabled)
		_ = json.NewEncoder(w).Encode(res)
	})
	mux.HandleFunc("GET /admin/providers", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"providers": Providers(o.Routes)})
	})
	mux.HandleFunc("GET /admin/keys", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"keys": Keys(o.Routes)})
	})
	mux.HandleFunc("GET /admin/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"models": Models(o.Routes, Providers(o.Routes))})
	})
	mux.HandleFunc("GET /admin/state", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, Snapshot(o)) })
	mux.HandleFunc("GET /admin/recent", func(w http.ResponseWriter, _ *http.Request) {
		rs, _ := o.Recent.Since(0, 0, nil)
		if rs == nil {
			rs = []recent.Request{}
		}
		writeJSON(w, map[string]any{"requests": rs})
	})
	mux.HandleFunc("GET /admin/config", func(w http.ResponseWriter, _ *http.Request) {
		c := ConfigStatus{Reloads: []Reload{}}
		if o.Config != nil {
			c = o.Config()
		}
		writeJSON(w, c)
	})
	mux.Handle("GET /admin/events", &events{state: func() any { return Snapshot(o) }, ring: o.Recent, tick: stateEvery, writeTimeout: eventWriteTimeout})
	page(mux)
	return guard(o.Token, mux)
}

// writeJSON answers v as indented JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Enabled is what Enable lifted.
type Enabled struct {
	Provider       string   `json:"provider"`
	QuotaLifted    bool     `json:"quota_lifted"`
	TargetsEnabled []string `json:"targets_enabled"`
}

// Enable lifts the named provider's quota block and disabled targets (an
// operator's word that the quota is back or the models exist); false when
// no provider of rt has that name.
func Enable(rt *routing.Routes, name string) (Enabled, bool) {
	p := rt.View().Provider(name)
	if p == nil {
		return Enabled{}, false
	}
	quota, targets := p.Up.Enable()
	if targets == nil {
		targets = []string{}
	}
	return Enabled{Provider: name, QuotaLifted: quota, TargetsEnabled: targets}, true
}

// KeyStatus is one row of GET /admin/keys.
type KeyStatus = clientkeys.Status

// Keys returns rt's named client keys' rows, in config order: spend
// this period, budget, remaining, reset, RPM/TPM in use.
func Keys(rt *routing.Routes) []KeyStatus {
	v := rt.View()
	return v.Clients.Status(v.At)
}
