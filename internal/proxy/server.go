package proxy

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/bulkhead"
	"github.com/llmrouter/llmrouter/internal/guard"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
)

// Provider is one configured provider as the proxy sees it.
type Provider struct {
	// Name is the provider's configured name (targets refer to it).
	Name string
	// Type is the adapter type, for /admin/providers.
	Type string
	// Adapter sends attempts; it must be safe for concurrent use.
	Adapter provider.Adapter
	// Config holds the per-attempt timeouts (zero fields take defaults).
	Config provider.Config
	// Secrets are strings (the provider's API key) that must never reach
	// a client, a log line or /admin: provider messages that echo them
	// are redacted.
	Secrets []string
}

// Options configure a Server.
type Options struct {
	Providers []Provider
	Models    *route.Table
	Limits    LimitsConfig
	// Retry is the retry policy; the zero value means backoff.DefaultConfig.
	Retry backoff.Config
	// Breaker configures every provider's circuit breaker; the zero value
	// means breaker.DefaultConfig.
	Breaker breaker.Config
	// Weights are the score weights; the zero value means
	// route.DefaultWeights.
	Weights route.Weights
	// ThrottleK is the adaptive throttling multiplier K; 0 disables it.
	ThrottleK float64
	// ShedOpenFraction: above this share of open providers, low priority
	// is refused and normal priority queues. 0 means 0.5; 1 never sheds.
	ShedOpenFraction float64
	// ClientKeys are the accepted client API keys; empty disables client
	// authentication.
	ClientKeys []string
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
	// Registerer receives the proxy's metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// Now is the clock for admission decisions (buckets, backoff); nil
	// means time.Now. A test seam: waits still use real timers.
	Now func() time.Time
}

// upstream is a provider plus the live state the proxy keeps for it.
type upstream struct {
	Provider
	*live
	stop   context.CancelFunc // ends the prober loop
	prober sync.WaitGroup
}

// state is everything a request reads; it is replaced whole by Update.
type state struct {
	providers map[string]*upstream
	order     []*upstream // config order, for listings
	models    *route.Table
	limits    LimitsConfig
	retry     backoff.Config
	weights   route.Weights
	shedAbove float64
	keys      [][]byte
	created   int64 // unix time the model list reports
}

// Server serves the OpenAI-compatible API.
type Server struct {
	st       atomic.Pointer[state]
	log      *slog.Logger
	idPrefix string
	idSeq    atomic.Uint64
	capacity *bulkhead.Signal // wakes requests waiting for any bulkhead
	bodies   budget           // request body bytes held (limits.body_buffer_bytes)
	now      func() time.Time
	m        *metrics

	shedSlots   chan struct{} // normal-priority slots while shedding
	shedWaiting atomic.Int32
	// streamWarn thins the after-commit stream failure warning: under a
	// failing provider at thousands of requests per second, one line per
	// few seconds says enough (the metrics count every one).
	streamWarn rate.Sometimes

	mu     sync.Mutex // serializes Update and Close
	closed bool
}

// New returns a Server for opts and starts its providers' prober loops;
// Close stops them.
func New(opts Options) (*Server, error) {
	s := &Server{log: opts.Logger, capacity: bulkhead.NewSignal(), now: opts.Now, shedSlots: make(chan struct{}, shedSlots),
		streamWarn: rate.Sometimes{First: 3, Interval: 5 * time.Second}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	s.idPrefix = "req_" + hex.EncodeToString(rnd[:])
	s.m = newMetrics(opts.Registerer, s)
	if err := s.Update(opts); err != nil {
		return nil, err
	}
	return s, nil
}

// guardConfig is what a provider's guard is built from; a provider whose
// guardConfig and adapter settings did not change keeps its guard (breaker
// state, learned limits) across Update.
func guardConfig(p Provider, b breaker.Config) guard.Config {
	return guard.Config{MaxConcurrency: p.Config.MaxConcurrency, RPM: p.Config.RPM, TPM: p.Config.TPM, Breaker: b}
}

// Update replaces the routing state. Requests in flight finish on the state
// they started with. Providers whose settings did not change keep their
// guard; the others get a fresh one and the old prober loops stop.
func (s *Server) Update(opts Options) error {
	if opts.Models == nil {
		return errors.New("proxy: no model table")
	}
	if err := opts.Limits.Validate(); err != nil {
		return err
	}
	opts.Limits = opts.Limits.WithDefaults()
	if opts.Retry == (backoff.Config{}) {
		opts.Retry = backoff.DefaultConfig()
	}
	if err := opts.Retry.Validate(); err != nil {
		return err
	}
	if opts.Breaker == (breaker.Config{}) {
		opts.Breaker = breaker.DefaultConfig()
	}
	if err := opts.Breaker.Validate(); err != nil {
		return err
	}
	if opts.Weights == (route.Weights{}) {
		opts.Weights = route.DefaultWeights()
	}
	if err := opts.Weights.Validate(); err != nil {
		return err
	}
	if opts.ShedOpenFraction == 0 {
		opts.ShedOpenFraction = 0.5
	}
	if !(opts.ShedOpenFraction > 0 && opts.ShedOpenFraction <= 1) {
		return fmt.Errorf("routing.shed_open_fraction: must be in (0, 1], got %g", opts.ShedOpenFraction)
	}
	st := &state{
		providers: make(map[string]*upstream, len(opts.Providers)),
		models:    opts.Models,
		limits:    opts.Limits,
		retry:     opts.Retry,
		weights:   opts.Weights,
		shedAbove: opts.ShedOpenFraction,
		created:   time.Now().Unix(),
	}
	for _, p := range opts.Providers {
		if p.Adapter == nil {
			return fmt.Errorf("proxy: provider %q has no adapter", p.Name)
		}
		if _, dup := st.providers[p.Name]; dup {
			return fmt.Errorf("proxy: duplicate provider %q", p.Name)
		}
		p.Config = p.Config.WithDefaults()
		u := &upstream{Provider: p}
		st.providers[p.Name] = u
		st.order = append(st.order, u)
	}
	for _, name := range opts.Models.Names() {
		for _, t := range opts.Models.Lookup(name).Targets {
			if st.providers[t.Provider] == nil {
				return fmt.Errorf("proxy: model %q targets unknown provider %q", name, t.Provider)
			}
		}
	}
	for _, k := range opts.ClientKeys {
		if k = strings.TrimSpace(k); k != "" {
			st.keys = append(st.keys, []byte(k))
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("proxy: server closed")
	}
	old := s.st.Load()
	var retired []*upstream
	for _, u := range st.order {
		gc := guardConfig(u.Provider, opts.Breaker)
		if old != nil {
			if prev := old.providers[u.Name]; prev != nil && prev.Type == u.Type && prev.Config == u.Config &&
				prev.guard.Config() == gc && prev.throttle.K() == opts.ThrottleK {
				u.live = prev.live // keep breaker state, learned limits, stats
			}
		}
		if u.live == nil {
			u.live = s.newLive(u.Name, gc, opts.ThrottleK)
		}
	}
	if old != nil {
		retired = old.order
	}
	for _, u := range st.order {
		s.startProber(u)
	}
	s.st.Store(st)
	for _, u := range retired {
		u.stop()
		u.prober.Wait()
	}
	return nil
}

// startProber runs the provider's breaker prober until the upstream is
// retired by Update or the Server is closed.
func (s *Server) startProber(u *upstream) {
	ctx, cancel := context.WithCancel(context.Background())
	u.stop = cancel
	probe := func(context.Context) error { return nil }
	if pr, ok := u.Adapter.(provider.Prober); ok {
		probe = pr.Probe
	}
	counted := func(ctx context.Context) error {
		err := probe(ctx)
		result := "success"
		if err != nil {
			result = "failure"
			s.log.Warn("probe failed", "provider", u.Name, "error", u.redact(err.Error()))
		} else {
			s.log.Info("probe succeeded", "provider", u.Name)
		}
		s.m.probes.WithLabelValues(u.Name, result).Inc()
		return err
	}
	u.prober.Add(1)
	go func() {
		defer u.prober.Done()
		u.guard.RunProber(ctx, counted, u.Config.FirstTokenTimeout)
	}()
}

// Close stops the prober loops. Requests in flight are not affected; the
// HTTP server's Shutdown drains those.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for _, u := range s.st.Load().order {
		u.stop()
		u.prober.Wait()
	}
}

// Handler returns the API handler (the routes of DESIGN §4).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serveOp(w, r, provider.OpChat) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.serveOp(w, r, provider.OpCompletions) })
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) { s.serveOp(w, r, provider.OpEmbeddings) })
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /v1/models/{model...}", s.serveModel)
	mux.HandleFunc("/", s.serveNotFound)
	return mux
}

// requestID returns the client's X-Request-ID when it is short printable
// ASCII, else a fresh one.
func (s *Server) requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 {
		ok := true
		for i := 0; i < len(id); i++ {
			if id[i] < 0x21 || id[i] > 0x7e {
				ok = false
				break
			}
		}
		if ok {
			return id
		}
	}
	return s.idPrefix + strconv.FormatUint(s.idSeq.Add(1), 36)
}

// authorized reports whether r carries an accepted client key. Every key
// is compared, in constant time, whatever matched earlier.
func (st *state) authorized(r *http.Request) bool {
	if len(st.keys) == 0 {
		return true
	}
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := []byte(strings.TrimSpace(h[len(prefix):]))
	ok := 0
	for _, k := range st.keys {
		ok |= subtle.ConstantTimeCompare(got, k)
	}
	return ok == 1
}

func (s *Server) checkAuth(w http.ResponseWriter, r *http.Request, st *state) bool {
	if st.authorized(r) {
		return true
	}
	if r.ContentLength != 0 {
		endConnection(w) // the body is not read for an unknown client
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="llmrouter"`)
	writeError(w, http.StatusUnauthorized, "authentication_error", "invalid_api_key", "",
		"missing or invalid API key: send Authorization: Bearer <key>", 0)
	return false
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	st := s.st.Load()
	w.Header().Set("X-Request-ID", s.requestID(r))
	if !s.checkAuth(w, r, st) {
		return
	}
	names := st.models.Names()
	b := make([]byte, 0, 64+len(names)*96)
	b = append(b, `{"object":"list","data":[`...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendModel(b, n, st.created)
	}
	b = append(b, "]}\n"...)
	writeJSON(w, b)
}

func (s *Server) serveModel(w http.ResponseWriter, r *http.Request) {
	st := s.st.Load()
	w.Header().Set("X-Request-ID", s.requestID(r))
	if !s.checkAuth(w, r, st) {
		return
	}
	name := r.PathValue("model")
	if st.models.Lookup(name) == nil {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model",
			"the model "+quote(name)+" does not exist", 0)
		return
	}
	writeJSON(w, append(appendModel(nil, name, st.created), '\n'))
}

func appendModel(b []byte, name string, created int64) []byte {
	b = append(b, `{"id":`...)
	b = provider.AppendJSONString(b, name)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, created, 10)
	return append(b, `,"owned_by":"llmrouter"}`...)
}

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func (s *Server) serveNotFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Request-ID", s.requestID(r))
	if r.ContentLength != 0 {
		endConnection(w) // the body of an unknown route is not read
	}
	switch r.URL.Path {
	case "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models":
		allow := "POST"
		if r.URL.Path == "/v1/models" {
			allow = "GET"
		}
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "",
			r.Method+" is not allowed on "+r.URL.Path+": use "+allow, 0)
		return
	}
	writeError(w, http.StatusNotFound, "invalid_request_error", "not_found", "",
		"unknown route "+r.Method+" "+quote(r.URL.Path), 0)
}

// ProviderStatus is one row of GET /admin/providers.
type ProviderStatus struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// State is the breaker's: closed, half_open or open.
	State string `json:"state"`
	// CooldownLeftSeconds is how long until the next probe; 0 unless open.
	CooldownLeftSeconds float64 `json:"cooldown_left_seconds"`
	// ConsecutiveTrips counts trips since the breaker last closed.
	ConsecutiveTrips int `json:"consecutive_trips"`
	InFlight         int `json:"in_flight"`
	MaxConcurrency   int `json:"max_concurrency"`
	// RPM and TPM limits in force (0 unknown) and what is left now (-1
	// unknown); BlockedSeconds is how long Retry-After or an announced
	// empty budget still keeps requests away.
	RPMLimit          int64   `json:"rpm_limit"`
	TPMLimit          int64   `json:"tpm_limit"`
	RemainingRequests int64   `json:"remaining_requests"`
	RemainingTokens   int64   `json:"remaining_tokens"`
	BlockedSeconds    float64 `json:"blocked_seconds"`
	// LastErrorKind is the kind of the last failure that counted against
	// the provider; "" when none yet.
	LastErrorKind string `json:"last_error_kind"`
	// Score is the provider's health score and its parts (latency relative
	// to the fastest provider); Stats are the raw window figures.
	Score route.Score `json:"score"`
	Stats StatsView   `json:"stats"`
}

// StatsView is a provider's windowed statistics.
type StatsView struct {
	Requests        int64   `json:"requests"`
	Failures        int64   `json:"failures"`
	SuccessRate     float64 `json:"success_rate"`
	LatencyEMAMs    float64 `json:"latency_ema_ms"`
	P50Ms           float64 `json:"p50_ms"`
	P95Ms           float64 `json:"p95_ms"`
	P99Ms           float64 `json:"p99_ms"`
	SinceSuccessSec float64 `json:"since_success_seconds"` // -1 never
}

// scores returns every provider's score (latency relative to the fastest
// provider overall), in config order.
func (s *Server) scores(st *state, now time.Time) []route.Score {
	m := &route.Model{}
	for _, u := range st.order {
		m.Targets = append(m.Targets, route.Target{Provider: u.Name})
	}
	hs := make([]route.Health, len(st.order))
	for i, u := range st.order {
		hs[i] = u.health(now)
	}
	out := make([]route.Score, len(st.order))
	for i := range st.order {
		out[i] = st.weights.ScoreOf(m, func(j int) route.Health { return hs[j] }, i)
	}
	return out
}

// Providers returns the live per-provider status, in config order.
func (s *Server) Providers() []ProviderStatus {
	st := s.st.Load()
	now := s.now()
	out := make([]ProviderStatus, 0, len(st.order))
	scores := s.scores(st, now)
	for i, u := range st.order {
		g := u.guard.Snapshot(now)
		sn := u.stats.Snapshot(now)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		ps := ProviderStatus{
			Name: u.Name, Type: u.Type,
			State:               g.Breaker.State.String(),
			CooldownLeftSeconds: g.Breaker.CooldownLeft.Seconds(),
			ConsecutiveTrips:    g.Breaker.ConsecutiveTrips,
			InFlight:            g.InFlight, MaxConcurrency: g.MaxConc,
			RPMLimit: g.Limits.RequestsLimit, TPMLimit: g.Limits.TokensLimit,
			RemainingRequests: g.Limits.RemainingRequests, RemainingTokens: g.Limits.RemainingTokens,
			BlockedSeconds: g.Limits.BlockedFor.Seconds(),
			Score:          scores[i],
			Stats: StatsView{Requests: sn.Requests, Failures: sn.Failures, SuccessRate: sn.SuccessRate,
				LatencyEMAMs: ms(sn.LatencyEMA), P50Ms: ms(sn.P50), P95Ms: ms(sn.P95), P99Ms: ms(sn.P99),
				SinceSuccessSec: -1},
		}
		if sn.SinceSuccess >= 0 {
			ps.Stats.SinceSuccessSec = sn.SinceSuccess.Seconds()
		}
		if g.LastKind != 0 {
			ps.LastErrorKind = g.LastKind.String()
		}
		out = append(out, ps)
	}
	return out
}

// redact replaces the provider's secrets in a provider-supplied text.
func (u *upstream) redact(msg string) string {
	for _, sec := range u.Secrets {
		if len(sec) >= 4 && strings.Contains(msg, sec) {
			msg = strings.ReplaceAll(msg, sec, "[redacted]")
		}
	}
	return msg
}
