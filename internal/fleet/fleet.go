package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/redisconn"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

const (
	// syncInterval is how often every provider's shared view is read.
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

// Client is the fleet's shared state. Build it with New; Close it when
// done, before its connection.
type Client struct {
	conn  *redisconn.Conn
	rdb   redis.UniversalClient
	token string // this process, in probe locks

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

// New starts the fleet's loops on conn, which says whether the shared
// state is up and marks it down at the first failed call; while it is
// down every decision is local. It preloads the fleet's scripts on conn.
func New(conn *redisconn.Conn) *Client {
	var b [8]byte
	_, _ = rand.Read(b[:])
	c := &Client{conn: conn, rdb: conn.Client(), token: hex.EncodeToString(b[:]),
		queue: make(chan job, queueSize), handle: make(map[*handle]struct{})}
	c.ctx, c.stop = context.WithCancel(context.Background())
	conn.Preload("sync", prod().admit, prod().record, prod().probeStart, prod().probeDone, prod().view, prod().enable, prod().disable)
	c.wg.Add(2)
	go c.syncLoop()
	go c.writeLoop()
	return c
}

// Close stops the loops; a write under way ends within the timeout.
func (c *Client) Close() {
	c.stop()
	c.wg.Wait()
}

// Up reports whether the shared state is in use.
func (c *Client) Up() bool { return c.conn.Up() }

// fail counts a failed call and, the first time, switches to local state.
func (c *Client) fail(op string, err error) { c.conn.Fail(op, err) }

func (c *Client) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.conn.Timeout())
}

// syncLoop reads every provider's view once a second while up (so idle
// replicas see trips, closes and blocks too); while down, the connection
// pings.
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
		if c.Up() {
			c.syncAll()
		}
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
			cmds[i] = prod().view.EvalSha(ctx, p, []string{h.key})
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
			c.conn.Ping() // Redis restarted between two syncs: load the scripts again
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
		c.conn.Dropped("record")
	}
}

var errReply = errors.New("fleet: unexpected reply from Redis")

// parseView reads a script's reply: code, wait, gen, breaker state, left,
// trips, trip kind, quota on, quota left, quota check, targets gen.
func parseView(cmd *redis.Cmd) (shared.View, error) {
	d, err := parseDecision(cmd)
	return d.View, err
}
