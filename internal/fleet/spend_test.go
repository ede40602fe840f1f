package fleet

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/redisconn"
	"github.com/llmrouter/llmrouter/internal/redistest"
)

// spendReplica is one router's client keys sharing their spend through
// srv.
func spendReplica(t *testing.T, srv *redistest.Server) (*clientkeys.Key, *redisconn.Conn) {
	t.Helper()
	conn, err := redisconn.New(redisconn.Config{RedisURL: srv.URL(), Timeout: 500 * time.Millisecond}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	sp := NewSpend(conn)
	set := clientkeys.NewSet(nil, nil, sp)
	k := set.Update([]clientkeys.Spec{{Name: "team", Limits: clientkeys.Limits{BudgetUSD: 50, BudgetPeriod: "day"}}}).Lookup("team")
	t.Cleanup(func() { sp.Close(); conn.Close() })
	return k, conn
}

// spend runs one request of key k costing cost.
func spend(t *testing.T, k *clientkeys.Key, cost float64) bool {
	t.Helper()
	tk, r := k.Admit(context.Background(), nil, 0, 1)
	if r != nil {
		return false
	}
	k.Settle(time.Now(), tk, 0, cost)
	return true
}

// redisSpend is the fleet's number of the key team today, in
// nano-dollars, as conn reads it ("" when absent or unreadable).
func redisSpend(conn *redisconn.Conn) string {
	id := "day:" + time.Now().UTC().Format(time.DateOnly)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, _ := conn.Client().Get(ctx, "llmrouter:{key:team}:spend:"+id).Result()
	return v
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSharedSpend: two routers share one number per key and period:
// sequential $5 requests alternating between them stop at the $50
// budget; with Redis gone the spend is counted locally and sent once
// it is back.
func TestSharedSpend(t *testing.T) {
	srv := redistest.Start(t)
	a, connA := spendReplica(t, srv)
	b, _ := spendReplica(t, srv)
	served := 0
	for i := range 14 {
		k := a
		if i%2 == 1 {
			k = b
		}
		if spend(t, k, 5) {
			served++
		}
		// The writer adds off the request path; the next request, on the
		// other router, reads the number.
		want := served * 5
		waitFor(t, "the addition", func() bool { return redisSpend(connA) == strconv.Itoa(want*1e9) })
	}
	if served != 10 {
		t.Errorf("served %d on two routers sharing a $50 budget, want 10", served)
	}

	// A new day's number, one router alone while Redis is away.
	srv.Do("FLUSHALL")
	srv.Stop()
	c, connC := spendReplica(t, srv) // starts while Redis is down
	if connC.Up() {
		t.Fatal("up without Redis")
	}
	if !spend(t, c, 2) || !spend(t, c, 3) {
		t.Fatal("a request failed while Redis was away")
	}
	srv.Start()
	waitFor(t, "the shared state back up", connC.Up)
	spend(t, c, 0) // the next admission sends what was spent meanwhile
	waitFor(t, "the spend made meanwhile in Redis", func() bool { return redisSpend(connC) == "5000000000" })
}
