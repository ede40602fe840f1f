package fleet

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/budget"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/redisconn"
)

// Spend is the fleet's number for each client key's spend in each budget
// period (docs/ARCHITECTURE.md, "Client keys and spend"): one integer of
// nano-dollars per key and period, <key_prefix>{key:<name>}:spend:<period>,
// read with GET on a request's admission (its one round trip) and raised
// with INCRBY, which is atomic, by one writer goroutine, pipelined and off
// the request path. Build it with NewSpend; Close it before its
// connection.
type Spend struct {
	conn   *redisconn.Conn
	rdb    redis.UniversalClient
	prefix string

	queue     chan spendJob
	ctx       context.Context
	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var _ clientkeys.Shared = (*Spend)(nil)

// spendJob is one addition for the writer.
type spendJob struct {
	key    string
	amount budget.Nano
	expire time.Time
	done   func(budget.Nano, error)
}

// errSpendDropped answers an addition that was not sent (a full queue,
// the shared state down or closing): its amount is sent again later.
var errSpendDropped = errors.New("fleet: spend not sent")

// NewSpend starts the writer on conn.
func NewSpend(conn *redisconn.Conn) *Spend {
	s := &Spend{conn: conn, rdb: conn.Client(), prefix: conn.KeyPrefix(), queue: make(chan spendJob, queueSize)}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.writeLoop()
	return s
}

// Close stops the writer once the addition it is writing, if any, is
// answered; additions still queued are answered as not sent (their
// amounts stay in the budgets, for the state file). Later calls do
// nothing.
func (s *Spend) Close() {
	s.closeOnce.Do(func() {
		s.stop()
		s.wg.Wait()
		for {
			select {
			case j := <-s.queue:
				j.done(0, errSpendDropped)
			default:
				return
			}
		}
	})
}

// Up reports whether the shared state is in use.
func (s *Spend) Up() bool { return s.conn.Up() }

func (s *Spend) redisKey(key, period string) string {
	return s.prefix + "{key:" + key + "}:spend:" + period
}

// Spend reads the fleet's spend of key in period: 0 when nobody spent
// yet. A failure marks the shared state down.
func (s *Spend) Spend(ctx context.Context, key, period string) (budget.Nano, error) {
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	n, err := s.rdb.Get(ctx, s.redisKey(key, period)).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil:
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.conn.Fail("keys", err)
		}
		return 0, err
	}
	return n, nil
}

// Add queues amount for key's number in period; done receives the new
// number, or an error.
func (s *Spend) Add(key, period string, amount budget.Nano, expire time.Time, done func(budget.Nano, error)) {
	select {
	case s.queue <- spendJob{key: s.redisKey(key, period), amount: amount, expire: expire, done: done}:
	default:
		s.conn.Dropped("keys")
		done(0, errSpendDropped)
	}
}

// writeLoop writes queued additions, up to batchSize per round trip.
func (s *Spend) writeLoop() {
	defer s.wg.Done()
	batch := make([]spendJob, 0, batchSize)
	for {
		select {
		case <-s.ctx.Done():
			return
		case j := <-s.queue:
			batch = append(batch[:0], j)
		}
	fill:
		for len(batch) < batchSize {
			select {
			case j := <-s.queue:
				batch = append(batch, j)
			default:
				break fill
			}
		}
		s.write(batch)
	}
}

func (s *Spend) write(batch []spendJob) {
	if !s.Up() {
		for _, j := range batch {
			j.done(0, errSpendDropped)
		}
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.conn.Timeout())
	defer cancel()
	incrs := make([]*redis.IntCmd, len(batch))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, j := range batch {
			incrs[i] = p.IncrBy(ctx, j.key, j.amount)
			p.PExpireAt(ctx, j.key, j.expire)
		}
		return nil
	})
	if err != nil {
		s.conn.Fail("keys", err)
	}
	for i, j := range batch {
		total, err := incrs[i].Result()
		j.done(total, err)
	}
}
