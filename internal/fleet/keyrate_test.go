package fleet

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/redisconn"
	"github.com/llmrouter/llmrouter/internal/redistest"
)

// keyReplica is one router's client key with limits l, sharing its state
// through srv.
func keyReplica(t *testing.T, srv *redistest.Server, l clientkeys.Limits) (*clientkeys.Key, *redisconn.Conn) {
	t.Helper()
	conn, err := redisconn.New(redisconn.Config{RedisURL: srv.URL(), Timeout: 50 * time.Millisecond}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	sp := NewSpend(conn)
	k := clientkeys.NewSet(nil, nil, sp).Update([]clientkeys.Spec{{Name: "team", Limits: l}}).Lookup("team")
	t.Cleanup(func() { sp.Close(); conn.Close() })
	return k, conn
}

// redisCalls is how many scripts (EVALSHA, EVAL) and additions (INCRBY)
// Redis has run: what clients sent it, a script's own calls not counted.
func redisCalls(t *testing.T, conn *redisconn.Conn) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := conn.Client().Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`cmdstat_(?:evalsha|eval|incrby):calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		c, _ := strconv.Atoi(m[1])
		n += c
	}
	return n
}

// TestSharedKeyRPM: a key's rpm holds across three routers sharing Redis
// (N served in the minute, not 3N), each admission is one round trip that
// also reads the spend, and with Redis killed mid-test no request fails
// or stalls: the routers decide locally at once and use Redis again once
// it is back.
func TestSharedKeyRPM(t *testing.T) {
	srv := redistest.Start(t)
	l := clientkeys.Limits{RPM: 10, TPM: 100000, BudgetUSD: 50, BudgetPeriod: "day"}
	var keys [3]*clientkeys.Key
	var conns [3]*redisconn.Conn
	for i := range keys {
		keys[i], conns[i] = keyReplica(t, srv, l)
	}
	admit := func(i int) (bool, time.Duration) {
		start := time.Now()
		tk, r := keys[i].Admit(context.Background(), nil, 100, 0.001)
		took := time.Since(start)
		if r != nil {
			if r.Reason != clientkeys.Rate || r.Wait <= 0 {
				t.Errorf("refusal %+v, want Rate with a wait", r)
			}
			return false, took
		}
		// The usage reported equals the estimate and nothing was spent:
		// no correction nor addition is queued, so Redis sees the
		// admissions alone.
		keys[i].Settle(time.Now(), tk, 100, 0)
		return true, took
	}
	// The other routers' connections do nothing meanwhile: Spend has no
	// background reads, and its writer has nothing queued.
	before := redisCalls(t, conns[0])
	served := 0
	for n := range 30 {
		if ok, _ := admit(n % 3); ok {
			served++
		}
	}
	calls := redisCalls(t, conns[0]) - before
	if served != 10 {
		t.Errorf("served %d of 30 round-robin on three routers with rpm 10, want 10", served)
	}
	if calls != 30 {
		t.Errorf("Redis ran %d scripts and additions for 30 admissions, want 30 (one round trip each)", calls)
	}
	t.Logf("three routers, rpm 10: served %d of 30; %d Redis calls", served, calls)

	// Redis killed: every request is answered at once, locally.
	srv.Stop()
	var slowest time.Duration
	servedDown := 0
	for n := range 30 {
		ok, took := admit(n % 3)
		slowest = max(slowest, took)
		if ok {
			servedDown++
		}
	}
	for i, c := range conns {
		if c.Up() {
			t.Errorf("router %d: shared state still up with Redis killed", i)
		}
	}
	if slowest > 200*time.Millisecond {
		t.Errorf("slowest admission with Redis killed took %v, want the timeout (50ms) at most", slowest)
	}
	if servedDown == 0 {
		t.Error("nothing served locally with Redis killed")
	}
	t.Logf("Redis killed: served %d of 30 locally, slowest admission %v", servedDown, slowest)

	// Back: the fleet decides again (a fresh Redis: a fresh minute).
	srv.Start()
	for i, c := range conns {
		waitFor(t, "router "+strconv.Itoa(i)+" back on the shared state", c.Up)
	}
	served = 0
	for n := range 30 {
		if ok, _ := admit(n % 3); ok {
			served++
		}
	}
	if served != 10 {
		t.Errorf("after Redis's return: served %d of 30, want 10", served)
	}
}

// TestSharedKeyBudgetSpent: once the fleet's spend has reached a key's
// budget, its admissions are refused for the budget and charge nothing
// to the fleet's buckets.
func TestSharedKeyBudgetSpent(t *testing.T) {
	srv := redistest.Start(t)
	k, conn := keyReplica(t, srv, clientkeys.Limits{RPM: 10, BudgetUSD: 5, BudgetPeriod: "day"})
	tk, r := k.Admit(context.Background(), nil, 0, 1)
	if r != nil {
		t.Fatal(r)
	}
	k.Settle(time.Now(), tk, 0, 5)
	waitFor(t, "the addition", func() bool { return redisSpend(conn) == "5000000000" })
	before := redisCalls(t, conn)
	for range 5 {
		if _, r := k.Admit(context.Background(), nil, 0, 1); r == nil || r.Reason != clientkeys.Budget {
			t.Fatalf("got %+v, want Budget", r)
		}
	}
	time.Sleep(50 * time.Millisecond) // a give-back, were there one, is written off the request path
	if calls := redisCalls(t, conn) - before; calls != 5 {
		t.Errorf("%d Redis calls for 5 refused admissions, want 5 (nothing charged, nothing given back)", calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	lvl, err := conn.Client().HGet(ctx, "llmrouter:{key:team}:rl:10:0", "r.clvl").Float64()
	if err != nil {
		t.Fatal(err)
	}
	if lvl < 8.9 {
		t.Errorf("the fleet's request bucket holds %g, want 9 (the budget's refusals charged nothing)", lvl)
	}
}
