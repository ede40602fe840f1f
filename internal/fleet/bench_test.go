package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/pool"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/redisconn"
	"github.com/llmrouter/llmrouter/internal/redistest"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// BenchmarkSharedAttempt: one Acquire (the admit round trip) and one
// Release (queued, written in pipelined batches) against a real
// redis-server on loopback, in parallel.
func BenchmarkSharedAttempt(b *testing.B) {
	srv := redistest.Start(b)
	conn, err := redisconn.New(redisconn.Config{RedisURL: srv.URL(), Timeout: time.Second}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := New(conn)
	defer c.Close()
	set := pool.New(upstream.Options{Fleet: c}, nil)
	defer set.Close()
	sp := testSpec(0, nil)
	sp.Config.MaxConcurrency = 0
	ups, err := set.Update([]provider.Descriptor{sp}, policy())
	if err != nil {
		b.Fatal(err)
	}
	u := ups[0]
	rl := outcome.RateLimit{LimitRequests: 1 << 40, RemainingRequests: 1 << 40, LimitTokens: -1, RemainingTokens: -1}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := u.Acquire(time.Now(), 100)
			if err != nil {
				b.Error(err)
				return
			}
			p.Release(time.Now(), upstream.Result{Kind: outcome.OK, RateLimit: rl})
		}
	})
}

// BenchmarkSharedKey: a request of a client key with a budget shared
// through a real redis-server on loopback, in parallel: the admission's
// one round trip (the fleet's spend read) and the settlement's addition
// (queued, written in pipelined batches).
func BenchmarkSharedKey(b *testing.B) {
	srv := redistest.Start(b)
	conn, err := redisconn.New(redisconn.Config{RedisURL: srv.URL(), Timeout: time.Second}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	sp := NewSpend(conn)
	defer sp.Close()
	k := clientkeys.NewSet(nil, nil, sp).Update([]clientkeys.Spec{{Name: "team",
		Limits: clientkeys.Limits{BudgetUSD: 1e8, BudgetPeriod: "month"}}}).Lookup("team")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk, r := k.Admit(context.Background(), nil, 100, 0.001)
			if r != nil {
				b.Error(r)
				return
			}
			k.Settle(time.Now(), tk, 90, 0.001)
		}
	})
}

// BenchmarkSharedKeyLimits is BenchmarkSharedKey for a key with an rpm
// and a tpm too (never reached): held fleet-wide, charged in the same one
// round trip as the spend's read; the usage reported differs from the
// estimate, so each settlement also queues a correction.
func BenchmarkSharedKeyLimits(b *testing.B) {
	srv := redistest.Start(b)
	conn, err := redisconn.New(redisconn.Config{RedisURL: srv.URL(), Timeout: time.Second}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	sp := NewSpend(conn)
	defer sp.Close()
	k := clientkeys.NewSet(nil, nil, sp).Update([]clientkeys.Spec{{Name: "team",
		Limits: clientkeys.Limits{RPM: 1e12, TPM: 1e15, BudgetUSD: 1e8, BudgetPeriod: "month"}}}).Lookup("team")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk, r := k.Admit(context.Background(), nil, 100, 0.001)
			if r != nil {
				b.Error(r)
				return
			}
			k.Settle(time.Now(), tk, 90, 0.001)
		}
	})
}
