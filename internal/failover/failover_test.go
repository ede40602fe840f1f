package failover

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/bulkhead"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/reqctx"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDecide is decide's step table: every outcome kind has rows, so a
// kind added to internal/outcome without a decision here fails. hold is
// what is left of routing.retry.tier_wait (0: off, or the provider no
// longer admits).
func TestDecide(t *testing.T) {
	const (
		backoff = time.Second
		left    = 10 * time.Second
		tw      = 3 * time.Second // a tier_wait not yet spent
	)
	retry := func(wait time.Duration) decision { return decision{step: stepRetry, wait: wait} }
	held := func(wait time.Duration) decision { return decision{step: stepRetry, wait: wait, hold: true} }
	tests := []struct {
		name       string
		kind       outcome.Kind
		tries      int
		retryAfter time.Duration
		left       time.Duration
		hold       time.Duration
		want       decision
	}{
		{"ok serves", outcome.OK, 1, 0, left, tw, decision{step: stepServe}},
		{"rate limited waits its backoff", outcome.RateLimited, 1, 0, left, 0, retry(backoff)},
		{"rate limited waits a longer retry-after", outcome.RateLimited, 1, 3 * time.Second, left, 0, retry(3 * time.Second)},
		{"rate limited: a shorter retry-after does not shorten the backoff", outcome.RateLimited, 1, time.Millisecond, left, 0, retry(backoff)},
		{"rate limited: retry-after beyond the deadline skips the provider", outcome.RateLimited, 1, time.Minute, left, tw, decision{step: stepDrop}},
		{"rate limited: a retry-after within tier_wait holds the tier", outcome.RateLimited, 1, 2 * time.Second, left, tw, held(2 * time.Second)},
		{"rate limited: a retry-after equal to what is left of tier_wait holds", outcome.RateLimited, 1, tw, left, tw, held(tw)},
		{"rate limited: a retry-after beyond tier_wait degrades", outcome.RateLimited, 1, 4 * time.Second, left, tw, retry(4 * time.Second)},
		{"rate limited: without a hint it degrades (it counts)", outcome.RateLimited, 1, 0, left, tw, retry(backoff)},
		{"overloaded waits", outcome.Overloaded, 2, 0, left, 0, retry(backoff)},
		{"overloaded holds the tier for its backoff", outcome.Overloaded, 1, 0, left, tw, held(backoff)},
		{"overloaded: retry-after equal to what is left still fits", outcome.Overloaded, 1, left, left, 0, retry(left)},
		{"server error waits", outcome.ServerError, 1, 0, left, 0, retry(backoff)},
		{"server error holds the tier for its backoff", outcome.ServerError, 1, 0, left, tw, held(backoff)},
		{"server error: tier_wait nearly spent degrades", outcome.ServerError, 2, 0, left, backoff / 2, retry(backoff)},
		{"server error: backoff beyond the deadline skips", outcome.ServerError, 1, 0, backoff / 2, tw, decision{step: stepDrop}},
		{"timeout waits, never held: it has cost its time", outcome.Timeout, 1, 0, left, tw, retry(backoff)},
		{"network waits", outcome.Network, 3, 0, left, 0, retry(backoff)},
		{"network holds the tier", outcome.Network, 1, 0, left, tw, held(backoff)},
		{"network: nothing left skips", outcome.Network, 1, 0, 0, tw, decision{step: stepDrop}},
		{"auth drops the provider", outcome.Auth, 1, 0, left, tw, decision{step: stepDrop}},
		{"quota drops the provider", outcome.Quota, 1, time.Second, left, tw, decision{step: stepDrop}},
		{"client error goes back", outcome.ClientError, 1, 0, left, tw, decision{step: stepReturn}},
		{"canceled: the client is gone", outcome.Canceled, 1, 0, left, tw, decision{step: stepGone}},
		{"unknown is retried once, never held", outcome.Unknown, 1, 0, left, tw, retry(backoff)},
		{"unknown twice drops", outcome.Unknown, 2, 0, left, tw, decision{step: stepDrop}},
		{"target missing disables the target", outcome.TargetMissing, 1, 0, left, tw, decision{step: stepDisable}},
		{"context exceeded outgrows the target", outcome.ContextExceeded, 1, 0, left, tw, decision{step: stepOutgrown}},
		{"a kind from the future drops", outcome.Kind(200), 1, 0, left, tw, decision{step: stepDrop}},
	}
	covered := map[outcome.Kind]bool{}
	for _, tt := range tests {
		covered[tt.kind] = true
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.kind, tt.tries, backoff, tt.retryAfter, tt.left, tt.hold)
			if got != tt.want {
				t.Errorf("decide(%s, tries %d, backoff %s, retry-after %s, left %s, hold %s) = %s %s hold %v, want %s %s hold %v",
					tt.kind, tt.tries, backoff, tt.retryAfter, tt.left, tt.hold, got.step, got.wait, got.hold, tt.want.step, tt.want.wait, tt.want.hold)
			}
		})
	}
	for _, k := range outcome.Kinds() {
		if !covered[k] {
			t.Errorf("no row for outcome kind %s", k)
		}
	}
}

// TestAnnounced: the wait a failure's provider named.
func TestAnnounced(t *testing.T) {
	spent := outcome.UnknownRateLimit
	spent.RemainingRequests, spent.ResetRequests = 0, 2*time.Second
	tokens := outcome.UnknownRateLimit
	tokens.RemainingTokens, tokens.ResetTokens = 0, 5*time.Second
	left := outcome.UnknownRateLimit
	left.RemainingRequests, left.ResetRequests = 3, 9*time.Second
	for _, tt := range []struct {
		name string
		oe   outcome.Error
		want time.Duration
	}{
		{"retry-after", outcome.Error{Kind: outcome.RateLimited, RetryAfter: time.Second, RateLimit: spent}, time.Second},
		{"nothing announced", outcome.Error{Kind: outcome.RateLimited}, 0},
		{"requests spent: their reset", outcome.Error{Kind: outcome.RateLimited, RateLimit: spent}, 2 * time.Second},
		{"tokens spent: their reset", outcome.Error{Kind: outcome.RateLimited, RateLimit: tokens}, 5 * time.Second},
		{"budget left: no wait", outcome.Error{Kind: outcome.RateLimited, RateLimit: left}, 0},
		{"a 503's retry-after", outcome.Error{Kind: outcome.Overloaded, RetryAfter: time.Second}, time.Second},
		{"a 503's reset is no wait", outcome.Error{Kind: outcome.Overloaded, RateLimit: spent}, 0},
	} {
		if got := announced(&tt.oe); got != tt.want {
			t.Errorf("%s: announced = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestDecideRefusal is the step table of the provider's refusals.
func TestDecideRefusal(t *testing.T) {
	const left = 10 * time.Second
	tests := []struct {
		reason upstream.Reason
		wait   time.Duration
		hold   time.Duration
		want   decision
	}{
		{upstream.Open, time.Second, 3 * time.Second, decision{step: stepDrop}},
		{upstream.Full, 0, 3 * time.Second, decision{step: stepAwaitSlot}},
		{upstream.Limited, 2 * time.Second, 0, decision{step: stepRetry, wait: 2 * time.Second}},
		{upstream.Limited, 2 * time.Second, 3 * time.Second, decision{step: stepRetry, wait: 2 * time.Second, hold: true}},
		{upstream.Limited, 4 * time.Second, 3 * time.Second, decision{step: stepRetry, wait: 4 * time.Second}},
		{upstream.Limited, 0, 0, decision{step: stepRetry}},
		{upstream.Limited, time.Minute, 3 * time.Second, decision{step: stepDrop}},
		{upstream.TooLarge, 0, 3 * time.Second, decision{step: stepDrop}},
		{upstream.Throttled, 0, 3 * time.Second, decision{step: stepDrop}},
		{upstream.Quota, time.Second, 3 * time.Second, decision{step: stepDrop}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s wait %s hold %s", tt.reason, tt.wait, tt.hold), func(t *testing.T) {
			if got := decideRefusal(tt.reason, tt.wait, left, tt.hold); got != tt.want {
				t.Errorf("decideRefusal(%s, %s, %s, %s) = %+v, want %+v", tt.reason, tt.wait, left, tt.hold, got, tt.want)
			}
		})
	}
}

// fake is a scripted adapter.
type fake struct {
	calls atomic.Int32
	do    func(ctx context.Context, n int) (*provider.Response, error) // n: this call's number, from 1

	mu   sync.Mutex // guards caps
	caps []int64    // each call's Request.MaxOutputTokens
}

func (f *fake) Supports(provider.Op) bool { return true }
func (f *fake) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	f.mu.Lock()
	f.caps = append(f.caps, req.MaxOutputTokens)
	f.mu.Unlock()
	return f.do(ctx, int(f.calls.Add(1)))
}

// sent returns the MaxOutputTokens of each call, in order.
func (f *fake) sent() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.caps...)
}

func answers(context.Context, int) (*provider.Response, error) {
	return &provider.Response{Body: []byte(`{"ok":true}`)}, nil
}

func fails(kind outcome.Kind, status int) func(context.Context, int) (*provider.Response, error) {
	return func(context.Context, int) (*provider.Response, error) {
		return nil, &outcome.Error{Kind: kind, Status: status, Message: kind.String()}
	}
}

// tgt is one target of a rig's model, on a provider of its own.
type tgt struct {
	name   string
	tier   int
	a      *fake
	cfg    provider.Config
	maxOut int64 // the target's max_output_tokens
	// trip1: its breaker trips on the first counted failure.
	trip1 bool
	// ftt is the target's first_token_timeout (0: its provider's).
	ftt time.Duration
	// window is the target's context_window (0: unknown).
	window int64
}

// rig is a Loop over real provider runtimes (internal/upstream) with
// fake adapters: one model "m" whose targets are the rig's providers.
type rig struct {
	loop  *Loop
	provs map[string]*Provider
	model *route.Model
	pol   Policy
	done  *released
}

// released records the results the rig's providers' permits were
// released with.
type released struct {
	mu    sync.Mutex // guards kinds
	kinds map[string][]outcome.Kind
}

type observer struct {
	name string
	rel  *released
}

func (observer) Refused(upstream.Reason)  {}
func (observer) Transition(breaker.State) {}
func (o observer) Done(r upstream.Result) {
	o.rel.mu.Lock()
	defer o.rel.mu.Unlock()
	o.rel.kinds[o.name] = append(o.rel.kinds[o.name], r.Kind)
}

// of returns the kinds name's permits were released with, in order.
func (rl *released) of(name string) []outcome.Kind {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return append([]outcome.Kind(nil), rl.kinds[name]...)
}

// retryEvery waits exactly one second before any retry (no jitter).
var retryEvery = backoff.Config{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: time.Second, Multiplier: 1}

func newRig(t testing.TB, retry backoff.Config, targets ...tgt) *rig {
	t.Helper()
	freed := bulkhead.NewSignal()
	rg := &rig{provs: map[string]*Provider{}, pol: Policy{Config: policy.Config{Retry: policy.Retry{Config: retry}, Weights: route.DefaultWeights()}},
		done: &released{kinds: map[string][]outcome.Kind{}}}
	mc := route.ModelConfig{Name: "m"}
	for _, tg := range targets {
		cfg := tg.cfg
		cfg.Name, cfg.Type = tg.name, "fake"
		cfg = cfg.WithDefaults()
		pol := shared.Policy{}.WithDefaults()
		if tg.trip1 {
			pol.Breaker.FailureThreshold.Consecutive = 1
		}
		d := provider.Descriptor{Name: tg.name, Adapter: tg.a, Config: cfg}
		up := upstream.New(d, pol, upstream.Options{Freed: freed, Observer: observer{tg.name, rg.done}})
		rg.provs[tg.name] = &Provider{Descriptor: d, Up: up}
		mc.Targets = append(mc.Targets, route.Target{Provider: tg.name, Model: tg.name + "-model", Tier: tg.tier, MaxOutputTokens: tg.maxOut, FirstTokenTimeout: tg.ftt, ContextWindow: tg.window})
	}
	table, err := route.NewTable([]route.ModelConfig{mc})
	if err != nil {
		t.Fatal(err)
	}
	rg.model = table.Lookup("m")
	rg.loop = New(Options{Freed: freed.C}, nil)
	return rg
}

// requestCtx is a request's context within timeout as the front door
// makes it (a reqctx.Ctx with its deadline, whose timer the attempts'
// alarms ride).
func requestCtx(parent context.Context, timeout time.Duration) (context.Context, func()) {
	ctx := reqctx.New(parent)
	ctx.SetDeadline(time.Now().Add(timeout))
	return ctx, func() { ctx.Cancel(nil) }
}

// walk runs one request of model m within timeout.
func (rg *rig) walk(ctx context.Context, timeout time.Duration) (*Run, Result) {
	return rg.walkLimited(ctx, timeout, 0, 100)
}

// walkLimited is walk for a request whose output limit is maxTokens and
// whose token estimate is tokens.
func (rg *rig) walkLimited(ctx context.Context, timeout time.Duration, maxTokens, tokens int64) (*Run, Result) {
	ctx, cancel := requestCtx(ctx, timeout)
	defer cancel()
	r := &Run{ID: "req", Op: provider.OpChat, Model: rg.model, MaxTokens: maxTokens}
	res := rg.loop.Walk(ctx, r, &rg.pol, func(name string) *Provider { return rg.provs[name] },
		&provider.Request{Op: provider.OpChat, Body: []byte(`{}`)}, tokens)
	if res.Served != nil {
		res.Served.Done(outcome.OK)
	}
	return r, res
}

func servedBy(res Result) string {
	if res.Served == nil {
		return ""
	}
	return res.Served.Provider.Name
}

// TestWalkFailsOverAtOnce: the first attempt fails, whichever provider
// ranking put first; the other provider serves at once, no wait.
func TestWalkFailsOverAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		first := func(ctx context.Context, _ int) (*provider.Response, error) {
			if n.Add(1) == 1 {
				return nil, &outcome.Error{Kind: outcome.ServerError, Status: 500, Message: "boom"}
			}
			return answers(ctx, 0)
		}
		rg := newRig(t, retryEvery, tgt{name: "a", a: &fake{do: first}}, tgt{name: "b", a: &fake{do: first}})
		start := time.Now()
		r, res := rg.walk(t.Context(), time.Minute)
		if res.Served == nil || r.Attempts != 2 {
			t.Fatalf("served by %q after %d attempts, want served after 2", servedBy(res), r.Attempts)
		}
		if failed := r.Failures[0].Provider; failed == servedBy(res) {
			t.Errorf("served by %s, which failed: want the other provider", failed)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("waited %s before failing over, want 0", waited)
		}
	})
}

// TestWalkRetriesSameProviderAfterBackoff: with one provider, a
// retryable failure is retried there after exactly the backoff.
func TestWalkRetriesSameProviderAfterBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fake{do: func(ctx context.Context, n int) (*provider.Response, error) {
			if n == 1 {
				return nil, &outcome.Error{Kind: outcome.Overloaded, Status: 503, Message: "busy"}
			}
			return answers(ctx, n)
		}}
		rg := newRig(t, retryEvery, tgt{name: "a", a: a})
		start := time.Now()
		r, res := rg.walk(t.Context(), time.Minute)
		if servedBy(res) != "a" || r.Attempts != 2 {
			t.Fatalf("served by %q after %d attempts, want a after 2", servedBy(res), r.Attempts)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("retried after %s, want the backoff, 1s", waited)
		}
	})
}

// TestWalkRetryAfter: a Retry-After that fits in what is left of the
// deadline is waited for; a longer one skips the provider at once.
func TestWalkRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name       string
		retryAfter time.Duration
		wantServed bool
		wantWait   time.Duration
	}{
		{"within the deadline", 3 * time.Second, true, 3 * time.Second},
		{"beyond the deadline", time.Minute, false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &fake{do: func(ctx context.Context, n int) (*provider.Response, error) {
					if n == 1 {
						return nil, &outcome.Error{Kind: outcome.RateLimited, Status: 429, Message: "slow down", RetryAfter: tt.retryAfter}
					}
					return answers(ctx, n)
				}}
				rg := newRig(t, retryEvery, tgt{name: "a", a: a})
				start := time.Now()
				r, res := rg.walk(t.Context(), 10*time.Second)
				if got := res.Served != nil; got != tt.wantServed {
					t.Fatalf("served %v after %d attempts, want %v", got, r.Attempts, tt.wantServed)
				}
				if waited := time.Since(start); waited != tt.wantWait {
					t.Errorf("the walk took %s, want %s", waited, tt.wantWait)
				}
				if !tt.wantServed && (res.DeadlinePassed || res.Gone || res.ClientError != nil || r.Attempts != 1) {
					t.Errorf("result %+v after %d attempts, want nothing served after 1", res, r.Attempts)
				}
			})
		})
	}
}

// TestWalkHoldsTheBetterTier: with routing.retry.tier_wait 3s, a blip of
// the sole tier-0 provider (a 429 that says when to come back within
// tier_wait, a 500, 503 or reset retried after its backoff) is waited
// for and tier 0 serves; what a wait cannot cure or tier_wait cannot
// cover (a longer Retry-After, an open breaker, auth, quota, a timeout)
// degrades at once, as every failure does at tier_wait 0; a tier-0
// provider that keeps failing degrades within tier_wait plus its backoff
// and max_attempts (docs/ARCHITECTURE.md, "Retries and failover").
func TestWalkHoldsTheBetterTier(t *testing.T) {
	once := func(oe *outcome.Error) func(context.Context, int) (*provider.Response, error) {
		return func(ctx context.Context, n int) (*provider.Response, error) {
			if n == 1 {
				return nil, oe
			}
			return answers(ctx, n)
		}
	}
	rl := func(after time.Duration) *outcome.Error {
		return &outcome.Error{Kind: outcome.RateLimited, Status: 429, RetryAfter: after}
	}
	e500 := &outcome.Error{Kind: outcome.ServerError, Status: 500}
	for _, tt := range []struct {
		name     string
		tierWait time.Duration
		a        func(context.Context, int) (*provider.Response, error)
		trip1    bool
		want     string        // who serves
		calls    [2]int32      // calls of a, b
		took     time.Duration // the walk's time
	}{
		{"429 retry-after 2s within tier_wait", 3 * time.Second, once(rl(2 * time.Second)), false, "a", [2]int32{2, 0}, 2 * time.Second},
		{"500 after its backoff", 3 * time.Second, once(e500), false, "a", [2]int32{2, 0}, time.Second},
		{"503 after its backoff", 3 * time.Second, once(&outcome.Error{Kind: outcome.Overloaded, Status: 503}), false, "a", [2]int32{2, 0}, time.Second},
		{"reset after its backoff", 3 * time.Second, once(&outcome.Error{Kind: outcome.Network}), false, "a", [2]int32{2, 0}, time.Second},
		{"keeps failing: degrades after one retry, the last attempt the fallback's", 3 * time.Second, fails(outcome.ServerError, 500), false, "b", [2]int32{2, 1}, time.Second},
		{"429 retry-after beyond tier_wait degrades at once", 3 * time.Second, once(rl(4 * time.Second)), false, "b", [2]int32{1, 1}, 0},
		{"a bare 429 degrades at once", 3 * time.Second, once(rl(0)), false, "b", [2]int32{1, 1}, 0},
		{"a breaker that opens degrades at once", 3 * time.Second, once(e500), true, "b", [2]int32{1, 1}, 0},
		{"auth degrades at once", 3 * time.Second, once(&outcome.Error{Kind: outcome.Auth, Status: 401}), false, "b", [2]int32{1, 1}, 0},
		{"quota degrades at once", 3 * time.Second, once(&outcome.Error{Kind: outcome.Quota, Status: 429}), false, "b", [2]int32{1, 1}, 0},
		{"a timeout degrades at once", 3 * time.Second, once(&outcome.Error{Kind: outcome.Timeout}), false, "b", [2]int32{1, 1}, 0},
		{"tier_wait 0: a 500 degrades at once", 0, once(e500), false, "b", [2]int32{1, 1}, 0},
		{"tier_wait 0: a 429 retry-after 2s degrades at once", 0, once(rl(2 * time.Second)), false, "b", [2]int32{1, 1}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := &fake{do: tt.a}, &fake{do: answers}
				rg := newRig(t, retryEvery, tgt{name: "a", a: a, trip1: tt.trip1}, tgt{name: "b", tier: 1, a: b})
				rg.pol.Retry.TierWait = tt.tierWait
				start := time.Now()
				r, res := rg.walk(t.Context(), time.Minute)
				if got := servedBy(res); got != tt.want {
					t.Fatalf("served by %q after %d attempts (%s), want %s", got, r.Attempts, r.FailureList(), tt.want)
				}
				if got := [2]int32{a.calls.Load(), b.calls.Load()}; got != tt.calls {
					t.Errorf("calls of a, b = %v, want %v", got, tt.calls)
				}
				if took := time.Since(start); took != tt.took {
					t.Errorf("the walk took %s, want %s", took, tt.took)
				}
			})
		})
	}
}

// TestWalkHoldFailsOverWithinTheTier: a blip of one tier-0 provider
// moves to the other tier-0 provider at once; only when the tier has
// nothing left to try now does the walk wait for it rather than degrade.
func TestWalkHoldFailsOverWithinTheTier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		// The tier's first call fails, whichever provider it reaches; its
		// second and third too: the retry after the backoff serves.
		flaky := func(ctx context.Context, _ int) (*provider.Response, error) {
			if n.Add(1) <= 2 {
				return nil, &outcome.Error{Kind: outcome.Overloaded, Status: 503}
			}
			return answers(ctx, 0)
		}
		a1, a2, b := &fake{do: flaky}, &fake{do: flaky}, &fake{do: answers}
		rg := newRig(t, backoff.Config{MaxAttempts: 4, InitialBackoff: time.Second, MaxBackoff: time.Second, Multiplier: 1},
			tgt{name: "a1", a: a1}, tgt{name: "a2", a: a2}, tgt{name: "b", tier: 1, a: b})
		rg.pol.Retry.TierWait = 3 * time.Second
		start := time.Now()
		r, res := rg.walk(t.Context(), time.Minute)
		if got := servedBy(res); got != "a1" && got != "a2" {
			t.Fatalf("served by %q after %d attempts, want tier 0", got, r.Attempts)
		}
		if r.Attempts != 3 || b.calls.Load() != 0 {
			t.Errorf("%d attempts, %d calls of tier 1, want 3 and 0", r.Attempts, b.calls.Load())
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("the walk took %s, want one backoff, 1s: the tier's second provider at once", took)
		}
	})
}

// TestWalkContextWindows: a target whose window the prompt estimate
// alone exceeds is skipped before any call, unless every target would be,
// when the largest is called; a provider's context-length error takes
// that target, and every one of a window no larger, out of the request,
// and the request goes on to a larger or unknown window, else the
// provider's 400 goes back (docs/ARCHITECTURE.md, "Context windows").
func TestWalkContextWindows(t *testing.T) {
	tooLong := func(context.Context, int) (*provider.Response, error) {
		return nil, &outcome.Error{Kind: outcome.ContextExceeded, Status: 400, Code: "context_length_exceeded",
			Message: "This model's maximum context length is 1000 tokens."}
	}
	type tg3 struct {
		name   string
		tier   int
		window int64
		fails  bool // answers a context-length error
	}
	for _, tt := range []struct {
		name   string
		prompt int64
		tgs    []tg3
		want   string // who serves; "" the provider's 400 goes back
		calls  []int32
	}{
		{"too long for the first: the larger serves, the first never called", 1000,
			[]tg3{{"small", 0, 500, false}, {"large", 1, 2000, false}}, "large", []int32{0, 1}},
		{"an unknown window is never skipped", 1000,
			[]tg3{{"small", 0, 500, false}, {"unknown", 1, 0, false}}, "unknown", []int32{0, 1}},
		{"fits: nothing skipped", 400,
			[]tg3{{"small", 0, 500, false}, {"large", 1, 2000, false}}, "small", []int32{1, 0}},
		{"too long for all: the largest is called", 5000,
			[]tg3{{"small", 0, 500, false}, {"mid", 0, 800, false}, {"large", 1, 700, false}}, "mid", []int32{0, 1, 0}},
		{"context error: the larger serves in one more call", 100,
			[]tg3{{"first", 0, 1000, true}, {"larger", 1, 4000, false}}, "larger", []int32{1, 1}},
		{"context error: no smaller window is tried, an unknown one is", 100,
			[]tg3{{"first", 0, 1000, true}, {"smaller", 1, 800, false}, {"unknown", 2, 0, false}}, "unknown", []int32{1, 0, 1}},
		{"context error: none left, the 400 goes back", 100,
			[]tg3{{"first", 0, 1000, true}, {"smaller", 1, 800, false}}, "", []int32{1, 0}},
		{"context errors everywhere: each target once, then the 400", 100,
			[]tg3{{"a", 0, 0, true}, {"b", 1, 0, true}}, "", []int32{1, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var tgts []tgt
				var fakes []*fake
				for _, g := range tt.tgs {
					f := &fake{do: answers}
					if g.fails {
						f.do = tooLong
					}
					fakes = append(fakes, f)
					tgts = append(tgts, tgt{name: g.name, tier: g.tier, a: f, window: g.window})
				}
				rg := newRig(t, retryEvery, tgts...)
				rg.pol.Retry.TierWait = 3 * time.Second
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				r := &Run{ID: "req", Op: provider.OpChat, Model: rg.model, Prompt: tt.prompt}
				res := rg.loop.Walk(ctx, r, &rg.pol, func(name string) *Provider { return rg.provs[name] },
					&provider.Request{Op: provider.OpChat, Body: []byte(`{}`)}, tt.prompt+100)
				if res.Served != nil {
					res.Served.Done(outcome.OK)
				}
				if got := servedBy(res); got != tt.want {
					t.Fatalf("served by %q (%s), want %q", got, r.FailureList(), tt.want)
				}
				if tt.want == "" && (res.ClientError == nil || res.ClientError.Kind != outcome.ContextExceeded || res.ClientError.Status != 400) {
					t.Errorf("result %+v, want the provider's context-length 400", res)
				}
				for i, f := range fakes {
					if got := f.calls.Load(); got != tt.calls[i] {
						t.Errorf("%s called %d times, want %d", tt.tgs[i].name, got, tt.calls[i])
					}
				}
				for _, g := range tt.tgs {
					for _, k := range rg.done.of(g.name) {
						if k.Counts() && k != outcome.OK {
							t.Errorf("%s released with %s, which counts against it", g.name, k)
						}
					}
				}
			})
		})
	}
}

// TestWalkKeepsLastAttemptForFallbackTier: with more failing targets
// than attempts, the last attempt goes to the model's last tier.
func TestWalkKeepsLastAttemptForFallbackTier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := func() *fake { return &fake{do: fails(outcome.ServerError, 500)} }
		a, b, c, local := boom(), boom(), boom(), &fake{do: answers}
		rg := newRig(t, retryEvery, tgt{name: "a", a: a}, tgt{name: "b", a: b}, tgt{name: "c", tier: 1, a: c}, tgt{name: "local", tier: 2, a: local})
		r, res := rg.walk(t.Context(), time.Minute)
		if servedBy(res) != "local" || r.Attempts != 3 {
			t.Fatalf("served by %q after %d attempts, want local after 3", servedBy(res), r.Attempts)
		}
		if n := c.calls.Load(); n != 0 {
			t.Errorf("tier 1 got %d calls, want 0: the last attempt is the fallback's", n)
		}
	})
}

// TestWalkFullWaitsForFreedSlot: the only provider is at
// max_concurrency; the request waits, refused Full, until a slot frees,
// and is then served.
func TestWalkFullWaitsForFreedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fake{do: answers}
		rg := newRig(t, retryEvery, tgt{name: "a", a: a, cfg: provider.Config{MaxConcurrency: 1}})
		held, err := rg.provs["a"].Up.Acquire(time.Now(), 1)
		if err != nil {
			t.Fatal(err)
		}
		var (
			r    *Run
			res  Result
			done atomic.Bool
		)
		go func() {
			r, res = rg.walk(t.Context(), time.Minute)
			done.Store(true)
		}()
		synctest.Wait()
		if done.Load() {
			t.Fatal("the walk ended while its only provider was full")
		}
		time.Sleep(5 * time.Second) // no timer wakes it: only a freed slot does
		synctest.Wait()
		if done.Load() {
			t.Fatal("the walk ended while its only provider was full")
		}
		held.Release(time.Now(), upstream.Result{Kind: outcome.OK})
		synctest.Wait()
		if !done.Load() || servedBy(res) != "a" || r.Attempts != 1 {
			t.Fatalf("served by %q after %d attempts, want a after 1, once the slot was freed", servedBy(res), r.Attempts)
		}
		if rs := r.Refusals(); len(rs) != 0 {
			t.Errorf("refusals %v left after admission, want none", rs)
		}
	})
}

// clientCtx is a client's request context as the API listener makes it
// (a reqctx.Ctx, whose end reaches the request's at once) and its hang-up.
func clientCtx(t *testing.T) (context.Context, func()) {
	ctx := reqctx.New(t.Context())
	t.Cleanup(func() { ctx.Cancel(nil) })
	return ctx, func() { ctx.Cancel(nil) }
}

// TestWalkClientGone: a client that leaves (before the walk, or during an
// attempt) ends it with Gone and no further attempt.
func TestWalkClientGone(t *testing.T) {
	t.Run("before", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a := &fake{do: answers}
			rg := newRig(t, retryEvery, tgt{name: "a", a: a})
			ctx, cancel := clientCtx(t)
			cancel()
			r, res := rg.walk(ctx, time.Minute)
			if !res.Gone || r.Attempts != 0 || a.calls.Load() != 0 {
				t.Errorf("gone %v after %d attempts (%d calls), want gone before any", res.Gone, r.Attempts, a.calls.Load())
			}
		})
	})
	t.Run("during an attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := clientCtx(t)
			leaves := &fake{do: func(ctx context.Context, _ int) (*provider.Response, error) {
				cancel()
				return nil, &outcome.Error{Kind: outcome.Canceled, Message: "client went away", Err: context.Canceled}
			}}
			other := &fake{do: answers}
			rg := newRig(t, retryEvery, tgt{name: "a", a: leaves}, tgt{name: "b", tier: 1, a: other})
			r, res := rg.walk(ctx, time.Minute)
			if !res.Gone || r.Attempts != 1 || other.calls.Load() != 0 {
				t.Errorf("gone %v after %d attempts (%d calls to b), want gone after 1, b never called", res.Gone, r.Attempts, other.calls.Load())
			}
		})
	})
}

// TestWalkReturnsClientError: a provider's client error ends the walk:
// it goes back to the client, no other provider is asked.
func TestWalkReturnsClientError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{do: fails(outcome.ClientError, 400)}, &fake{do: answers}
		rg := newRig(t, retryEvery, tgt{name: "a", a: a}, tgt{name: "b", tier: 1, a: b})
		r, res := rg.walk(t.Context(), time.Minute)
		if res.ClientError == nil || res.ClientError.Status != 400 || res.Provider != "a" {
			t.Fatalf("result %+v, want a's client error (400)", res)
		}
		if r.Attempts != 1 || b.calls.Load() != 0 {
			t.Errorf("%d attempts, %d calls to b; want 1 and none", r.Attempts, b.calls.Load())
		}
	})
}

// TestWalkTargetMissingDisablesTarget: a target whose provider says the
// model does not exist is disabled and the model fails over at once; the
// next request does not try it.
func TestWalkTargetMissingDisablesTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{do: fails(outcome.TargetMissing, 404)}, &fake{do: answers}
		rg := newRig(t, retryEvery, tgt{name: "a", a: a}, tgt{name: "b", tier: 1, a: b})
		start := time.Now()
		r, res := rg.walk(t.Context(), time.Minute)
		if servedBy(res) != "b" || r.Attempts != 2 || time.Since(start) != 0 {
			t.Fatalf("served by %q after %d attempts and %s, want b after 2, at once", servedBy(res), r.Attempts, time.Since(start))
		}
		if !rg.provs["a"].Up.TargetOff("a-model") {
			t.Error("a/a-model is still on")
		}
		if len(r.Missing) != 1 || r.Missing[0] != "a/a-model" {
			t.Errorf("missing %v, want [a/a-model]", r.Missing)
		}
		r, res = rg.walk(t.Context(), time.Minute)
		if servedBy(res) != "b" || r.Attempts != 1 || a.calls.Load() != 1 {
			t.Errorf("next request: served by %q after %d attempts, a called %d times; want b after 1, a once in all",
				servedBy(res), r.Attempts, a.calls.Load())
		}
	})
}

// TestWalkCapsOutputPerTarget: each attempt carries its own target's
// max_output_tokens; a cap does not outlive its attempt on the request
// the next target is sent.
func TestWalkCapsOutputPerTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, c := &fake{do: fails(outcome.ServerError, 500)}, &fake{do: fails(outcome.ServerError, 500)}, &fake{do: answers}
		rg := newRig(t, retryEvery, tgt{name: "a", a: a, maxOut: 16384}, tgt{name: "b", tier: 1, a: b},
			tgt{name: "c", tier: 2, a: c, maxOut: 8192})
		var log strings.Builder
		rg.loop.log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		r, res := rg.walkLimited(t.Context(), time.Minute, 64000, 64100)
		if servedBy(res) != "c" || r.Attempts != 3 {
			t.Fatalf("served by %q after %d attempts, want c after 3", servedBy(res), r.Attempts)
		}
		var lowered []string
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, `msg="output limit lowered"`) {
				lowered = append(lowered, strings.TrimSpace(line[strings.Index(line, "attempt="):]))
			}
		}
		want := []string{
			"attempt=1 provider=a model=a-model max_tokens=64000 max_output_tokens=16384",
			"attempt=3 provider=c model=c-model max_tokens=64000 max_output_tokens=8192",
		}
		if !slices.Equal(lowered, want) {
			t.Errorf("debug lines %q, want %q", lowered, want)
		}
		for _, tt := range []struct {
			name string
			f    *fake
			want int64
		}{{"a", a, 16384}, {"b", b, 0}, {"c", c, 8192}} {
			if got := tt.f.sent(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("%s was sent max_output_tokens %v, want [%d]", tt.name, got, tt.want)
			}
		}
	})
}

// TestWalkCapsOnlyWhatExceeds: a target's cap goes on the request only
// when the request's own limit is above it, or unknown (an adapter's
// default may be): a limit that fits costs no pass over the body.
func TestWalkCapsOnlyWhatExceeds(t *testing.T) {
	for _, tt := range []struct {
		name      string
		maxTokens int64
		want      int64
	}{
		{"above the cap", 64000, 16384},
		{"at the cap", 16384, 0},
		{"under the cap", 1024, 0},
		{"none set", 0, 16384},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &fake{do: answers}
				rg := newRig(t, retryEvery, tgt{name: "a", a: a, maxOut: 16384})
				if _, res := rg.walkLimited(t.Context(), time.Minute, tt.maxTokens, tt.maxTokens+100); servedBy(res) != "a" {
					t.Fatalf("not served by a: %+v", res)
				}
				if got := a.sent(); len(got) != 1 || got[0] != tt.want {
					t.Errorf("sent max_output_tokens %v, want [%d]", got, tt.want)
				}
			})
		})
	}
}

// TestWalkChargesTheCappedLimit: a provider's buckets are charged the
// output limit its target is sent, so a request asking more than a whole
// minute's budget is still served by a target whose cap fits in it.
func TestWalkChargesTheCappedLimit(t *testing.T) {
	for _, tt := range []struct {
		name   string
		maxOut int64
		served bool
	}{
		{"no cap: larger than the budget", 0, false},
		{"cap above the budget", 25000, false},
		{"capped into the budget", 16384, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &fake{do: answers}
				rg := newRig(t, retryEvery, tgt{name: "a", a: a, maxOut: tt.maxOut, cfg: provider.Config{TPM: 20000}})
				_, res := rg.walkLimited(t.Context(), time.Minute, 64000, 64100)
				if got := res.Served != nil; got != tt.served {
					t.Errorf("served %v, want %v (a called %d times)", got, tt.served, a.calls.Load())
				}
			})
		})
	}
}

// TestTokensFor: the estimate a target is charged.
func TestTokensFor(t *testing.T) {
	for _, tt := range []struct {
		name              string
		maxTokens, tokens int64
		cap               int64
		want              int64
	}{
		{"no cap", 64000, 64100, 0, 64100},
		{"above the cap", 64000, 64100, 16384, 16484},
		{"at the cap", 16384, 16484, 16384, 16484},
		{"under the cap", 1000, 1100, 16384, 1100},
		{"no limit: the estimate's default stays", 0, 356, 100, 356},
		{"saturated stays saturated", math.MaxInt64, math.MaxInt64, 16384, math.MaxInt64},
	} {
		r := &Run{MaxTokens: tt.maxTokens}
		if got := r.tokensFor(route.Target{MaxOutputTokens: tt.cap}, tt.tokens); got != tt.want {
			t.Errorf("%s: tokensFor = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestKeep is affinity's step table in the plan step: where the target
// that served a conversation last goes in the ranked candidates.
func TestKeep(t *testing.T) {
	type cand struct {
		name      string
		tier      int
		available bool // above its floors, capacity left, closed
		healthy   bool // and not down (open or failing)
	}
	ok := func(name string, tier int) cand { return cand{name, tier, true, true} }
	tests := []struct {
		name  string
		cands []cand
		last  string
		want  string // the names in order after keep
	}{
		{"first in its tier", []cand{ok("a", 0), ok("b", 0), ok("c", 0)}, "c", "c a b"},
		{"already first", []cand{ok("a", 0), ok("b", 0)}, "a", "a b"},
		{"not a candidate (not serving the op, disabled, removed)", []cand{ok("a", 0), ok("b", 0)}, "z", "a b"},
		{"unavailable: ranking decides", []cand{ok("a", 0), {"b", 0, false, false}}, "b", "a b"},
		{"failing: ranking decides", []cand{ok("a", 0), {"b", 0, true, false}}, "b", "a b"},
		{"never held on a fallback tier", []cand{ok("a", 0), ok("f", 1), ok("g", 1)}, "g", "a f g"},
		{"the best tier with an available target", []cand{{"a", 0, false, false}, ok("f", 1), ok("g", 1)}, "g", "a g f"},
		{"within its tier only", []cand{ok("a", 0), {"b", 1, false, false}, ok("f", 1), ok("g", 1), ok("h", 2)}, "a", "a b f g h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := make([]candidate, len(tt.cands))
			state := map[*Provider]cand{}
			for i, c := range tt.cands {
				p := &Provider{Descriptor: provider.Descriptor{Name: c.name}}
				cands[i] = candidate{i: i, tg: &route.Target{Provider: c.name, Model: c.name + "-model", Tier: c.tier}, p: p}
				state[p] = c
			}
			keep(cands, affinity.Target{Provider: tt.last, Model: tt.last + "-model"},
				func(c *candidate) bool { return state[c.p].available },
				func(c *candidate) bool { return state[c.p].healthy })
			var got []string
			for _, c := range cands {
				got = append(got, c.p.Name)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("order %q, want %q", g, tt.want)
			}
		})
	}
}

// TestWalkAffinity: a conversation goes back to the target that served it
// last while that target can take it, and moves (then sticks) when it is
// full; a first turn spreads by score and is recorded.
func TestWalkAffinity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &fake{do: answers}, &fake{do: answers}
		rg := newRig(t, retryEvery, tgt{name: "a", a: a, cfg: provider.Config{MaxConcurrency: 1}}, tgt{name: "b", a: b})
		rg.pol.Affinity = affinity.Config{Enabled: true}
		var did string // what affinity did for the latest walk (Run.AffinityOutcome)
		walk := func(id affinity.ID) string {
			r := &Run{ID: "req", Op: provider.OpChat, Model: rg.model, Affinity: id}
			res := rg.loop.Walk(t.Context(), r, &rg.pol, func(name string) *Provider { return rg.provs[name] },
				&provider.Request{Op: provider.OpChat, Body: []byte(`{}`)}, 100)
			if res.Served == nil {
				t.Fatalf("not served: %+v", res)
			}
			res.Served.Done(outcome.OK)
			did = r.AffinityOutcome
			return servedBy(res)
		}
		const key = affinity.Key(7)
		rg.loop.aff.Put(key, affinity.Target{Provider: "a", Model: "a-model"}, time.Now(), time.Hour)
		for range 20 {
			if got := walk(affinity.ID{Key: key}); got != "a" || did != "kept" {
				t.Fatalf("served by %s (%s), want a, kept: it served the conversation last", got, did)
			}
		}
		held, err := rg.provs["a"].Up.Acquire(time.Now(), 1) // a is full
		if err != nil {
			t.Fatal(err)
		}
		if got := walk(affinity.ID{Key: key}); got != "b" || did != "moved" {
			t.Fatalf("served by %s (%s) while a is full, want b, moved", got, did)
		}
		held.Release(time.Now(), upstream.Result{Kind: outcome.OK})
		for range 20 {
			if got := walk(affinity.ID{Key: key}); got != "b" {
				t.Fatalf("served by %s, want b: the conversation's new home", got)
			}
		}
		// A first turn is not looked up: ranking spreads it.
		firsts := map[string]int{}
		for range 40 {
			firsts[walk(affinity.ID{Key: key, First: true})]++
		}
		if firsts["a"] == 0 || firsts["b"] == 0 {
			t.Errorf("first turns served %v, want both providers", firsts)
		}
		if last, ok := rg.loop.aff.Get(key, time.Now(), time.Hour); !ok {
			t.Error("nothing recorded")
		} else if last.Provider != "a" && last.Provider != "b" {
			t.Errorf("recorded %+v", last)
		}
	})
}

// BenchmarkWalkAffinity is the attempt loop's own cost for a model of two
// targets, with affinity off and on (a conversation kept on its target).
func BenchmarkWalkAffinity(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			rg := newRig(b, retryEvery, tgt{name: "a", a: &fake{do: answers}}, tgt{name: "b", a: &fake{do: answers}})
			rg.pol.Affinity = affinity.Config{Enabled: on}
			rg.loop.aff.Put(7, affinity.Target{Provider: "a", Model: "a-model"}, time.Now(), time.Hour)
			req := &provider.Request{Op: provider.OpChat, Body: []byte(`{}`)}
			providers := func(name string) *Provider { return rg.provs[name] }
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r := &Run{ID: "req", Op: provider.OpChat, Model: rg.model, Affinity: affinity.ID{Key: 7}}
				res := rg.loop.Walk(ctx, r, &rg.pol, providers, req, 100)
				res.Served.Done(outcome.OK)
			}
		})
	}
}
