package fleet

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/budget"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/redisconn"
)

// Spend is the fleet's state of each client key (docs/ARCHITECTURE.md,
// "Client keys and spend"): its RPM/TPM buckets, one hash per key and
// limits, <key_prefix>{key:<name>}:rl:<rpm>:<tpm>, and its spend, one
// integer of nano-dollars per key and period,
// <key_prefix>{key:<name>}:spend:<period>. A request's admission is one
// script (keyAdmit: charge the buckets and read the spend, the one round
// trip); its settlement's corrections (keyAdjust) and additions
// (keySpend: INCRBY, saturating) are written by one goroutine, pipelined and off the request
// path. Build it with NewSpend; Close it before its connection.
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

// spendJob is one addition (done not nil) or one bucket correction
// (args: keyAdjust's ARGV) for the writer.
type spendJob struct {
	key    string
	amount budget.Nano
	expire time.Time
	done   func(budget.Nano, error)
	args   []any
}

// clientKeyTTL keeps a key's buckets a while past a full refill (a minute).
const clientKeyTTL = 120000

// errSpendDropped answers an addition that was not sent (a full queue,
// the shared state down or closing): its amount is sent again later.
var errSpendDropped = errors.New("fleet: spend not sent")

// NewSpend starts the writer on conn.
func NewSpend(conn *redisconn.Conn) *Spend {
	s := &Spend{conn: conn, rdb: conn.Client(), prefix: conn.KeyPrefix(), queue: make(chan spendJob, queueSize)}
	conn.Preload("keys", prod().keyAdmit, prod().keyAdjust, prod().keySpend)
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
				if j.done != nil {
					j.done(0, errSpendDropped)
				}
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

// bucketKey is the hash of key's buckets under rpm and tpm: other limits
// (a reload) start a fresh minute, as the Go buckets do.
func (s *Spend) bucketKey(key string, rpm, tpm int64) string {
	return s.prefix + "{key:" + key + "}:rl:" + strconv.FormatInt(rpm, 10) + ":" + strconv.FormatInt(tpm, 10)
}

// Admit is a key's one round trip at admission (keyAdmit). A failure
// marks the shared state down.
func (s *Spend) Admit(ctx context.Context, key string, a clientkeys.SharedAdmit) (clientkeys.SharedVerdict, error) {
	ctx, cancel := context.WithTimeout(ctx, s.conn.Timeout())
	defer cancel()
	if a.RPM <= 0 && a.TPM <= 0 {
		// A budget alone: the spend's GET is the round trip, no script.
		n, err := s.rdb.Get(ctx, s.redisKey(key, a.Period)).Int64()
		switch {
		case errors.Is(err, redis.Nil):
			return clientkeys.SharedVerdict{RequestsLeft: -1, TokensLeft: -1}, nil
		case err == nil:
			return clientkeys.SharedVerdict{Spend: n, RequestsLeft: -1, TokensLeft: -1}, nil
		}
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.conn.Fail("keys", err)
		}
		return clientkeys.SharedVerdict{}, err
	}
	keys := []string{s.bucketKey(key, a.RPM, a.TPM)}
	if a.Period != "" {
		keys = append(keys, s.redisKey(key, a.Period))
	}
	v, err := prod().keyAdmit.Run(ctx, s.rdb, keys, max(a.Tokens, 0), a.RPM, a.TPM, a.Limit, clientKeyTTL).Slice()
	if err == nil {
		var vd clientkeys.SharedVerdict
		if vd, err = parseKeyVerdict(v); err == nil {
			return vd, nil
		}
	}
	if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.conn.Fail("keys", err)
	}
	return clientkeys.SharedVerdict{}, err
}

// parseKeyVerdict reads keyAdmit's reply: code, wait ms, spend, charged,
// requests and tokens left.
func parseKeyVerdict(v []any) (clientkeys.SharedVerdict, error) {
	var vd clientkeys.SharedVerdict
	if len(v) != 6 {
		return vd, errReply
	}
	code, ok1 := v[0].(int64)
	wait, ok2 := v[1].(int64)
	spend, ok3 := v[2].(string)
	charged, ok4 := v[3].(int64)
	rl, ok5 := v[4].(int64)
	tl, ok6 := v[5].(int64)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return vd, errReply
	}
	vd.RequestsLeft, vd.TokensLeft = rl, tl
	n, err := strconv.ParseInt(spend, 10, 64)
	if err != nil {
		return vd, errReply
	}
	vd.Spend, vd.Charged, vd.Wait = n, charged == 1, time.Duration(wait)*time.Millisecond
	switch code {
	case codeOK:
	case codeLimited:
		vd.Refused = clientkeys.Rate
	case codeTooLarge:
		vd.Refused = clientkeys.TooLarge
	case codeBudget:
		vd.Refused = clientkeys.Budget
	default:
		return vd, errReply
	}
	return vd, nil
}

// Adjust queues a correction of key's buckets.
func (s *Spend) Adjust(key string, rpm, tpm, requests, tokens int64) {
	if !s.Up() || (requests == 0 && tokens == 0) {
		return
	}
	select {
	case s.queue <- spendJob{key: s.bucketKey(key, rpm, tpm), args: []any{requests, tokens, rpm, tpm, clientKeyTTL}}:
	default:
		s.conn.Dropped("keys")
	}
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
			if j.done != nil {
				j.done(0, errSpendDropped)
			}
		}
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.conn.Timeout())
	defer cancel()
	incrs := make([]*redis.Cmd, len(batch))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, j := range batch {
			if j.done == nil {
				prod().keyAdjust.EvalSha(ctx, p, []string{j.key}, j.args...)
				continue
			}
			// keySpend, not INCRBY: the number saturates rather than
			// refuse an addition past 2^63-1 (spend.lua).
			incrs[i] = prod().keySpend.EvalSha(ctx, p, []string{j.key}, max(j.amount, 0))
			p.PExpireAt(ctx, j.key, j.expire)
		}
		return nil
	})
	if err != nil {
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			s.conn.Ping() // Redis restarted between two pings: load the scripts again
		}
		s.conn.Fail("keys", err)
	}
	for i, j := range batch {
		if j.done != nil {
			var total budget.Nano
			v, err := incrs[i].Text()
			if err == nil {
				total, err = strconv.ParseInt(v, 10, 64)
			}
			j.done(total, err)
		}
	}
}
