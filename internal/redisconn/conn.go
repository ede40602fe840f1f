package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// pingInterval is how often a connection that is down pings Redis.
const pingInterval = time.Second

// Operations, the op label of llmrouter_shared_state_errors_total: the
// fleet's (admit, record, probe, sync), the stored responses'
// (responses), the client keys' spend (keys) and the conversations'
// affinity (affinity). Each has its series from start-up.
var ops = []string{"admit", "record", "probe", "sync", "responses", "keys", "affinity"}

// Conn is the connection to the shared state. Build it with New; Close it
// after its users. All methods are safe for concurrent use.
type Conn struct {
	cfg Config
	rdb redis.UniversalClient
	log *slog.Logger

	up   atomic.Bool
	upG  prometheus.Gauge
	errs *prometheus.CounterVec

	mu      sync.Mutex // guards scripts
	scripts []*redis.Script

	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New connects to the configured Redis (cfg must pass Validate) and
// starts the ping loop. It never fails because Redis is down: the router
// starts and serves on local state, and uses the shared state when Redis
// answers. reg receives llmrouter_shared_state_up and
// llmrouter_shared_state_errors_total.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Conn, error) {
	cfg = cfg.WithDefaults()
	o, err := cfg.options()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Conn{cfg: cfg, rdb: redis.NewUniversalClient(o), log: log,
		upG: prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmrouter_shared_state_up",
			Help: "1 while the shared state (Redis) is reachable and used; 0 while every decision is local."}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmrouter_shared_state_errors_total",
			Help: "Failed or timed-out shared state (Redis) calls, by operation."}, []string{"op"}),
	}
	for _, op := range ops {
		c.errs.WithLabelValues(op)
	}
	if reg != nil {
		reg.MustRegister(c.upG, c.errs)
	}
	// go-redis's own notes (sentinel switches, pool trouble) go to the
	// router's log at debug, structured, instead of raw lines on stderr.
	// go-redis's logger is global: the first Conn's log takes it (a
	// router has one Conn).
	setLogger.Do(func() { redis.SetLogger(redisLogger{log}) })
	c.ctx, c.stop = context.WithCancel(context.Background())
	if c.Ping() {
		c.markUp()
	} else {
		c.log.Warn("shared state unreachable at start; deciding locally until it answers",
			"redis", cfg.Redacted())
	}
	c.wg.Add(1)
	go c.pingLoop()
	return c, nil
}

// Close stops the ping loop and closes the connections.
func (c *Conn) Close() {
	c.stop()
	c.wg.Wait()
	_ = c.rdb.Close()
}

// Client is the go-redis client. Every call must be bounded by Timeout
// and its failure reported to Fail, so that every user of the shared
// state sees the same up or down.
func (c *Conn) Client() redis.UniversalClient { return c.rdb }

// KeyPrefix starts every key (shared_state.key_prefix).
func (c *Conn) KeyPrefix() string { return c.cfg.KeyPrefix }

// Timeout bounds one Redis call (shared_state.timeout).
func (c *Conn) Timeout() time.Duration { return c.cfg.Timeout }

// Up reports whether the shared state is in use.
func (c *Conn) Up() bool { return c.up.Load() }

func (c *Conn) markUp() {
	if !c.up.Swap(true) {
		c.upG.Set(1)
		c.log.Info("shared state in use", "redis", c.cfg.Redacted())
	}
}

// Fail counts a failed call of op (a label of
// llmrouter_shared_state_errors_total: admit, record, probe, sync,
// responses, keys, affinity) and, the first time, marks the shared state down until a
// ping succeeds.
func (c *Conn) Fail(op string, err error) {
	c.errs.WithLabelValues(op).Inc()
	if c.up.Swap(false) {
		c.upG.Set(0)
		c.log.Warn("shared state unreachable; deciding locally until it answers (checked every second)",
			"redis", c.cfg.Redacted(), "op", op, "error", err.Error())
	}
}

// Dropped counts a call of op given up before it was sent (a full
// queue): an error, but one that says nothing about Redis.
func (c *Conn) Dropped(op string) { c.errs.WithLabelValues(op).Inc() }

// Preload adds scripts to those every ping loads, so that EVALSHA (in a
// pipeline, which cannot fall back to EVAL) finds them, and loads them
// now while the shared state is up; failing that, it is a failed call of
// op.
func (c *Conn) Preload(op string, scripts ...*redis.Script) {
	c.mu.Lock()
	c.scripts = append(c.scripts, scripts...)
	c.mu.Unlock()
	if !c.Up() {
		return
	}
	ctx, cancel := c.pingContext()
	defer cancel()
	if err := load(ctx, c.rdb, scripts); err != nil {
		c.Fail(op, err)
	}
}

// Ping reports whether Redis answers and holds the preloaded scripts
// (loading them). It does not mark the shared state up: the ping loop
// does.
func (c *Conn) Ping() bool {
	ctx, cancel := c.pingContext()
	defer cancel()
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return false
	}
	c.mu.Lock()
	scripts := c.scripts // only ever appended to
	c.mu.Unlock()
	return load(ctx, c.rdb, scripts) == nil
}

func (c *Conn) pingContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, max(c.cfg.Timeout, 500*time.Millisecond))
}

func load(ctx context.Context, rdb redis.UniversalClient, scripts []*redis.Script) error {
	for _, s := range scripts {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

// pingLoop pings once a second while the shared state is down and marks
// it up when Redis answers.
func (c *Conn) pingLoop() {
	defer c.wg.Done()
	t := time.NewTicker(pingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		if !c.Up() && c.Ping() {
			c.markUp()
		}
	}
}

var setLogger sync.Once

// redisLogger hands go-redis's log lines to slog at debug.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}
