package redisstore

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/redistest"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// failures records the calls of a fail callback.
type failures struct {
	mu  sync.Mutex
	ops []string
}

func (f *failures) fail(op string, _ error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op)
}

func (f *failures) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}

// newRedis is a Redis store on a fresh redis-server, prefix "t:".
func newRedis(t *testing.T, c store.Config) (*Store, *redistest.Server, *failures) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	f := &failures{}
	return New(rdb, "t:", time.Second, f.fail, c), srv, f
}

// turnRecord is response id continuing prev (nil: a first turn).
func turnRecord(id string, prev *store.Record) *store.Record {
	tr := &store.Turn{ID: id, Input: []wire.Item{{Type: wire.TypeMessage, ID: "in_" + id, Role: "user", Text: id + "?"}},
		Output: []wire.Item{{Type: wire.TypeMessage, ID: "msg_" + id, Role: "assistant",
			Parts: []wire.Part{{Type: "output_text", Text: id + "!"}}}}}
	if prev != nil {
		tr.Prev = prev.Turn
	}
	return &store.Record{ID: id, Response: []byte(`{"id":"` + id + `"}` + "\n"), Turn: tr}
}

func pttl(t *testing.T, srv *redistest.Server, key string) time.Duration {
	t.Helper()
	line := srv.Do("PTTL", key)
	ms, err := strconv.ParseInt(line[1:], 10, 64)
	if err != nil || line[0] != ':' {
		t.Fatalf("PTTL %s = %q", key, line)
	}
	return time.Duration(ms) * time.Millisecond
}

// TestRedisChain: Put sets the TTL; Get returns the response and its
// whole conversation, oldest first, each turn with its id; an unknown id
// is ErrNotFound.
func TestRedisChain(t *testing.T) {
	ctx := context.Background()
	s, srv, f := newRedis(t, store.Config{TTL: time.Minute})
	a := turnRecord("resp_a", nil)
	b := turnRecord("resp_b", a)
	c := turnRecord("resp_c", b)
	for _, r := range []*store.Record{a, b, c} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if d := pttl(t, srv, "t:{responses}:resp:resp_c"); d <= 55*time.Second || d > time.Minute {
		t.Errorf("TTL of resp_c = %s, want about 1m", d)
	}
	if d := pttl(t, srv, "t:{responses}:item:msg_resp_c"); d <= 55*time.Second || d > time.Minute {
		t.Errorf("TTL of the item index = %s, want about 1m", d)
	}
	got, err := s.Get(ctx, "resp_c")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Response) != string(c.Response) || got.ID != "resp_c" {
		t.Errorf("Get = %q %q, want %q", got.ID, got.Response, c.Response)
	}
	if want := c.Turn.Conversation(); !reflect.DeepEqual(got.Turn.Conversation(), want) {
		t.Errorf("conversation = %+v\nwant %+v", got.Turn.Conversation(), want)
	}
	var ids []string
	for tr := got.Turn; tr != nil; tr = tr.Prev {
		ids = append(ids, tr.ID)
	}
	if want := []string{"resp_c", "resp_b", "resp_a"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("turn ids = %v, want %v", ids, want)
	}
	if _, err := s.Get(ctx, "resp_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get unknown = %v, want store.ErrNotFound", err)
	}
	// A response continuing one read back from Redis links to it.
	d := turnRecord("resp_d", got)
	if err := s.Put(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "resp_d"); err != nil || len(got.Turn.Conversation()) != 8 {
		t.Errorf("Get resp_d = %v, %v; want 8 items", got, err)
	}
	if fs := f.list(); len(fs) != 0 {
		t.Errorf("fail called: %v", fs)
	}
}

// TestRedisPutRefreshesAncestors: continuing a conversation gives every
// turn before it the whole TTL again, in the same script.
func TestRedisPutRefreshesAncestors(t *testing.T) {
	ctx := context.Background()
	s, srv, _ := newRedis(t, store.Config{TTL: time.Hour})
	a := turnRecord("resp_a", nil)
	b := turnRecord("resp_b", a)
	for _, r := range []*store.Record{a, b} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"resp_a", "resp_b"} {
		srv.Do("PEXPIRE", "t:{responses}:resp:"+id, "5000")
	}
	if err := s.Put(ctx, turnRecord("resp_c", b)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"resp_a", "resp_b", "resp_c"} {
		if d := pttl(t, srv, "t:{responses}:resp:"+id); d < 59*time.Minute {
			t.Errorf("TTL of %s = %s, want about 1h", id, d)
		}
	}
}

// TestRedisDeleteAndGaps: a deleted response is gone for GET and
// item_reference but its turn stays in the conversations continuing it;
// a conversation whose earlier turn is gone from Redis is ErrNotFound,
// and a Put continuing it writes the missing turns again.
func TestRedisDeleteAndGaps(t *testing.T) {
	ctx := context.Background()
	s, srv, _ := newRedis(t, store.Config{TTL: time.Hour})
	a := turnRecord("resp_a", nil)
	b := turnRecord("resp_b", a)
	for _, r := range []*store.Record{a, b} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if it, err := s.FindItem(ctx, "msg_resp_a"); err != nil || it.Parts[0].Text != "resp_a!" {
		t.Errorf("FindItem = %+v, %v", it, err)
	}
	if err := s.Delete(ctx, "resp_a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "resp_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Delete = %v, want store.ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "resp_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get deleted = %v, want store.ErrNotFound", err)
	}
	if _, err := s.FindItem(ctx, "msg_resp_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FindItem of a deleted response = %v, want store.ErrNotFound", err)
	}
	if got, err := s.Get(ctx, "resp_b"); err != nil || len(got.Turn.Conversation()) != 4 {
		t.Fatalf("Get resp_b after deleting resp_a = %v, %v; want 4 items", got, err)
	}
	// Evicted by Redis: the conversation is incomplete.
	srv.Do("DEL", "t:{responses}:resp:resp_a")
	if _, err := s.Get(ctx, "resp_b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get with a missing ancestor = %v, want store.ErrNotFound", err)
	}
	// The replica holding the chain in memory (read before the eviction)
	// writes it again.
	if err := s.Put(ctx, turnRecord("resp_c", b)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "resp_c")
	if err != nil || len(got.Turn.Conversation()) != 6 {
		t.Fatalf("Get resp_c = %v, %v; want 6 items", got, err)
	}
	if _, err := s.Get(ctx, "resp_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rewritten turn came back as a response: %v", err)
	}
}

// TestRedisBounds: a conversation larger than max_bytes or longer than
// MaxTurns is ErrTooLarge, and nothing is written.
func TestRedisBounds(t *testing.T) {
	ctx := context.Background()
	s, srv, _ := newRedis(t, store.Config{MaxBytes: 4000})
	a := turnRecord("resp_a", nil)
	if err := s.Put(ctx, a); err != nil {
		t.Fatal(err)
	}
	r := a
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		r = turnRecord("resp_"+strconv.Itoa(i), r)
		err = s.Put(ctx, r)
	}
	if !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("Put past max_bytes = %v, want store.ErrTooLarge", err)
	}
	if got := srv.Do("EXISTS", "t:{responses}:resp:"+r.ID); got != ":0" {
		t.Errorf("a refused response was written: EXISTS = %s", got)
	}
	s.Configure(store.Config{MaxBytes: 1 << 30})
	var chain *store.Turn
	for i := 0; i < MaxTurns; i++ {
		chain = &store.Turn{ID: "resp_" + strconv.Itoa(i), Prev: chain}
	}
	long := &store.Record{ID: "resp_long", Turn: &store.Turn{ID: "resp_long", Prev: chain}}
	if err := s.Put(ctx, long); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Put of %d turns = %v, want store.ErrTooLarge", MaxTurns+1, err)
	}
}

// TestRedisDown: with Redis gone every call fails fast, reports op
// responses, and is never ErrNotFound.
func TestRedisDown(t *testing.T) {
	ctx := context.Background()
	s, srv, f := newRedis(t, store.Config{})
	if err := s.Put(ctx, turnRecord("resp_a", nil)); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	start := time.Now()
	if _, err := s.Get(ctx, "resp_a"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get while down = %v, want an error other than store.ErrNotFound", err)
	}
	if err := s.Put(ctx, turnRecord("resp_b", nil)); err == nil || errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Put while down = %v", err)
	}
	if err := s.Delete(ctx, "resp_a"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete while down = %v", err)
	}
	if _, err := s.FindItem(ctx, "msg_resp_a"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("FindItem while down = %v", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("four calls while down took %s", d)
	}
	if fs := f.list(); !reflect.DeepEqual(fs, []string{"responses", "responses", "responses", "responses"}) {
		t.Errorf("fail calls = %v", fs)
	}
	srv.Start()
	if _, err := s.Get(ctx, "resp_a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after a restart without persistence = %v, want store.ErrNotFound", err)
	}
}

// TestShared: Redis while up; Memory while down, for writes and for the
// conversations begun then; an id unknown locally while down is an error
// (503), not ErrNotFound (404).
func TestShared(t *testing.T) {
	ctx := context.Background()
	r, _, _ := newRedis(t, store.Config{})
	var up sync.Mutex
	isUp := true
	s := NewShared(r, store.NewMemory(store.Config{}, nil), func() bool { up.Lock(); defer up.Unlock(); return isUp })
	setUp := func(v bool) { up.Lock(); isUp = v; up.Unlock() }

	a := turnRecord("resp_a", nil)
	if err := s.Put(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Usage(); n != 0 {
		t.Errorf("a response stored in Redis is held locally too (%d)", n)
	}
	if _, err := r.Get(ctx, "resp_a"); err != nil {
		t.Errorf("resp_a not in Redis: %v", err)
	}
	if _, err := s.Get(ctx, "resp_x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get unknown while up = %v, want store.ErrNotFound", err)
	}

	setUp(false)
	if _, err := s.Get(ctx, "resp_a"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a Redis id while down = %v, want an error other than store.ErrNotFound", err)
	}
	if err := s.Delete(ctx, "resp_a"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete of a Redis id while down = %v", err)
	}
	if _, err := s.FindItem(ctx, "msg_resp_a"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("FindItem while down = %v", err)
	}
	b := turnRecord("resp_b", nil)
	if err := s.Put(ctx, b); err != nil {
		t.Fatal(err)
	}
	c := turnRecord("resp_c", b)
	if err := s.Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "resp_c"); err != nil || len(got.Turn.Conversation()) != 4 {
		t.Errorf("Get of a local conversation while down = %v, %v", got, err)
	}

	setUp(true)
	if got, err := s.Get(ctx, "resp_c"); err != nil || len(got.Turn.Conversation()) != 4 {
		t.Errorf("Get of a local conversation after the return = %v, %v", got, err)
	}
	// Continued after the return: the new turn goes to Redis with the
	// whole chain it continues written there too.
	d := turnRecord("resp_d", c)
	if err := s.Put(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(ctx, "resp_d"); err != nil || len(got.Turn.Conversation()) != 6 {
		t.Errorf("resp_d in Redis = %v, %v; want its 6 items", got, err)
	}
	if it, err := s.FindItem(ctx, "msg_resp_a"); err != nil || it.ID != "msg_resp_a" {
		t.Errorf("FindItem from Redis = %+v, %v", it, err)
	}
	for _, id := range []string{"resp_a", "resp_c"} {
		if err := s.Delete(ctx, id); err != nil {
			t.Errorf("Delete %s = %v", id, err)
		}
		if _, err := s.Get(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get %s after Delete = %v", id, err)
		}
	}
}

// TestRedisOwner: a background response's owner (the provider running
// it) survives the round trip, so another replica forwards its reads.
func TestRedisOwner(t *testing.T) {
	s, _, _ := newRedis(t, store.Config{}.WithDefaults())
	ctx := context.Background()
	r := turnRecord("resp_bg", nil)
	r.Owner = "openai-east"
	if err := s.Put(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "resp_bg")
	if err != nil {
		t.Fatal(err)
	}
	if got.Owner != "openai-east" {
		t.Errorf("Owner = %q, want openai-east", got.Owner)
	}
	whole := turnRecord("resp_done", nil)
	if err := s.Put(ctx, whole); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "resp_done"); err != nil || got.Owner != "" {
		t.Errorf("a finished response: owner %q, %v; want none", got.Owner, err)
	}
}
