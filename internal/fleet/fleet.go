// Package fleet shares each provider's state across a fleet of routers
// through Redis (shared_state; docs/ARCHITECTURE.md, "Fleet"): one breaker,
// one half-open probe, one request and token budget, and the Retry-After,
// quota and target blocks of every provider, whichever replica learned
// them. It implements upstream.Fleet.
//
// Redis is an optimisation, never a dependency of serving: every call is
// bounded by shared_state.timeout; the first failure marks the shared
// state down, and until a ping succeeds again (once a second) every
// decision is local, with no Redis call on the request path at all.
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/upstream"
)

const (
	// syncInterval is how often every provider's shared view is read (and,
	// while down, Redis pinged).
	syncInterval = time.Second
	// keyTTL is how long a provider's keys outlive their last write (longer
	// when a deadline lies further ahead).
	keyTTL = time.Hour
	// queueSize bounds the records waiting to be written.
	queueSize = 8192
	// batchSize is the most records one pipeline carries.
	batchSize = 256
	// probeWaitPoll is how often a replica waiting for another's probe
	// reads the verdict.
	probeWaitPoll = 200 * time.Millisecond
)

// Operations, the op label of llmrouter_shared_state_errors_total.
var ops = []string{"admit", "record", "probe", "sync", "responses"}

// Client is the fleet's shared state. Build it with New; Close it when
// done.
type Client struct {
	cfg   Config
	rdb   redis.UniversalClient
	log   *slog.Logger
	token string // this process, in probe locks

	up    atomic.Bool
	upG   prometheus.Gauge
	errs  *prometheus.CounterVec
	queue chan job
	// pending counts the records queued or being written.
	pending atomic.Int64
	stop    context.CancelFunc
	ctx     context.Context
	wg      sync.WaitGroup
	mu      sync.Mutex // guards handles
	handle  map[*handle]struct{}
	seq     atomic.Uint64
}

// job is one write for the writer loop.
type job struct {
	h    *handle
	s    *redis.Script
	args []any
}

// New connects to the configured Redis (cfg must pass Validate) and starts
// its loops. It never fails because Redis is down: the router starts and
// serves on local state, and joins the fleet when Redis answers. reg
// receives llmrouter_shared_state_up and llmrouter_shared_state_errors_total.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Client, error) {
	cfg = cfg.WithDefaults()
	o, err := cfg.options()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	c := &Client{cfg: cfg, rdb: redis.NewUniversalClient(o), log: log, token: hex.EncodeToString(b[:]),
		queue: make(chan job, queueSize), handle: make(map[*handle]struct{}),
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
	// go-redis's logger is global: the first Client's log takes it (a
	// router has one Client).
	setLogger.Do(func() { redis.SetLogger(redisLogger{log}) })
	c.ctx, c.stop = context.WithCancel(context.Background())
	if c.ping() {
		c.markUp()
	} else {
		c.log.Warn("shared state unreachable at start; deciding locally until it answers",
			"redis", cfg.Redacted())
	}
	c.wg.Add(2)
	go c.syncLoop()
	go c.writeLoop()
	return c, nil
}

// Close stops the loops (pending records are written if Redis answers
// within the timeout) and closes the connections.
func (c *Client) Close() {
	c.stop()
	c.wg.Wait()
	_ = c.rdb.Close()
}

// Up reports whether the shared state is in use.
func (c *Client) Up() bool { return c.up.Load() }

func (c *Client) markUp() {
	if !c.up.Swap(true) {
		c.upG.Set(1)
		c.log.Info("shared state in use", "redis", c.cfg.Redacted())
	}
}

// fail counts a failed call and, the first time, switches to local state.
func (c *Client) fail(op string, err error) {
	c.errs.WithLabelValues(op).Inc()
	if c.up.Swap(false) {
		c.upG.Set(0)
		c.log.Warn("shared state unreachable; deciding locally until it answers (checked every second)",
			"redis", c.cfg.Redacted(), "op", op, "error", err.Error())
	}
}

func (c *Client) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.cfg.Timeout)
}

// ping reports whether Redis answers and has the scripts loaded.
func (c *Client) ping() bool {
	ctx, cancel := context.WithTimeout(c.ctx, max(c.cfg.Timeout, 500*time.Millisecond))
	defer cancel()
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return false
	}
	for _, s := range []*redis.Script{admitScript, recordScript, probeStartScript, probeDoneScript, viewScript, enableScript, disableScript} {
		if err := s.Load(ctx, c.rdb).Err(); err != nil {
			return false
		}
	}
	return true
}

// syncLoop reads every provider's view once a second while up (so idle
// replicas see trips, closes and blocks too), and pings while down.
func (c *Client) syncLoop() {
	defer c.wg.Done()
	t := time.NewTicker(syncInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		if !c.Up() {
			if c.ping() {
				c.markUp()
			} else {
				continue
			}
		}
		c.syncAll()
	}
}

func (c *Client) handles() []*handle {
	c.mu.Lock()
	defer c.mu.Unlock()
	hs := make([]*handle, 0, len(c.handle))
	for h := range c.handle {
		hs = append(hs, h)
	}
	return hs
}

// syncAll reads every provider's view in one pipeline, then the disabled
// targets of those whose generation changed.
func (c *Client) syncAll() {
	hs := c.handles()
	if len(hs) == 0 {
		return
	}
	ctx, cancel := c.call()
	defer cancel()
	cmds := make([]*redis.Cmd, len(hs))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, h := range hs {
			cmds[i] = viewScript.EvalSha(ctx, p, []string{h.key})
		}
		return nil
	})
	if err != nil {
		c.fail("sync", err)
		return
	}
	for i, h := range hs {
		v, err := parseView(cmds[i])
		if err != nil {
			c.fail("sync", err)
			return
		}
		if v.TargetsGen != h.targetsGen.Load() {
			m, err := c.rdb.HGetAll(ctx, h.targets).Result()
			if err != nil {
				c.fail("sync", err)
				return
			}
			v.Targets = m
			h.targetsGen.Store(v.TargetsGen)
		}
		h.sink(v)
	}
}

// writeLoop writes queued records, up to batchSize per round trip.
func (c *Client) writeLoop() {
	defer c.wg.Done()
	batch := make([]job, 0, batchSize)
	for {
		select {
		case <-c.ctx.Done():
			return
		case j := <-c.queue:
			batch = append(batch[:0], j)
		}
	fill:
		for len(batch) < batchSize {
			select {
			case j := <-c.queue:
				batch = append(batch, j)
			default:
				break fill
			}
		}
		c.write(batch)
		c.pending.Add(-int64(len(batch)))
	}
}

func (c *Client) write(batch []job) {
	if !c.Up() {
		return // the records are lost; local state has them
	}
	ctx, cancel := c.call()
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, j := range batch {
			cmds[i] = j.s.EvalSha(ctx, p, []string{j.h.key, j.h.targets}, j.args...)
		}
		return nil
	})
	if err != nil {
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.ping() // Redis restarted between two syncs: load the scripts again
		}
		c.fail("record", err)
		return
	}
	for i, j := range batch {
		if v, err := parseView(cmds[i]); err == nil {
			j.h.sink(v)
		}
	}
}

// enqueue hands a write to the writer loop without waiting; a full queue
// drops it (counted).
func (c *Client) enqueue(j job) {
	if !c.Up() {
		return
	}
	c.pending.Add(1)
	select {
	case c.queue <- j:
	default:
		c.pending.Add(-1)
		c.errs.WithLabelValues("record").Inc()
	}
}

var errReply = errors.New("fleet: unexpected reply from Redis")

// parseView reads a script's reply: code, wait, gen, breaker state, left,
// trips, trip kind, quota on, quota left, quota check, targets gen.
func parseView(cmd *redis.Cmd) (upstream.SharedView, error) {
	d, err := parseDecision(cmd)
	return d.View, err
}

// Redis is the fleet's client, for other state kept in the same Redis
// (the Responses API's stored responses). Calls must be bounded by
// Timeout and go through Fail on error, so that every user of the shared
// state sees the same up or down.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// KeyPrefix starts every key (shared_state.key_prefix).
func (c *Client) KeyPrefix() string { return c.cfg.KeyPrefix }

// Timeout bounds one Redis call (shared_state.timeout).
func (c *Client) Timeout() time.Duration { return c.cfg.Timeout }

// Fail counts a failed call of op (a label of
// llmrouter_shared_state_errors_total: admit, record, probe, sync,
// responses) and marks the shared state down until a ping succeeds.
func (c *Client) Fail(op string, err error) { c.fail(op, err) }

var setLogger sync.Once

// redisLogger hands go-redis's log lines to slog at debug.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}
