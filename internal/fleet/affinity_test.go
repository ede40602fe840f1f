package fleet

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/redisconn"
	"github.com/llmrouter/llmrouter/internal/redistest"
)

// affinityReplica is one router's conversation table sharing its
// entries through srv.
func affinityReplica(t testing.TB, srv *redistest.Server) (*affinity.Table, *Affinity, *redisconn.Conn) {
	t.Helper()
	conn, err := redisconn.New(redisconn.Config{RedisURL: srv.URL(), Timeout: 500 * time.Millisecond}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	a := NewAffinity(conn)
	tb := affinity.New(0, nil)
	tb.Share(a)
	t.Cleanup(func() { a.Close(); conn.Close() })
	return tb, a, conn
}

// TestSharedAffinity: a conversation recorded on one router is read on
// another; the entry expires with routing.affinity.ttl; with Redis gone
// each router's own table answers at once.
func TestSharedAffinity(t *testing.T) {
	srv := redistest.Start(t)
	ta, a, _ := affinityReplica(t, srv)
	tb, _, connB := affinityReplica(t, srv)
	now := time.Now()
	key := affinity.Key(0xfeedbeef)
	ta.Put(key, affinity.Target{Provider: "a", Model: "model-a"}, now, time.Minute)
	waitFor(t, "the entry written", func() bool { return a.Pending() == 0 })
	if got, ok := tb.Get(key, now, time.Minute); !ok || got != (affinity.Target{Provider: "a", Model: "model-a"}) {
		t.Fatalf("the other router reads %+v %v, want a/model-a", got, ok)
	}
	if ttl, _ := strconv.Atoi(strings.TrimPrefix(srv.Do("PTTL", "llmrouter:aff:feedbeef"), ":")); ttl <= 0 || ttl > 60000 {
		t.Errorf("the entry's PTTL is %d ms, want the TTL (at most 60000)", ttl)
	}
	// b moves the conversation; a reads the move though its own table
	// still says a.
	tb.Put(key, affinity.Target{Provider: "b", Model: "model-b"}, now, time.Minute)
	waitFor(t, "the move written", func() bool {
		v, _ := a.rdb.Get(context.Background(), "llmrouter:aff:feedbeef").Result()
		return v == "b\x00model-b"
	})
	if got, _ := ta.Get(key, now, time.Minute); got.Provider != "b" {
		t.Errorf("a reads %+v after b moved the conversation, want b", got)
	}

	// Redis away: the first failed call marks it down, and from then on
	// each table answers from its own entries without asking.
	srv.Stop()
	got, ok := tb.Get(key, now, time.Minute)
	if !ok || got.Provider != "b" || connB.Up() {
		t.Errorf("with Redis gone b reads %+v %v (up %v), want its own entry b and the shared state down", got, ok, connB.Up())
	}
	start := time.Now()
	tb.Get(key, now, time.Minute)
	if d := time.Since(start); d > time.Millisecond {
		t.Errorf("a lookup with the shared state down took %s, want no Redis call", d)
	}
}

// BenchmarkSharedAffinityGet is the extra round trip a follow-up turn
// with an identity makes with shared_state (loopback Redis).
func BenchmarkSharedAffinityGet(b *testing.B) {
	srv := redistest.Start(b)
	tb, a, _ := affinityReplica(b, srv)
	now := time.Now()
	tb.Put(1, affinity.Target{Provider: "a", Model: "model-a"}, now, time.Minute)
	waitFor(b, "the entry written", func() bool { return a.Pending() == 0 })
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := tb.Get(1, now, time.Minute); !ok {
			b.Fatal("not found")
		}
	}
}

// TestAffinityCloseDrains: entries queued when the router stops reach
// Redis before Close returns.
func TestAffinityCloseDrains(t *testing.T) {
	srv := redistest.Start(t)
	conn, err := redisconn.New(redisconn.Config{RedisURL: srv.URL(), Timeout: 500 * time.Millisecond}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	a := NewAffinity(conn)
	const n = 600 // more than one batch
	for i := range n {
		a.Put(affinity.Key(i+1), affinity.Target{Provider: "p", Model: "m"}, time.Minute)
	}
	a.Close()
	if got := srv.Do("DBSIZE"); got != ":"+strconv.Itoa(n) {
		t.Fatalf("Redis holds %s keys after Close, want %d", got, n)
	}
	if a.Pending() != 0 {
		t.Errorf("%d entries still pending after Close", a.Pending())
	}
}
