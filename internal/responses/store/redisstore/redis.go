package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// MaxTurns bounds a conversation Redis keeps: Get walks at most this many
// turns in its one round trip, and a Put continuing a longer chain is
// refused with store.ErrTooLarge.
const MaxTurns = 1000

// Store is the store.Store shared by the replicas of a fleet
// (shared_state), so that any replica can read, delete and continue a
// response another one stored (docs/ARCHITECTURE.md, "Responses API").
//
// Each response is one hash, <prefix>{responses}:resp:<id>, expiring
// Config.TTL after it was stored or last continued: r its Response JSON,
// t its turn (input and output items, JSON), p the id of the response it
// continued. Get walks the p chain in one Lua script (one round trip, at
// most MaxTurns turns); Put writes the hash and refreshes the TTL of every
// ancestor it continues in the same script, so a long conversation does
// not lose its start. Delete removes r only: the turn stays, until it
// expires, for the responses that continue it. Item ids are indexed
// (<prefix>{responses}:item:<id> → response id, same TTL) for FindItem.
// Every key carries the hash tag {responses}: the scripts touch several
// keys, which Redis Cluster allows only within one slot.
//
// Config.MaxBytes bounds one response with its whole conversation (as
// store.Memory estimates it; a larger one is store.ErrTooLarge);
// Config.MaxStored does not apply (Redis's own memory limit does). Every
// call is bounded by the timeout; a failed one calls fail("responses",
// err) and returns an error that is not store.ErrNotFound.
type Store struct {
	rdb     redis.UniversalClient
	resp    string // key of a response: resp + id
	item    string // key of an item's index: item + id
	timeout time.Duration
	fail    func(op string, err error)
	cfg     atomic.Pointer[store.Config]
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.ItemFinder = (*Store)(nil)
)

// New returns the store in rdb under keyPrefix (shared_state's), each
// call bounded by timeout; fail (nil: none) is told of every failed call,
// so that the shared state is marked down for every user.
func New(rdb redis.UniversalClient, keyPrefix string, timeout time.Duration, fail func(op string, err error), c store.Config) *Store {
	if fail == nil {
		fail = func(string, error) {}
	}
	s := &Store{rdb: rdb, resp: keyPrefix + "{responses}:resp:", item: keyPrefix + "{responses}:item:",
		timeout: timeout, fail: fail}
	s.Configure(c)
	return s
}

// Configure applies a new config (a reload): the TTL applies to the
// responses stored or continued from now on.
func (s *Store) Configure(c store.Config) {
	c = c.WithDefaults()
	s.cfg.Store(&c)
}

// storedTurn is a turn as Redis holds it.
type storedTurn struct {
	Input  []wire.Item `json:"i,omitempty"`
	Output []wire.Item `json:"o,omitempty"`
	// Owner is Record.Owner (a background response's provider), kept in
	// the record's own turn.
	Owner string `json:"w,omitempty"`
}

// putScript stores one response and refreshes its ancestors' TTL. It
// returns "" or the id of the first ancestor missing (expired or evicted
// since it was read), for the caller to write again.
//
// KEYS[1] the response's key. ARGV: response key prefix, item key prefix,
// TTL (ms), id, Response JSON, turn JSON, previous id ("" none), most
// ancestors to refresh, then the ids of the turn's items.
var putScript = redis.NewScript(`
local k, ttl = KEYS[1], ARGV[3]
redis.call('DEL', k)
if ARGV[7] ~= '' then
  redis.call('HSET', k, 'r', ARGV[5], 't', ARGV[6], 'p', ARGV[7])
else
  redis.call('HSET', k, 'r', ARGV[5], 't', ARGV[6])
end
redis.call('PEXPIRE', k, ttl)
for i = 9, #ARGV do
  redis.call('SET', ARGV[2] .. ARGV[i], ARGV[4], 'PX', ttl)
end
local id, n = ARGV[7], tonumber(ARGV[8])
while id and id ~= '' and n > 0 do
  local pk = ARGV[1] .. id
  if redis.call('PEXPIRE', pk, ttl) == 0 then return id end
  id = redis.call('HGET', pk, 'p')
  n = n - 1
end
return ''
`)

// getScript reads a response and its conversation: nil when the response
// is not stored, else {Response JSON, complete (1, or 0 when an ancestor
// is missing or the chain is longer than the bound), its turn, then the
// id and turn of each ancestor, newest first}.
//
// KEYS[1] the response's key. ARGV: response key prefix, most ancestors.
var getScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'r', 't', 'p')
if not v[1] then return false end
local out = {v[1], 1, v[2]}
local id, n = v[3], tonumber(ARGV[2])
while id do
  if n <= 0 then out[2] = 0 return out end
  local a = redis.call('HMGET', ARGV[1] .. id, 't', 'p')
  if not a[1] then out[2] = 0 return out end
  out[#out + 1] = id
  out[#out + 1] = a[1]
  id = a[2]
  n = n - 1
end
return out
`)

// findScript returns the turn of the stored response that holds an item,
// nil when none does.
//
// KEYS[1] the item's index key. ARGV: response key prefix.
var findScript = redis.NewScript(`
local id = redis.call('GET', KEYS[1])
if not id then return false end
local k = ARGV[1] .. id
if redis.call('HEXISTS', k, 'r') == 0 then return false end
return redis.call('HGET', k, 't')
`)

// call bounds one call by the timeout, never by the caller's
// cancellation: a client that went away does not mark Redis down.
func (s *Store) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
}

// failed reports err to fail and returns it wrapped: never
// store.ErrNotFound.
func (s *Store) failed(op string, err error) error {
	s.fail("responses", err)
	return fmt.Errorf("the store of responses in Redis could not %s: %w", op, err)
}

// Put stores r for Config.TTL and refreshes the TTL of the responses it
// continues. A conversation (r with every turn before it) larger than
// Config.MaxBytes or longer than MaxTurns is store.ErrTooLarge.
func (s *Store) Put(ctx context.Context, r *store.Record) error {
	cfg := s.cfg.Load()
	size, turns := store.Size(r)
	switch {
	case size > cfg.MaxBytes:
		return fmt.Errorf("%w: about %d bytes with the conversation it continues; responses.max_bytes is %d", store.ErrTooLarge, size, cfg.MaxBytes)
	case turns > MaxTurns:
		return fmt.Errorf("%w: %d turns; at most %d are kept", store.ErrTooLarge, turns, MaxTurns)
	}
	var tj []byte
	prev := ""
	args := []any{s.resp, s.item, cfg.TTL.Milliseconds(), r.ID, r.Response, nil, "", MaxTurns}
	if t := r.Turn; t != nil {
		var err error
		if tj, err = json.Marshal(storedTurn{Input: t.Input, Output: t.Output, Owner: r.Owner}); err != nil {
			return err
		}
		if p := t.Prev; p != nil {
			if p.ID == "" {
				return errors.New("the store of responses in Redis cannot link a turn without an id")
			}
			prev = p.ID
		}
		for _, items := range [2][]wire.Item{t.Input, t.Output} {
			for i := range items {
				if id := items[i].ID; id != "" {
					args = append(args, id)
				}
			}
		}
	} else {
		var err error
		if tj, err = json.Marshal(storedTurn{Owner: r.Owner}); err != nil {
			return err
		}
	}
	args[5], args[6] = tj, prev
	cctx, cancel := s.call(ctx)
	defer cancel()
	missing, err := putScript.Run(cctx, s.rdb, []string{s.resp + r.ID}, args...).Text()
	if err != nil {
		return s.failed("store "+r.ID, err)
	}
	if missing != "" {
		// An ancestor expired between its Get and this Put (a long
		// generation): write its turn, and those before it, again.
		if err := s.rewrite(cctx, r.Turn, missing, cfg.TTL); err != nil {
			return s.failed("store "+r.ID, err)
		}
	}
	return nil
}

// rewrite writes the turns of t's chain from the one with id on, as
// turns without a Response (what a deleted response leaves).
func (s *Store) rewrite(ctx context.Context, t *store.Turn, id string, ttl time.Duration) error {
	for t != nil && t.ID != id {
		t = t.Prev
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for ; t != nil; t = t.Prev {
			tj, err := json.Marshal(storedTurn{Input: t.Input, Output: t.Output})
			if err != nil {
				return err
			}
			k := s.resp + t.ID
			if t.Prev != nil {
				p.HSet(ctx, k, "t", tj, "p", t.Prev.ID)
			} else {
				p.HSet(ctx, k, "t", tj)
			}
			p.PExpire(ctx, k, ttl)
		}
		return nil
	})
	return err
}

// Get returns the response stored under id with its whole conversation,
// in one round trip. A response whose earlier turns are gone from Redis
// (evicted by Redis's maxmemory policy) is store.ErrNotFound: continuing it
// would silently lose its history.
func (s *Store) Get(ctx context.Context, id string) (*store.Record, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	v, err := getScript.Run(cctx, s.rdb, []string{s.resp + id}, s.resp, MaxTurns-1).Slice()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, store.ErrNotFound
	case err != nil:
		return nil, s.failed("read "+id, err)
	}
	resp, ok0 := v[0].(string)
	complete, ok1 := v[1].(int64)
	if !ok0 || !ok1 || len(v)%2 != 1 {
		return nil, s.failed("read "+id, errors.New("unexpected reply"))
	}
	if complete != 1 {
		return nil, fmt.Errorf("%w: the earlier turns of %s's conversation are gone from Redis", store.ErrNotFound, id)
	}
	// v[2] is id's turn; then (id, turn) pairs, newest first.
	turns := make([]*store.Turn, 0, (len(v)-1)/2)
	owner := ""
	for i := 2; i < len(v); i += 2 {
		tid := id
		if i > 2 {
			tid, _ = v[i-1].(string)
		}
		tj, _ := v[i].(string)
		var st storedTurn
		if err := json.Unmarshal([]byte(tj), &st); err != nil {
			return nil, s.failed("read "+id, fmt.Errorf("turn %s: %w", tid, err))
		}
		if i == 2 {
			owner = st.Owner
		}
		turns = append(turns, &store.Turn{ID: tid, Input: st.Input, Output: st.Output})
	}
	for i := 0; i+1 < len(turns); i++ {
		turns[i].Prev = turns[i+1]
	}
	return &store.Record{ID: id, Response: []byte(resp), Turn: turns[0], Owner: owner}, nil
}

// Delete removes id's Response: GET and previous_response_id no longer
// find it. Its turn stays until it expires, for the responses that
// continue it.
func (s *Store) Delete(ctx context.Context, id string) error {
	cctx, cancel := s.call(ctx)
	defer cancel()
	n, err := s.rdb.HDel(cctx, s.resp+id, "r").Result()
	switch {
	case err != nil:
		return s.failed("delete "+id, err)
	case n == 0:
		return store.ErrNotFound
	}
	return nil
}

// FindItem returns the item with id from a stored response (the latest
// stored that holds it), or store.ErrNotFound.
func (s *Store) FindItem(ctx context.Context, id string) (wire.Item, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	tj, err := findScript.Run(cctx, s.rdb, []string{s.item + id}, s.resp).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return wire.Item{}, store.ErrNotFound
	case err != nil:
		return wire.Item{}, s.failed("find item "+id, err)
	}
	var st storedTurn
	if err := json.Unmarshal([]byte(tj), &st); err != nil {
		return wire.Item{}, s.failed("find item "+id, err)
	}
	for _, items := range [2][]wire.Item{st.Input, st.Output} {
		for i := range items {
			if items[i].ID == id {
				return items[i], nil
			}
		}
	}
	return wire.Item{}, store.ErrNotFound
}
