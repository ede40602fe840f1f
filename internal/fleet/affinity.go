package fleet

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/redisconn"
)

// affinityQueue bounds the conversation entries waiting to be written.
const affinityQueue = 4096

// errDown: the shared state is not in use; the local table answers.
var errDown = errors.New("fleet: shared state down")

// Affinity is the fleet's view of the conversations (docs/ARCHITECTURE.md,
// "Affinity"): one string key per conversation,
// `<key_prefix>aff:<identity in hex>`, holding the provider and model that
// served its last turn on any router, expiring routing.affinity.ttl after
// that turn. A follow-up turn reads it with one GET bounded by
// shared_state.timeout; the entry is written off the request path, queued
// and pipelined. While the shared state is down nothing is asked: the
// process's own table answers. Build it with NewAffinity; Close it before
// its connection.
type Affinity struct {
	conn   *redisconn.Conn
	rdb    redis.UniversalClient
	prefix string

	queue   chan affinityPut
	pending atomic.Int64 // entries queued or being written
	ctx     context.Context
	stop    context.CancelFunc
	closing chan struct{} // closed by Close: the writer drains the queue and ends
	wg      sync.WaitGroup
}

type affinityPut struct {
	key    affinity.Key
	target affinity.Target
	ttl    time.Duration
}

var _ affinity.Shared = (*Affinity)(nil)

// NewAffinity starts the writer of conversation entries on conn.
func NewAffinity(conn *redisconn.Conn) *Affinity {
	a := &Affinity{conn: conn, rdb: conn.Client(), prefix: conn.KeyPrefix(), queue: make(chan affinityPut, affinityQueue),
		closing: make(chan struct{})}
	a.ctx, a.stop = context.WithCancel(context.Background())
	a.wg.Add(1)
	go a.writeLoop()
	return a
}

// Close writes what is queued, each batch within the shared state's
// timeout (nothing when it is down), and stops the writer: a router that
// drains at shutdown leaves its last turns' homes to the fleet.
func (a *Affinity) Close() {
	close(a.closing)
	a.wg.Wait()
	a.stop()
}

func (a *Affinity) key(k affinity.Key) string {
	var b [48]byte
	buf := append(b[:0], a.prefix...)
	buf = append(buf, "aff:"...)
	return string(strconv.AppendUint(buf, uint64(k), 16))
}

// Get reads key's entry: ok false when no router served the
// conversation within the TTL; an error when the shared state is down or
// the call failed (counted, op "affinity", and the shared state marked
// down).
func (a *Affinity) Get(key affinity.Key) (affinity.Target, bool, error) {
	if !a.conn.Up() {
		return affinity.Target{}, false, errDown
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.conn.Timeout())
	defer cancel()
	v, err := a.rdb.Get(ctx, a.key(key)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return affinity.Target{}, false, nil
	case err != nil:
		a.conn.Fail("affinity", err)
		return affinity.Target{}, false, err
	}
	provider, model, ok := strings.Cut(v, "\x00")
	if !ok {
		return affinity.Target{}, false, nil
	}
	return affinity.Target{Provider: provider, Model: model}, true, nil
}

// Put queues key's entry; a full queue drops it (counted, op "affinity").
func (a *Affinity) Put(key affinity.Key, target affinity.Target, ttl time.Duration) {
	if !a.conn.Up() {
		return
	}
	a.pending.Add(1)
	select {
	case a.queue <- affinityPut{key, target, ttl}:
	default:
		a.pending.Add(-1)
		a.conn.Dropped("affinity")
	}
}

// Pending is how many entries are queued or being written (tests).
func (a *Affinity) Pending() int64 { return a.pending.Load() }

// writeLoop writes queued entries, up to batchSize per round trip.
func (a *Affinity) writeLoop() {
	defer a.wg.Done()
	batch := make([]affinityPut, 0, batchSize)
	for {
		select {
		case <-a.closing:
			a.drain(batch)
			return
		case p := <-a.queue:
			batch = append(batch[:0], p)
		}
	fill:
		for len(batch) < batchSize {
			select {
			case p := <-a.queue:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		a.write(batch)
		a.pending.Add(-int64(len(batch)))
	}
}

// drain writes what is left in the queue, a batch at a time.
func (a *Affinity) drain(batch []affinityPut) {
	for {
		batch = batch[:0]
	fill:
		for len(batch) < batchSize {
			select {
			case p := <-a.queue:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		if len(batch) == 0 {
			return
		}
		a.write(batch)
		a.pending.Add(-int64(len(batch)))
	}
}

func (a *Affinity) write(batch []affinityPut) {
	if !a.conn.Up() {
		return // lost; the local table has them
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.conn.Timeout())
	defer cancel()
	_, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range batch {
			p.Set(ctx, a.key(e.key), e.target.Provider+"\x00"+e.target.Model, e.ttl)
		}
		return nil
	})
	if err != nil {
		a.conn.Fail("affinity", err)
	}
}
