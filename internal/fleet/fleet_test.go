package fleet

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/pool"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/redisconn"
	"github.com/llmrouter/llmrouter/internal/redistest"
	"github.com/llmrouter/llmrouter/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// replica is one router process's view: its own fleet client and
// upstream Set, sharing Redis with the others.
type replica struct {
	c   *Client
	set *pool.Pool
	up  *upstream.Upstream
	reg *prometheus.Registry
}

func policy() shared.Policy {
	b := breaker.DefaultConfig()
	b.FailureThreshold = breaker.Threshold{Consecutive: 4, Window: 10 * time.Second}
	b.Cooldown.Failure = 400 * time.Millisecond
	b.Cooldown.Timeout = 400 * time.Millisecond
	return shared.Policy{Breaker: b}
}

// prober is an adapter with a probe (nil: none) and nothing else.
type prober struct{ probe func(context.Context) error }

func (prober) Do(context.Context, *provider.Request) (*provider.Response, error) {
	return nil, errors.New("not called")
}
func (prober) Supports(provider.Op) bool { return false }

// probing has a Probe; prober does not.
type probing struct{ prober }

func (p probing) Probe(ctx context.Context) error { return p.probe(ctx) }

func testSpec(rpm int64, probe func(context.Context) error) provider.Descriptor {
	d := provider.Descriptor{Name: "p", Type: "fake", Adapter: prober{},
		Config: provider.Config{Name: "p", Type: "fake", MaxConcurrency: 100, RPM: rpm, FirstTokenTimeout: time.Second}}
	if probe != nil {
		d.Adapter = probing{prober{probe}}
	}
	return d
}

func newReplica(t *testing.T, url string, spec provider.Descriptor) *replica {
	t.Helper()
	reg := prometheus.NewRegistry()
	conn, err := redisconn.New(redisconn.Config{RedisURL: url, Timeout: 500 * time.Millisecond}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	c := New(conn)
	set := pool.New(upstream.Options{Fleet: c}, nil)
	ups, err := set.Update([]provider.Descriptor{spec}, policy())
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{c: c, set: set, up: ups[0], reg: reg}
	t.Cleanup(func() { set.Close(); c.Close(); conn.Close() })
	return r
}

// attempt admits one attempt and releases it with kind; false when refused.
func (r *replica) attempt(kind outcome.Kind, rl outcome.RateLimit) (bool, error) {
	now := time.Now()
	p, err := r.up.Acquire(now, 10)
	if err != nil {
		return false, err
	}
	p.Release(time.Now(), upstream.Result{Kind: kind, RateLimit: rl})
	return true, nil
}

// flush waits until r's writer has sent what was queued.
func (r *replica) flush(t *testing.T) {
	t.Helper()
	eventually(t, "the records written", func() bool { return r.c.pending.Load() == 0 })
}

// metric is the value of the family name in reg: of its series with
// label op, or the sum of its series when op is "".
func metric(t *testing.T, reg *prometheus.Registry, name, op string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if op != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "op" && l.GetValue() == op }) {
				continue
			}
			sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return sum
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOneBreakerForTheFleet: failures seen by two replicas add up to one
// threshold; the trip stops both at once; one probe (fleet-wide) closes
// it for both.
func TestOneBreakerForTheFleet(t *testing.T) {
	srv := redistest.Start(t)
	var probes atomic.Int32
	probe := func(context.Context) error { probes.Add(1); return nil }
	a := newReplica(t, srv.URL(), testSpec(0, probe))
	b := newReplica(t, srv.URL(), testSpec(0, probe))

	sent := 0
	for i := 0; i < 10; i++ {
		r := a
		if i%2 == 1 {
			r = b
		}
		ok, err := r.attempt(outcome.ServerError, outcome.UnknownRateLimit)
		if ok {
			sent++
			r.flush(t)
			continue
		}
		if !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("attempt %d refused with %v, want the breaker open", i, err)
		}
	}
	if sent != 4 {
		t.Errorf("%d failing attempts reached the provider across two replicas, want 4 (one threshold)", sent)
	}
	for _, r := range []*replica{a, b} {
		if st := r.up.Status(time.Now()); st.State == "closed" || !st.Shared {
			t.Errorf("row: state %s, shared %v; want open (or half-open), shared", st.State, st.Shared)
		}
	}
	// After the cooldown one probe closes it for the fleet.
	eventually(t, "both replicas closed", func() bool {
		return a.up.Status(time.Now()).State == "closed" && b.up.Status(time.Now()).State == "closed"
	})
	if n := probes.Load(); n != 1 {
		t.Errorf("%d probes across the fleet, want 1", n)
	}
	if ok, err := b.attempt(outcome.OK, outcome.UnknownRateLimit); !ok {
		t.Errorf("after the close: refused with %v", err)
	}
}

// TestOneBudgetForTheFleet: a provider that announces 10 requests left is
// sent at most 10 across two replicas until its budget refills.
func TestOneBudgetForTheFleet(t *testing.T) {
	srv := redistest.Start(t)
	a := newReplica(t, srv.URL(), testSpec(0, nil))
	b := newReplica(t, srv.URL(), testSpec(0, nil))
	// The provider says: 10 a minute, 10 left, full again in a minute.
	rl := outcome.RateLimit{LimitRequests: 10, RemainingRequests: 10, ResetRequests: time.Minute,
		LimitTokens: -1, RemainingTokens: -1}
	if ok, err := a.attempt(outcome.OK, rl); !ok {
		t.Fatal(err)
	}
	a.flush(t)
	admitted := 0
	for i := 0; i < 30; i++ {
		r := a
		if i%2 == 1 {
			r = b
		}
		if ok, _ := r.attempt(outcome.OK, outcome.UnknownRateLimit); ok {
			admitted++
		}
	}
	if admitted < 9 || admitted > 10 {
		t.Errorf("two replicas admitted %d requests against a fleet budget of 10, want 10 (one refill at most)", admitted)
	}
}

// TestRetryAfterSharedAcrossReplicas: a 429 with Retry-After seen by one
// replica blocks the provider for the other.
func TestRetryAfterSharedAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a := newReplica(t, srv.URL(), testSpec(0, nil))
	b := newReplica(t, srv.URL(), testSpec(0, nil))
	now := time.Now()
	p, err := a.up.Acquire(now, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Release(now, upstream.Result{Kind: outcome.RateLimited, RetryAfter: 3 * time.Second, RateLimit: outcome.UnknownRateLimit})
	a.flush(t)
	_, err = b.up.Acquire(time.Now(), 1)
	var r *upstream.Refusal
	if !errors.As(err, &r) || r.Reason != upstream.Limited || r.Wait < 2*time.Second || r.Wait > 3*time.Second {
		t.Fatalf("b after a's 429 with Retry-After 3s: %v (%+v), want limited for about 3s", err, r)
	}
	if st := b.up.Status(time.Now()); st.State != "closed" {
		t.Errorf("a hinted 429 opened the breaker: %s", st.State)
	}
}

// TestQuotaAndTargetsShared: a quota block and a disabled target seen by
// one replica hold on the other; an operator's enable on either lifts
// both everywhere.
func TestQuotaAndTargetsShared(t *testing.T) {
	srv := redistest.Start(t)
	a := newReplica(t, srv.URL(), testSpec(0, nil))
	b := newReplica(t, srv.URL(), testSpec(0, nil))
	now := time.Now()
	p, err := a.up.Acquire(now, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Release(now, upstream.Result{Kind: outcome.Quota, RateLimit: outcome.UnknownRateLimit})
	a.up.DisableTarget("gpt-x", "model not found")
	a.flush(t)
	_, err = b.up.Acquire(time.Now(), 1)
	if !errors.Is(err, upstream.ErrQuota) {
		t.Fatalf("b after a's quota error: %v, want out of quota", err)
	}
	eventually(t, "b sees the disabled target", func() bool { return b.up.TargetOff("gpt-x") })
	if st := b.up.Status(time.Now()); !st.OutOfQuota {
		t.Errorf("b's row: out_of_quota false")
	}
	b.up.Enable()
	b.flush(t)
	eventually(t, "a sees the enable", func() bool {
		return !a.up.TargetOff("gpt-x") && !a.up.Status(time.Now()).OutOfQuota
	})
	if ok, err := a.attempt(outcome.OK, outcome.UnknownRateLimit); !ok {
		t.Errorf("a after the enable: %v", err)
	}
}

// TestLostRedis: with Redis gone, every decision is local at once (no
// request waits for Redis), shared_state_up is 0 and errors are counted;
// when Redis is back the replica uses it again.
func TestLostRedis(t *testing.T) {
	srv := redistest.Start(t)
	a := newReplica(t, srv.URL(), testSpec(0, nil))
	if got := metric(t, a.reg, "llmrouter_shared_state_up", ""); got != 1 {
		t.Fatalf("shared_state_up = %v with Redis up", got)
	}
	srv.Stop()
	for i := 0; i < 50; i++ {
		if ok, err := a.attempt(outcome.OK, outcome.UnknownRateLimit); !ok {
			t.Fatalf("attempt %d with Redis down refused: %v", i, err)
		}
	}
	if got := metric(t, a.reg, "llmrouter_shared_state_up", ""); got != 0 {
		t.Errorf("shared_state_up = %v with Redis down, want 0", got)
	}
	// The first failed call (an admission, or the once-a-second sync if
	// it came first) switched to local state: no later attempt asked Redis.
	errs := metric(t, a.reg, "llmrouter_shared_state_errors_total", "")
	if admit := metric(t, a.reg, "llmrouter_shared_state_errors_total", "admit"); errs < 1 || admit > 1 {
		t.Errorf("shared_state_errors_total: %v in all, %v for admit; want at least one, and at most one admission that asked the lost Redis", errs, admit)
	}
	if a.up.Status(time.Now()).Shared {
		t.Error("row says shared while Redis is down")
	}
	// Local state decides: its own breaker trips on local failures.
	for i := 0; i < 4; i++ {
		a.attempt(outcome.ServerError, outcome.UnknownRateLimit)
	}
	if st := a.up.Status(time.Now()); st.State != "open" {
		t.Errorf("local breaker after 4 failures with Redis down: %s, want open", st.State)
	}
	srv.Start()
	eventually(t, "shared state back", func() bool { return a.c.Up() })
	if got := metric(t, a.reg, "llmrouter_shared_state_up", ""); got != 1 {
		t.Errorf("shared_state_up = %v after Redis came back", got)
	}
}

// TestStartsWithRedisDown: a router whose Redis is down starts, serves
// locally and joins when Redis answers.
func TestStartsWithRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	t0 := time.Now()
	a := newReplica(t, srv.URL(), testSpec(0, nil))
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("start with Redis down took %s", d)
	}
	if ok, err := a.attempt(outcome.OK, outcome.UnknownRateLimit); !ok {
		t.Fatalf("refused with Redis down: %v", err)
	}
	srv.Start()
	eventually(t, "joined the fleet", func() bool { return a.c.Up() })
}

// TestKeysExpire: every key the fleet writes carries a TTL.
func TestKeysExpire(t *testing.T) {
	srv := redistest.Start(t)
	a := newReplica(t, srv.URL(), testSpec(60, nil))
	a.attempt(outcome.ServerError, outcome.UnknownRateLimit)
	a.up.DisableTarget("m", "gone")
	a.flush(t)
	keys := srv.Do("KEYS", "*")
	if keys == "*0" {
		t.Fatal("no keys written")
	}
	ctx := context.Background()
	all, err := a.c.rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range all {
		ttl, err := a.c.rdb.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 {
			t.Errorf("key %s: TTL %v (%v), want one", k, ttl, err)
		}
		if k[:len(redisconn.DefaultKeyPrefix)] != redisconn.DefaultKeyPrefix {
			t.Errorf("key %s lacks the prefix", k)
		}
	}
}

// TestSentinel: through a Sentinel (redis_url with master_name), two
// replicas share one breaker as with a direct connection.
func TestSentinel(t *testing.T) {
	srv := redistest.Start(t)
	sentinel := redistest.StartSentinel(t, srv)
	url := "redis://" + sentinel + "/0?master_name=mymaster"
	if err := (redisconn.Config{RedisURL: url}).Validate(); err != nil {
		t.Fatal(err)
	}
	a := newReplica(t, url, testSpec(0, nil))
	b := newReplica(t, url, testSpec(0, nil))
	eventually(t, "both up through the sentinel", func() bool { return a.c.Up() && b.c.Up() })
	for range 4 {
		a.attempt(outcome.ServerError, outcome.UnknownRateLimit)
		a.flush(t)
	}
	if _, err := b.up.Acquire(time.Now(), 1); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("b after a's 4 failures through the sentinel: %v, want the breaker open", err)
	}
}
