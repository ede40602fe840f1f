package ratelimit

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

var t0 = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

// reqs, toks and retryAfter build announcements that say only what they name.
func reqs(limit, remaining int64, reset time.Duration) outcome.RateLimit {
	rl := outcome.UnknownRateLimit
	rl.LimitRequests, rl.RemainingRequests, rl.ResetRequests = limit, remaining, reset
	return rl
}

func toks(limit, remaining int64, reset time.Duration) outcome.RateLimit {
	rl := outcome.UnknownRateLimit
	rl.LimitTokens, rl.RemainingTokens, rl.ResetTokens = limit, remaining, reset
	return rl
}

func retryAfter(d time.Duration) outcome.RateLimit {
	rl := outcome.UnknownRateLimit
	rl.RetryAfter = d
	return rl
}

// step is one action on a Limiter at t0+at, and what it must give.
type step struct {
	at     time.Duration
	do     string            // observe, reserve, cancel, reconcile, snapshot
	rl     outcome.RateLimit // observe
	n      int64             // reserve: tokens; reconcile: actual tokens
	times  int               // reserve: repeat, every one wanting the same (0 = once)
	want   string            // reserve: "" granted, a Limit* name, or "too_large"
	wait   time.Duration     // reserve: LimitedError.Wait when refused
	snap   Snapshot          // snapshot
	target int               // cancel, reconcile: index of the granted reservation (in order)
}

func observe(at time.Duration, rl outcome.RateLimit) step {
	return step{at: at, do: "observe", rl: rl}
}

func grant(at time.Duration, tokens int64, times int) step {
	return step{at: at, do: "reserve", n: tokens, times: times}
}

func refuse(at time.Duration, tokens int64, limit string, wait time.Duration) step {
	return step{at: at, do: "reserve", n: tokens, want: limit, wait: wait}
}

func snapshot(at time.Duration, s Snapshot) step { return step{at: at, do: "snapshot", snap: s} }

func cancel(at time.Duration, target int) step {
	return step{at: at, do: "cancel", target: target}
}

func reconcile(at time.Duration, target int, actual int64) step {
	return step{at: at, do: "reconcile", target: target, n: actual}
}

func run(t *testing.T, l *Limiter, steps []step) {
	t.Helper()
	var granted []*Reservation
	for i, s := range steps {
		now := t0.Add(s.at)
		switch s.do {
		case "observe":
			l.Observe(now, s.rl)
		case "reserve":
			for k := range max(s.times, 1) {
				r, err := l.Reserve(now, s.n)
				if got := describe(err); got != s.want {
					t.Fatalf("step %d (%s, reserve %d, #%d): got %q (%v), want %q", i, s.at, s.n, k+1, got, err, s.want)
				}
				var le *LimitedError
				if errors.As(err, &le) && le.Wait != s.wait {
					t.Fatalf("step %d (%s, reserve %d): got wait %s, want %s", i, s.at, s.n, le.Wait, s.wait)
				}
				if err == nil {
					granted = append(granted, &r)
				} else if r != (Reservation{}) {
					t.Fatalf("step %d: got a reservation with an error, want none", i)
				}
			}
		case "cancel":
			granted[s.target].Cancel(now)
		case "reconcile":
			granted[s.target].Reconcile(now, s.n)
		case "snapshot":
			if got := l.Snapshot(now); got != s.snap {
				t.Fatalf("step %d (%s): got snapshot %+v, want %+v", i, s.at, got, s.snap)
			}
		default:
			t.Fatalf("step %d: unknown action %q", i, s.do)
		}
	}
}

func describe(err error) string {
	var le *LimitedError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrTooLarge):
		return "too_large"
	case errors.As(err, &le):
		if !errors.Is(err, ErrLimited) {
			return "limited-but-not-ErrLimited"
		}
		return le.Limit
	}
	return "other: " + err.Error()
}

type limiterCase struct {
	name     string
	rpm, tpm int64
	steps    []step
}

func runCases(t *testing.T, tests []limiterCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run(t, New(tt.rpm, tt.tpm), tt.steps)
		})
	}
}

const (
	R = LimitRequests
	T = LimitTokens
	A = LimitRetryAfter
)

func TestReserve(t *testing.T) {
	runCases(t, []limiterCase{
		{name: "tokens short charges no request", rpm: 10, tpm: 100, steps: []step{
			grant(0, 80, 1),
			refuse(0, 30, T, 6*time.Second), // 10 missing at 100/min
			snapshot(0, Snapshot{RequestsLimit: 10, TokensLimit: 100, RemainingRequests: 9, RemainingTokens: 20}),
		}},
		{name: "requests short charges no tokens", rpm: 1, tpm: 1000, steps: []step{
			grant(0, 10, 1),
			refuse(0, 10, R, time.Minute),
			snapshot(0, Snapshot{RequestsLimit: 1, TokensLimit: 1000, RemainingRequests: 0, RemainingTokens: 990}),
		}},
		{name: "wait is the longer of the two", rpm: 60, tpm: 600, steps: []step{
			grant(0, 10, 60),
			refuse(0, 50, T, 5*time.Second), // requests need 1s, tokens 50 at 10/s
			refuse(0, 0, R, time.Second),
		}},
		{name: "granted at exactly the wait", rpm: 60, tpm: 0, steps: []step{
			grant(0, 0, 60),
			refuse(0, 0, R, time.Second),
			refuse(500*time.Millisecond, 0, R, 500*time.Millisecond),
			grant(time.Second, 0, 1),
			refuse(time.Second, 0, R, time.Second),
		}},
		{name: "refill over time, capped at capacity", rpm: 60, tpm: 6000, steps: []step{
			grant(0, 100, 60),
			snapshot(30*time.Second, Snapshot{RequestsLimit: 60, TokensLimit: 6000, RemainingRequests: 30, RemainingTokens: 3000}),
			snapshot(10*time.Minute, Snapshot{RequestsLimit: 60, TokensLimit: 6000, RemainingRequests: 60, RemainingTokens: 6000}),
			grant(10*time.Minute, 6000, 1),
		}},
		{name: "too large for the configured tpm", rpm: 10, tpm: 1000, steps: []step{
			refuse(0, 1001, "too_large", 0),
			grant(0, 1000, 1),
			refuse(0, 1001, "too_large", 0), // too large wins over waiting
			snapshot(0, Snapshot{RequestsLimit: 10, TokensLimit: 1000, RemainingRequests: 9, RemainingTokens: 0}),
		}},
		{name: "too large for an announced tpm", tpm: 0, steps: []step{
			grant(0, 1_000_000, 1),
			observe(0, toks(500, -1, 0)),
			refuse(0, 501, "too_large", 0),
		}},
		{name: "too large for the smaller of configured and announced", tpm: 1000, steps: []step{
			observe(0, toks(500, -1, 0)),
			refuse(0, 501, "too_large", 0),
			grant(0, 500, 1),
		}},
		{name: "unknown limits are unlimited", steps: []step{
			grant(0, 1_000_000_000, 1000),
			snapshot(0, Snapshot{RemainingRequests: -1, RemainingTokens: -1}),
		}},
		{name: "negative tokens count as zero", rpm: 10, tpm: 100, steps: []step{
			grant(0, -50, 1),
			snapshot(0, Snapshot{RequestsLimit: 10, TokensLimit: 100, RemainingRequests: 9, RemainingTokens: 100}),
		}},
		{name: "stale now cannot refill twice", rpm: 60, steps: []step{
			grant(0, 0, 60),
			grant(2*time.Second, 0, 1),               // one of the two refilled
			grant(time.Second, 0, 1),                 // stale: taken as 2s, the other one
			refuse(2*time.Second, 0, R, time.Second), // without the clamp this one would pass
			refuse(time.Second, 0, R, time.Second),   // stale again: still 2s
			grant(3*time.Second, 0, 1),
		}},
	})
}

func TestCancelAndReconcile(t *testing.T) {
	s := func(requests, tokens int64) Snapshot {
		return Snapshot{RequestsLimit: 10, TokensLimit: 1000, RemainingRequests: requests, RemainingTokens: tokens}
	}
	runCases(t, []limiterCase{
		{name: "cancel restores request and tokens", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 400, 1),
			snapshot(0, s(9, 600)),
			cancel(0, 0),
			snapshot(0, s(10, 1000)),
		}},
		{name: "cancel twice restores once", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 400, 2),
			cancel(0, 0), cancel(0, 0),
			snapshot(0, s(9, 600)),
		}},
		{name: "cancel after reconcile is a no-op", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 400, 1),
			reconcile(0, 0, 100),
			cancel(0, 0),
			snapshot(0, s(9, 900)),
		}},
		{name: "reconcile refunds an overestimate", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 500, 1),
			reconcile(0, 0, 200),
			snapshot(0, s(9, 800)),
		}},
		{name: "reconcile charges an underestimate", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 100, 1),
			reconcile(0, 0, 400),
			snapshot(0, s(9, 600)),
		}},
		{name: "reconcile once", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 500, 1),
			reconcile(0, 0, 200),
			reconcile(0, 0, 900),
			cancel(0, 0),
			snapshot(0, s(9, 800)),
		}},
		{name: "unreported usage keeps the estimate", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 500, 1),
			reconcile(0, 0, 0),
			reconcile(0, 0, 100), // already done
			snapshot(0, s(9, 500)),
		}},
		{name: "extra charge goes into debt that later reservations wait out", rpm: 10, tpm: 1200, steps: []step{
			grant(0, 1200, 1),
			reconcile(0, 0, 1800),
			snapshot(0, Snapshot{RequestsLimit: 10, TokensLimit: 1200, RemainingRequests: 9, RemainingTokens: 0}),
			refuse(0, 0, T, 30*time.Second), // 600 in debt at 20/s
			refuse(0, 100, T, 35*time.Second),
			grant(35*time.Second, 100, 1),
		}},
		{name: "debt floors at minus the capacity", rpm: 10, tpm: 1200, steps: []step{
			grant(0, 1200, 1),
			reconcile(0, 0, 1_000_000),
			refuse(0, 0, T, time.Minute),
		}},
		{name: "refund in debt", rpm: 10, tpm: 1200, steps: []step{
			grant(0, 600, 2),
			reconcile(0, 0, 1800), // 1200 more: -1200, the floor
			cancel(0, 1),          // 600 back: -600
			refuse(0, 0, T, 30*time.Second),
		}},
		{name: "refund capped at capacity", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 600, 1),
			snapshot(30*time.Second, s(10, 900)), // requests refilled too
			cancel(30*time.Second, 0),
			snapshot(30*time.Second, s(10, 1000)),
		}},
		{name: "nil reservation is a no-op", rpm: 10, tpm: 1000, steps: nil},
	})
	var r *Reservation
	r.Cancel(t0)
	r.Reconcile(t0, 10)
}

// TestAdjust checks a bucket's take and give back at every level, debt
// included.
func TestAdjust(t *testing.T) {
	tests := []struct {
		name  string
		level int // start, in a bucket of 100
		delta int64
		want  float64
	}{
		{"take", 100, 30, 70},
		{"take into debt", 20, 50, -30},
		{"debt floor", 20, 500, -100},
		{"refund", 40, -30, 70},
		{"refund capped", 90, -30, 100},
		{"refund in debt", -80, -30, -50},
		{"refund out of debt", -80, -130, 50},
		{"refund from the floor to full", -100, -1000, 100},
		{"zero", 50, 0, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bucket
			b.set(t0, 100, 1, float64(tt.level))
			if got := b.levelAt(t0); got != float64(tt.level) {
				t.Fatalf("setup: got level %v, want %d", got, tt.level)
			}
			b.adjust(t0, tt.delta)
			if got := b.levelAt(t0); got != tt.want {
				t.Errorf("got level %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	runCases(t, []limiterCase{
		{name: "remaining sets the level, limit the capacity", steps: []step{
			observe(0, reqs(100, 5, 0)),
			snapshot(0, Snapshot{RequestsLimit: 100, RemainingRequests: 5, RemainingTokens: -1}),
			grant(0, 0, 5),
			refuse(0, 0, R, 600*time.Millisecond), // 100 per minute
		}},
		{name: "reset sets the refill", steps: []step{
			observe(0, reqs(100, 40, 6*time.Second)), // 60 back in 6s: 10/s
			grant(0, 0, 40),
			refuse(0, 0, R, 100*time.Millisecond),
			snapshot(time.Second, Snapshot{RequestsLimit: 100, RemainingRequests: 10, RemainingTokens: -1}),
			snapshot(6*time.Second, Snapshot{RequestsLimit: 100, RemainingRequests: 60, RemainingTokens: -1}),
		}},
		{name: "per-day limit refills at its own pace", steps: []step{
			observe(0, reqs(14400, 14399, 6*time.Second)), // Groq RPD
			grant(0, 0, 14399),
			refuse(0, 0, R, 6*time.Second),
		}},
		{name: "remaining 0 with reset blocks until exactly then", steps: []step{
			observe(0, reqs(60, 0, time.Second)),
			snapshot(0, Snapshot{RequestsLimit: 60, RemainingRequests: 0, RemainingTokens: -1, BlockedFor: time.Second}),
			refuse(0, 0, R, time.Second),
			refuse(999*time.Millisecond, 0, R, time.Millisecond),
			grant(time.Second, 0, 60), // full again, as announced
			snapshot(time.Second, Snapshot{RequestsLimit: 60, RemainingRequests: 0, RemainingTokens: -1}),
		}},
		{name: "remaining 0 with reset and no limit blocks until then, then nothing", steps: []step{
			observe(0, reqs(-1, 0, time.Second)),
			refuse(999*time.Millisecond, 0, R, time.Millisecond),
			grant(time.Second, 0, 1000),
		}},
		{name: "tokens remaining 0 with reset", tpm: 1000, steps: []step{
			observe(0, toks(-1, 0, 2*time.Second)),
			refuse(time.Second, 1, T, time.Second),
			grant(2*time.Second, 1, 1),
		}},
		{name: "remaining 0 without reset or capacity blocks a minute", steps: []step{
			observe(0, reqs(-1, 0, 0)),
			refuse(0, 0, R, time.Minute),
			grant(time.Minute, 0, 1),
		}},
		{name: "remaining 0 without reset refills at limit per minute", steps: []step{
			observe(0, reqs(120, 0, 0)),
			snapshot(0, Snapshot{RequestsLimit: 120, RemainingRequests: 0, RemainingTokens: -1}),
			refuse(0, 0, R, 500*time.Millisecond),
			grant(500*time.Millisecond, 0, 1),
		}},
		{name: "a later remaining does not lift a block", steps: []step{
			observe(0, reqs(60, 0, 10*time.Second)),
			observe(time.Second, reqs(60, 59, time.Second)),
			refuse(time.Second, 0, R, 9*time.Second),
			grant(10*time.Second, 0, 1),
		}},
		{name: "a shorter reset does not shorten a block", steps: []step{
			observe(0, reqs(60, 0, 10*time.Second)),
			observe(time.Second, reqs(60, 0, time.Second)),
			refuse(5*time.Second, 0, R, 5*time.Second),
		}},
		{name: "configured ceiling wins over a bigger announced limit", rpm: 10, tpm: 1000, steps: []step{
			observe(0, outcome.RateLimit{LimitRequests: 5000, RemainingRequests: 5000, LimitTokens: 800000, RemainingTokens: 800000}),
			snapshot(0, Snapshot{RequestsLimit: 10, TokensLimit: 1000, RemainingRequests: 10, RemainingTokens: 1000}),
			grant(0, 0, 10),
			refuse(0, 0, R, 6*time.Second),
			refuse(0, 1001, "too_large", 0),
		}},
		{name: "a big remaining does not refill the ceiling", rpm: 10, steps: []step{
			grant(0, 0, 10),
			observe(0, reqs(5000, 4990, 24*time.Millisecond)),
			refuse(0, 0, R, 6*time.Second),
		}},
		{name: "a smaller announced limit wins over the configured one", rpm: 1000, steps: []step{
			observe(0, reqs(10, 10, 0)),
			snapshot(0, Snapshot{RequestsLimit: 10, RemainingRequests: 10, RemainingTokens: -1}),
			grant(0, 0, 10),
			refuse(0, 0, R, 6*time.Second),
		}},
		{name: "remaining without limit uses the configured capacity", tpm: 1000, steps: []step{
			observe(0, toks(-1, 300, 0)), // Azure: remaining only
			snapshot(0, Snapshot{TokensLimit: 1000, RemainingRequests: -1, RemainingTokens: 300}),
			refuse(0, 301, T, 60*time.Millisecond),
			grant(0, 300, 1),
		}},
		{name: "remaining without any capacity changes nothing", steps: []step{
			observe(0, toks(-1, 300, 0)),
			grant(0, 5000, 1),
			snapshot(0, Snapshot{RemainingRequests: -1, RemainingTokens: -1}),
		}},
		{name: "rpm 0 is unlimited until a limit is announced", steps: []step{
			grant(0, 0, 100),
			observe(0, reqs(2, -1, 0)),
			grant(0, 0, 2), // no level announced: starts full
			refuse(0, 0, R, 30*time.Second),
		}},
		{name: "a new limit keeps the level", steps: []step{
			observe(0, reqs(100, 50, 0)),
			observe(0, reqs(200, -1, 0)),
			snapshot(0, Snapshot{RequestsLimit: 200, RemainingRequests: 50, RemainingTokens: -1}),
			observe(0, reqs(20, -1, 0)),
			snapshot(0, Snapshot{RequestsLimit: 20, RemainingRequests: 20, RemainingTokens: -1}),
		}},
		{name: "unknown values change nothing", rpm: 10, tpm: 1000, steps: []step{
			grant(0, 100, 1),
			observe(0, outcome.UnknownRateLimit),
			observe(0, outcome.RateLimit{LimitRequests: -1, RemainingRequests: -1, LimitTokens: -1, RemainingTokens: -1, RetryAfter: -time.Second}),
			observe(0, toks(-1, -1, 5*time.Second)), // a reset alone
			observe(0, reqs(0, -1, 0)),              // limit 0 is unknown
			snapshot(0, Snapshot{RequestsLimit: 10, TokensLimit: 1000, RemainingRequests: 9, RemainingTokens: 900}),
			grant(0, 100, 1),
		}},
	})
}

func TestRetryAfter(t *testing.T) {
	runCases(t, []limiterCase{
		{name: "blocks everything until then", rpm: 100, steps: []step{
			observe(0, retryAfter(10*time.Second)),
			refuse(0, 0, A, 10*time.Second),
			snapshot(0, Snapshot{RequestsLimit: 100, RemainingRequests: 100, RemainingTokens: -1, BlockedFor: 10 * time.Second}),
			refuse(9*time.Second, 0, A, time.Second),
			grant(10*time.Second, 0, 1),
		}},
		{name: "a shorter one never shortens", steps: []step{
			observe(0, retryAfter(10*time.Second)),
			observe(5*time.Second, retryAfter(2*time.Second)),
			refuse(8*time.Second, 0, A, 2*time.Second),
			grant(10*time.Second, 0, 1),
		}},
		{name: "a longer one extends", steps: []step{
			observe(0, retryAfter(10*time.Second)),
			observe(5*time.Second, retryAfter(20*time.Second)),
			refuse(10*time.Second, 0, A, 15*time.Second),
			grant(25*time.Second, 0, 1),
		}},
		{name: "the longest wait names the limit", rpm: 60, steps: []step{
			observe(0, reqs(60, 0, 30*time.Second)),
			observe(0, retryAfter(10*time.Second)),
			refuse(0, 0, R, 30*time.Second),
			snapshot(0, Snapshot{RequestsLimit: 60, RemainingRequests: 0, RemainingTokens: -1, BlockedFor: 30 * time.Second}),
		}},
	})
}

// An announcement that sets the provider's level replaces our bookkeeping
// of the reservations taken before it; the ceiling keeps tracking our usage.
func TestGenerations(t *testing.T) {
	levels := func(l *Limiter) (ceil, prov float64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.tok.ceil.levelAt(t0), l.tok.prov.levelAt(t0)
	}
	tests := []struct {
		name               string
		announce           outcome.RateLimit // between Reserve(1000) and the end
		end                func(*Reservation)
		wantCeil, wantProv float64
	}{
		{"reconcile, no announcement", outcome.UnknownRateLimit,
			func(r *Reservation) { r.Reconcile(t0, 200) }, 9800, 1800},
		{"reconcile after a level announcement", toks(2000, 1500, 0),
			func(r *Reservation) { r.Reconcile(t0, 200) }, 9800, 1500},
		{"reconcile after a limit-only announcement", toks(3000, -1, 0),
			func(r *Reservation) { r.Reconcile(t0, 200) }, 9800, 1800},
		{"cancel, no announcement", outcome.UnknownRateLimit,
			func(r *Reservation) { r.Cancel(t0) }, 10000, 2000},
		{"cancel after a level announcement", toks(2000, 1500, 0),
			func(r *Reservation) { r.Cancel(t0) }, 10000, 1500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(0, 10000)
			l.Observe(t0, toks(2000, 2000, 0))
			r, err := l.Reserve(t0, 1000)
			if err != nil {
				t.Fatalf("Reserve: got %v, want nil", err)
			}
			l.Observe(t0, tt.announce)
			tt.end(&r)
			if ceil, prov := levels(l); ceil != tt.wantCeil || prov != tt.wantProv {
				t.Errorf("got ceiling %v, provider %v; want %v, %v", ceil, prov, tt.wantCeil, tt.wantProv)
			}
		})
	}
}

func TestLimitedError(t *testing.T) {
	err := error(&LimitedError{Wait: 1500 * time.Millisecond, Limit: LimitTokens})
	if !errors.Is(err, ErrLimited) {
		t.Errorf("errors.Is(err, ErrLimited) = false, want true")
	}
	if got, want := err.Error(), "rate limited by tokens: could succeed in 1.5s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = New(0, 10).Reserve(t0, 11)
	if errors.Is(err, ErrLimited) {
		t.Errorf("ErrTooLarge matches ErrLimited, want not: the caller must not wait for it")
	}
}

// Many goroutines at one instant: exactly as many reservations fit as the
// scarcer budget allows, and none charges one budget without the other.
func TestConcurrentAllOrNothing(t *testing.T) {
	const goroutines = 100
	l := New(50, 1000)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			if _, err := l.Reserve(t0, 30); err == nil {
				granted.Add(1)
			} else if !errors.Is(err, ErrLimited) {
				t.Errorf("Reserve: got %v, want nil or ErrLimited", err)
			}
		})
	}
	wg.Wait()
	if got, want := granted.Load(), int64(1000/30); got != want {
		t.Errorf("granted %d, want %d", got, want)
	}
	want := Snapshot{RequestsLimit: 50, TokensLimit: 1000, RemainingRequests: 50 - 33, RemainingTokens: 1000 - 33*30}
	if got := l.Snapshot(t0); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Everything at once, for the race detector; the clock moves forward.
func TestConcurrentMixed(t *testing.T) {
	l := New(600, 60000)
	var tick atomic.Int64
	now := func() time.Time { return t0.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				switch (g + i) % 5 {
				case 0:
					l.Observe(now(), outcome.RateLimit{LimitRequests: 1000, RemainingRequests: int64(i), ResetRequests: time.Second,
						LimitTokens: -1, RemainingTokens: -1})
				case 1:
					if s := l.Snapshot(now()); s.RemainingRequests < 0 || s.RemainingRequests > 600 {
						t.Errorf("got remaining requests %d, want within [0, 600]", s.RemainingRequests)
					}
				default:
					r, err := l.Reserve(now(), 100)
					if err != nil {
						continue
					}
					if i%2 == 0 {
						r.Reconcile(now(), int64(i))
					} else {
						r.Cancel(now())
					}
					r.Cancel(now()) // no-op
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkReserveReconcile(b *testing.B) {
	for _, bc := range []struct {
		name string
		l    func() *Limiter
	}{
		{"configured", func() *Limiter { return New(1e9, 1e12) }},
		{"configured+announced", func() *Limiter {
			l := New(1e9, 1e12)
			l.Observe(time.Now(), outcome.RateLimit{LimitRequests: 1e9, RemainingRequests: 1e9, LimitTokens: 1e12, RemainingTokens: 1e12})
			return l
		}},
		{"unlimited", func() *Limiter { return New(0, 0) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := bc.l()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					now := time.Now()
					r, err := l.Reserve(now, 1200)
					if err != nil {
						b.Fatal(err)
					}
					r.Reconcile(now, 700)
				}
			})
		})
	}
}

func BenchmarkReserveRefused(b *testing.B) {
	l := New(1, 1000)
	l.Observe(time.Now(), retryAfter(time.Hour))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Reserve(time.Now(), 10); err == nil {
				b.Fatal("granted, want refused")
			}
		}
	})
}

func BenchmarkObserve(b *testing.B) {
	l := New(0, 0)
	rl := outcome.RateLimit{LimitRequests: 5000, RemainingRequests: 4998, ResetRequests: 24 * time.Millisecond,
		LimitTokens: 800000, RemainingTokens: 791200, ResetTokens: 594 * time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		l.Observe(time.Now(), rl)
	}
}

// TestStaleAnswerDoesNotRaiseTheLevel: the answer to an earlier request,
// arriving after the answers to later ones, carries an older count and
// must not raise the level they set; after the announced reset, or by
// refill, the count may rise again.
func TestStaleAnswerDoesNotRaiseTheLevel(t *testing.T) {
	l := New(0, 0)
	rl := func(remaining int64) outcome.RateLimit {
		r := outcome.UnknownRateLimit
		r.LimitRequests, r.RemainingRequests, r.ResetRequests = 10, remaining, 2*time.Second
		return r
	}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, step := range []struct {
		ms        int
		remaining int64
		want      int64
	}{
		{0, 3, 3},     // answers to a burst, newest count 3…
		{10, 2, 2},    // …then 2, 1 (counts fall: news)
		{20, 1, 1},    //
		{30, 4, 1},    // an older answer released last: stale, ignored
		{2100, 9, 9},  // after the announced reset: news
		{2110, 10, 9}, // 10 would need 1 refilled in 10ms at 0.5/s: stale
	} {
		l.Observe(at(step.ms), rl(step.remaining))
		if got := l.Snapshot(at(step.ms)).RemainingRequests; got != step.want {
			t.Errorf("at +%dms after remaining %d: level %d, want %d", step.ms, step.remaining, got, step.want)
		}
	}
}

// TestReserveAllocations: a Reservation is a value its holder keeps
// (upstream's Permit), so reserving and ending one allocates nothing.
func TestReserveAllocations(t *testing.T) {
	l := New(1e9, 1e12)
	now := time.Now()
	if got := testing.AllocsPerRun(100, func() {
		r, err := l.Reserve(now, 1200)
		if err != nil {
			t.Fatal(err)
		}
		r.Reconcile(now, 700)
	}); got != 0 {
		t.Errorf("got %v allocations per Reserve and Reconcile, want 0", got)
	}
}
