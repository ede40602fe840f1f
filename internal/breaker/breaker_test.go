package breaker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// op is what one step of a step table does.
type op int

const (
	opReq   op = iota // n times: for each of kinds, Allow (must succeed) then Done
	opAllow           // Allow, keep the ticket as ticket; refused says whether it must be refused
	opDone            // Done(tickets[ticket], kinds[0], retryAfter); an unknown ticket is the zero Ticket
	opProbe           // Probe returning probeErr; ran says whether it must run
	opLook            // nothing: only advance time and check
)

type step struct {
	advance time.Duration // slept (fake time) before the op

	op         op
	n          int
	kinds      []outcome.Kind
	retryAfter time.Duration
	ticket     string

	refused bool          // opAllow: want an *OpenError
	retryIn time.Duration // opAllow, when refused: want this RetryIn

	probeErr      error
	probeCanceled bool          // opProbe: ctx canceled before the probe returns
	probeTimeout  time.Duration // opProbe: probe blocks until this ctx deadline
	ran           bool          // opProbe: want ran

	// checked after every step through Snapshot(time.Now())
	state  State
	left   time.Duration
	trips  int
	counts *Counts       // nil: not checked
	last   *outcome.Kind // nil: not checked
}

func req(n int, kinds ...outcome.Kind) step { return step{op: opReq, n: n, kinds: kinds} }
func allow(ticket string) step              { return step{op: opAllow, ticket: ticket} }
func done(ticket string, k outcome.Kind) step {
	return step{op: opDone, ticket: ticket, kinds: []outcome.Kind{k}}
}
func probe(err error) step                { return step{op: opProbe, probeErr: err, ran: true} }
func wait(d time.Duration) step           { return step{op: opLook, advance: d} }
func (s step) after(d time.Duration) step { s.advance = d; return s }
func (s step) retry(d time.Duration) step { s.retryAfter = d; return s }
func (s step) notRun() step               { s.ran = false; return s }
func (s step) refusedIn(d time.Duration) step {
	s.refused, s.retryIn = true, d
	return s
}

// want sets the state expected after the step.
func (s step) want(st State, left time.Duration, trips int) step {
	s.state, s.left, s.trips = st, left, trips
	return s
}
func (s step) wantCounts(ok, failed, run uint32) step {
	s.counts = &Counts{Successes: ok, Failures: failed, ConsecutiveFailures: run}
	return s
}
func (s step) wantLast(k outcome.Kind) step { s.last = &k; return s }

func kindErr(k outcome.Kind, retryAfter time.Duration) error {
	return &outcome.Error{Kind: k, Status: 500, RetryAfter: retryAfter}
}

const sec = time.Second

var (
	se      = outcome.ServerError
	errBoom = kindErr(outcome.ServerError, 0)
)

func TestSteps(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name  string
		cfg   func(*Config)
		steps []step
	}{
		{name: "successes keep it closed", steps: []step{
			req(30, outcome.OK).want(Closed, 0, 0).wantCounts(30, 0, 0),
		}},
		{name: "consecutive failures trip", steps: []step{
			req(4, se).want(Closed, 0, 0).wantCounts(0, 4, 4),
			req(1, se).want(Open, 30*sec, 1).wantLast(se),
		}},
		{name: "a success breaks the run", steps: []step{
			req(4, se).want(Closed, 0, 0),
			req(1, outcome.OK).want(Closed, 0, 0).wantCounts(1, 4, 0),
			req(4, se).want(Closed, 0, 0),
			req(1, se).want(Open, 30*sec, 1),
		}},
		{name: "ratio trips once min_requests are seen", steps: []step{
			req(9, se, outcome.OK).want(Closed, 0, 0).wantCounts(9, 9, 0),
			req(1, outcome.OK).want(Closed, 0, 0),
			req(1, se).want(Open, 30*sec, 1), // 10 of 20
		}},
		{name: "ratio below the threshold stays closed", steps: []step{
			req(15, se, outcome.OK, outcome.OK).want(Closed, 0, 0).wantCounts(30, 15, 0),
		}},
		{name: "ratio waits for min_requests", cfg: func(c *Config) { c.FailureThreshold.Consecutive = 0 }, steps: []step{
			req(19, se).want(Closed, 0, 0).wantCounts(0, 19, 19),
			req(1, se).want(Open, 30*sec, 1),
		}},
		{name: "the window forgets a run of failures", steps: []step{
			req(4, se).want(Closed, 0, 0),
			req(1, se).after(61*sec).want(Closed, 0, 0).wantCounts(0, 1, 1),
			req(3, se).want(Closed, 0, 0),
			req(1, se).want(Open, 30*sec, 1),
		}},
		{name: "the window forgets old outcomes for the ratio", cfg: func(c *Config) { c.FailureThreshold.Consecutive = 0 }, steps: []step{
			req(19, se).want(Closed, 0, 0),
			req(1, se).after(61*sec).want(Closed, 0, 0).wantCounts(0, 1, 1),
		}},
		{name: "the failure that trips picks the cooldown", steps: []step{
			req(4, se).want(Closed, 0, 0),
			req(1, outcome.Timeout).want(Open, 60*sec, 1).wantLast(outcome.Timeout),
		}},
		{name: "rate limited without a wait", steps: []step{
			req(5, outcome.RateLimited).want(Open, 120*sec, 1),
		}},
		{name: "rate limited with the provider's wait", steps: []step{
			req(5, outcome.RateLimited).retry(7*sec).want(Open, 7*sec, 1),
		}},
		{name: "the provider's wait is capped at max", steps: []step{
			req(5, outcome.RateLimited).retry(time.Hour).want(Open, 600*sec, 1),
		}},
		{name: "overloaded, network and unknown use the failure cooldown", steps: []step{
			req(2, outcome.Overloaded, outcome.Network).want(Closed, 0, 0),
			req(1, outcome.Unknown).want(Open, 30*sec, 1),
		}},
		{name: "auth trips at once", steps: []step{
			req(10, outcome.OK).want(Closed, 0, 0),
			req(1, outcome.Auth).want(Open, 30*sec, 1).wantLast(outcome.Auth),
		}},
		{name: "quota trips at once", steps: []step{
			req(1, outcome.Quota).want(Open, 30*sec, 1).wantLast(outcome.Quota),
		}},
		{name: "canceled and client_error are neither success nor failure", steps: []step{
			req(4, se).want(Closed, 0, 0),
			req(10, outcome.Canceled, outcome.ClientError).want(Closed, 0, 0).wantCounts(0, 4, 4).wantLast(se),
			req(1, se).want(Open, 30*sec, 1),
		}},
		{name: "client errors alone never trip", steps: []step{
			req(100, outcome.ClientError).want(Closed, 0, 0).wantCounts(0, 0, 0).wantLast(outcome.OK),
		}},
		{name: "open refuses with the time to the next probe", steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			allow("a").after(10*sec).refusedIn(20*sec).want(Open, 20*sec, 1),
			allow("b").after(19*sec+ms(999)).refusedIn(ms(1)).want(Open, ms(1), 1),
		}},
		{name: "half-open refuses real requests", steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			wait(30*sec).want(HalfOpen, 0, 1),
			allow("a").refusedIn(0).want(HalfOpen, 0, 1),
			allow("b").after(time.Hour).refusedIn(0).want(HalfOpen, 0, 1),
		}},
		{name: "no probe while cooling down", steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			probe(nil).after(29*sec).notRun().want(Open, sec, 1),
		}},
		{name: "probe success closes and resets the growth", steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			probe(errBoom).after(30*sec).want(Open, 45*sec, 2),
			probe(nil).after(45*sec).want(Closed, 0, 0).wantCounts(0, 0, 0),
			allow("a").want(Closed, 0, 0),
			req(5, se).want(Open, 30*sec, 1),
		}},
		{name: "growth up to max", cfg: func(c *Config) { c.Cooldown.Max, c.Cooldown.RateLimit = 100*sec, 100*sec }, steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			probe(errBoom).after(30*sec).want(Open, 45*sec, 2),
			probe(errBoom).after(45*sec).want(Open, ms(67500), 3),
			probe(errBoom).after(ms(67500)).want(Open, 100*sec, 4),
			probe(errBoom).after(100*sec).want(Open, 100*sec, 5),
			probe(nil).after(100*sec).want(Closed, 0, 0),
			req(5, se).want(Open, 30*sec, 1),
		}},
		{name: "the failed probe's kind picks the base", steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			probe(kindErr(outcome.Timeout, 0)).after(30*sec).want(Open, 90*sec, 2).wantLast(outcome.Timeout),
			probe(kindErr(outcome.RateLimited, 20*sec)).after(90*sec).want(Open, 45*sec, 3),
			probe(kindErr(outcome.RateLimited, 0)).after(45*sec).want(Open, 405*sec, 4),
			probe(errors.New("plain")).after(405*sec).want(Open, ms(151875), 5).wantLast(outcome.Unknown),
		}},
		{name: "a probe's client error is a failure", steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			probe(kindErr(outcome.ClientError, 0)).after(30*sec).want(Open, 45*sec, 2).wantLast(outcome.ClientError),
		}},
		{name: "a probe past its deadline is a timeout", steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			step{op: opProbe, ran: true, probeTimeout: 5 * sec}.after(30*sec).want(Open, 90*sec, 2).wantLast(outcome.Timeout),
		}},
		{name: "a canceled probe says nothing", steps: []step{
			req(5, se).want(Open, 30*sec, 1),
			step{op: opProbe, ran: true, probeCanceled: true}.after(30*sec).want(HalfOpen, 0, 1).wantLast(se),
			probe(nil).want(Closed, 0, 0),
		}},
		{name: "a ticket from before a trip cannot close", steps: []step{
			allow("old").want(Closed, 0, 0),
			req(5, se).want(Open, 30*sec, 1),
			wait(30*sec).want(HalfOpen, 0, 1),
			done("old", outcome.OK).want(HalfOpen, 0, 1),
			probe(errBoom).want(Open, 45*sec, 2), // the probe slot was not taken either
		}},
		{name: "a ticket from before a trip cannot reopen or regrow", steps: []step{
			allow("a").want(Closed, 0, 0),
			allow("b").want(Closed, 0, 0),
			req(5, se).want(Open, 30*sec, 1),
			done("a", outcome.Timeout).after(10*sec).want(Open, 20*sec, 1).wantLast(se),
			done("b", outcome.Auth).want(Open, 20*sec, 1).wantLast(se),
		}},
		{name: "a ticket from before a close does not count after it", steps: []step{
			allow("old").want(Closed, 0, 0),
			allow("older").want(Closed, 0, 0),
			req(5, se).want(Open, 30*sec, 1),
			probe(nil).after(30*sec).want(Closed, 0, 0),
			req(4, se).want(Closed, 0, 0),
			done("old", se).want(Closed, 0, 0).wantCounts(0, 4, 4),
			done("older", outcome.Quota).want(Closed, 0, 0).wantCounts(0, 4, 4),
			req(1, se).want(Open, 30*sec, 1),
		}},
		{name: "the zero ticket is ignored", steps: []step{
			done("never issued", outcome.Auth).want(Closed, 0, 0).wantCounts(0, 0, 0),
		}},
		{name: "a closed breaker's ticket reports late but within the window", steps: []step{
			allow("slow").want(Closed, 0, 0),
			req(4, se).want(Closed, 0, 0),
			done("slow", se).after(40*sec).want(Open, 30*sec, 1),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := DefaultConfig()
				if tc.cfg != nil {
					tc.cfg(&cfg)
				}
				b := New("p", cfg, Options{})
				tickets := map[string]Ticket{}
				for i, s := range tc.steps {
					runStep(t, b, tickets, i, s)
				}
			})
		})
	}
}

func runStep(t *testing.T, b *Breaker, tickets map[string]Ticket, i int, s step) {
	t.Helper()
	time.Sleep(s.advance)
	now := time.Now()
	switch s.op {
	case opReq:
		for range s.n {
			for _, k := range s.kinds {
				tk, err := b.Allow(now)
				if err != nil {
					t.Fatalf("step %d: Allow() = %v, want admitted", i, err)
				}
				b.Done(now, tk, k, s.retryAfter)
			}
		}
	case opAllow:
		tk, err := b.Allow(now)
		var oe *OpenError
		switch {
		case !s.refused && err != nil:
			t.Fatalf("step %d: Allow() = %v, want admitted", i, err)
		case s.refused && !errors.As(err, &oe):
			t.Fatalf("step %d: Allow() = %v, want an *OpenError", i, err)
		case s.refused && oe.RetryIn != s.retryIn:
			t.Errorf("step %d: RetryIn = %s, want %s", i, oe.RetryIn, s.retryIn)
		}
		tickets[s.ticket] = tk
	case opDone:
		b.Done(now, tickets[s.ticket], s.kinds[0], s.retryAfter)
	case opProbe:
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		fn := func(context.Context) error { return s.probeErr }
		switch {
		case s.probeCanceled:
			fn = func(ctx context.Context) error { cancel(); return ctx.Err() }
		case s.probeTimeout > 0:
			ctx, cancel = context.WithTimeout(ctx, s.probeTimeout)
			defer cancel()
			fn = func(ctx context.Context) error { <-ctx.Done(); return fmt.Errorf("probing: %w", ctx.Err()) }
		}
		ran, err := b.Probe(ctx, fn)
		if ran != s.ran {
			t.Errorf("step %d: Probe() ran = %v, want %v", i, ran, s.ran)
		}
		if ran && s.probeErr != nil && !errors.Is(err, s.probeErr) {
			t.Errorf("step %d: Probe() err = %v, want %v", i, err, s.probeErr)
		}
	}
	snap := b.Snapshot(time.Now())
	if snap.State != s.state {
		t.Fatalf("step %d: state = %s, want %s", i, snap.State, s.state)
	}
	if snap.CooldownLeft != s.left {
		t.Errorf("step %d: cooldown left = %s, want %s", i, snap.CooldownLeft, s.left)
	}
	if snap.ConsecutiveTrips != s.trips {
		t.Errorf("step %d: consecutive trips = %d, want %d", i, snap.ConsecutiveTrips, s.trips)
	}
	if s.counts != nil && snap.Counts != *s.counts {
		t.Errorf("step %d: counts = %+v, want %+v", i, snap.Counts, *s.counts)
	}
	if s.last != nil && snap.LastKind != *s.last {
		t.Errorf("step %d: last kind = %s, want %s", i, snap.LastKind, *s.last)
	}
}

// tripNow trips b with consecutive server errors (DefaultConfig).
func tripNow(t testing.TB, b *Breaker) {
	t.Helper()
	for range 5 {
		tk, err := b.Allow(time.Now())
		if err != nil {
			t.Fatalf("Allow() = %v, want admitted", err)
		}
		b.Done(time.Now(), tk, outcome.ServerError, 0)
	}
	if s := b.Snapshot(time.Now()).State; s != Open {
		t.Fatalf("state after 5 failures = %s, want open", s)
	}
}

func TestOnStateChangeAndGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []string
		b := New("openai", DefaultConfig(), Options{OnStateChange: func(name string, from, to State) {
			got = append(got, fmt.Sprintf("%s:%s->%s", name, from, to))
		}})
		gens := []uint64{b.Snapshot(time.Now()).Generation}
		tripNow(t, b)
		gens = append(gens, b.Snapshot(time.Now()).Generation)
		time.Sleep(30 * time.Second)
		b.Snapshot(time.Now()) // looking is what notices half-open
		b.Probe(context.Background(), func(context.Context) error { return errBoom })
		time.Sleep(45 * time.Second)
		b.Probe(context.Background(), func(context.Context) error { return nil })
		gens = append(gens, b.Snapshot(time.Now()).Generation)

		want := []string{
			"openai:closed->open", "openai:open->half_open", "openai:half_open->open",
			"openai:open->half_open", "openai:half_open->closed",
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("transitions = %q, want %q", got, want)
		}
		if gens[0] == gens[1] || gens[1] == gens[2] || gens[0] == gens[2] {
			t.Errorf("generations before trip, after trip, after close = %v, want all different", gens)
		}
	})
}

func TestOpenError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("azure-eu", DefaultConfig(), Options{})
		for range 5 {
			tk, _ := b.Allow(time.Now())
			b.Done(time.Now(), tk, outcome.Timeout, 0)
		}
		time.Sleep(15 * time.Second)
		_, err := b.Allow(time.Now())
		if !errors.Is(err, ErrOpen) {
			t.Fatalf("errors.Is(%v, ErrOpen) = false, want true", err)
		}
		var oe *OpenError
		if !errors.As(err, &oe) {
			t.Fatalf("errors.As(%v, *OpenError) = false, want true", err)
		}
		want := OpenError{Name: "azure-eu", State: Open, Kind: outcome.Timeout, RetryIn: 45 * time.Second}
		if *oe != want {
			t.Errorf("OpenError = %+v, want %+v", *oe, want)
		}
		if msg := err.Error(); msg != "circuit breaker for azure-eu is open after timeout: next probe in 45s" {
			t.Errorf("Error() = %q", msg)
		}
	})
}

func TestState(t *testing.T) {
	tests := []struct {
		s     State
		name  string
		gauge float64
	}{{Closed, "closed", 0}, {HalfOpen, "half_open", 1}, {Open, "open", 2}, {State(7), "state(7)", 7}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.String(); got != tc.name {
				t.Errorf("String() = %q, want %q", got, tc.name)
			}
			if got := float64(tc.s); got != tc.gauge {
				t.Errorf("gauge value = %v, want %v", got, tc.gauge)
			}
			if b, _ := tc.s.MarshalText(); string(b) != tc.name {
				t.Errorf("MarshalText() = %q, want %q", b, tc.name)
			}
		})
	}
}

func TestNextProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("p", DefaultConfig(), Options{})
		if w, _ := b.NextProbe(time.Now()); w >= 0 {
			t.Errorf("closed: wait = %s, want < 0", w)
		}
		_, changed := b.NextProbe(time.Now())
		tripNow(t, b)
		select {
		case <-changed:
		default:
			t.Fatal("changed not closed by the trip")
		}
		time.Sleep(10 * time.Second)
		if w, _ := b.NextProbe(time.Now()); w != 20*time.Second {
			t.Errorf("open: wait = %s, want 20s", w)
		}
		time.Sleep(20 * time.Second)
		if w, _ := b.NextProbe(time.Now()); w != 0 {
			t.Errorf("half-open: wait = %s, want 0", w)
		}

		release := make(chan struct{})
		go b.Probe(context.Background(), func(context.Context) error { <-release; return errBoom })
		synctest.Wait() // the probe is running
		w, changed := b.NextProbe(time.Now())
		if w >= 0 {
			t.Errorf("probing: wait = %s, want < 0", w)
		}
		close(release)
		<-changed // the probe's end wakes waiters
		if w, _ := b.NextProbe(time.Now()); w != 45*time.Second {
			t.Errorf("reopened: wait = %s, want 45s", w)
		}
	})
}

func TestProbePanicCountsAsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("p", DefaultConfig(), Options{})
		tripNow(t, b)
		time.Sleep(30 * time.Second)
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("recover() = %v, want boom", r)
				}
			}()
			b.Probe(context.Background(), func(context.Context) error { panic("boom") })
		}()
		s := b.Snapshot(time.Now())
		if s.State != Open || s.CooldownLeft != 45*time.Second || s.LastKind != outcome.Unknown {
			t.Errorf("after a panicking probe: %s, %s left, last %s; want open, 45s left, last unknown",
				s.State, s.CooldownLeft, s.LastKind)
		}
	})
}

func TestNewPanicsOnInvalidConfig(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "breaker.cooldown.multiplier") {
			t.Errorf("recover() = %v, want a panic naming breaker.cooldown.multiplier", r)
		}
	}()
	cfg := DefaultConfig()
	cfg.Cooldown.Multiplier = 0
	New("p", cfg, Options{})
}

// TestProbeSingleFlight hammers a breaker whose cooldown just ended: exactly
// one probe runs, never two at once, and no real request gets in before the
// probe succeeded.
func TestProbeSingleFlight(t *testing.T) {
	tests := []struct {
		name      string
		probeErr  error
		wantState State
	}{
		{"probe succeeds", nil, Closed},
		{"probe fails", errBoom, Open},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := New("p", DefaultConfig(), Options{})
				tripNow(t, b)
				time.Sleep(30 * time.Second) // fake time stands still from here: no goroutine blocks

				var inFlight, maxInFlight, probes, early atomic.Int32
				var probeOK atomic.Bool
				probe := func(context.Context) error {
					probes.Add(1)
					n := inFlight.Add(1)
					for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
					}
					for range 200 {
						runtime.Gosched() // let the others try while this probe runs
					}
					inFlight.Add(-1)
					if tc.probeErr == nil {
						probeOK.Store(true)
					}
					return tc.probeErr
				}
				start := make(chan struct{})
				var wg sync.WaitGroup
				for range 200 {
					wg.Go(func() {
						<-start
						for range 50 {
							if tk, err := b.Allow(time.Now()); err == nil {
								if !probeOK.Load() {
									early.Add(1)
								}
								b.Done(time.Now(), tk, outcome.OK, 0)
							}
							b.Probe(context.Background(), probe)
							runtime.Gosched()
						}
					})
				}
				close(start)
				wg.Wait()

				if got := probes.Load(); got != 1 {
					t.Errorf("probes run = %d, want 1", got)
				}
				if got := maxInFlight.Load(); got != 1 {
					t.Errorf("max probes in flight = %d, want 1", got)
				}
				if got := early.Load(); got != 0 {
					t.Errorf("requests admitted before the probe succeeded = %d, want 0", got)
				}
				if got := b.Snapshot(time.Now()).State; got != tc.wantState {
					t.Errorf("state = %s, want %s", got, tc.wantState)
				}
			})
		})
	}
}

func BenchmarkAllowDone(b *testing.B) {
	br := New("p", DefaultConfig(), Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := time.Now()
			tk, err := br.Allow(now)
			if err != nil {
				b.Fatal(err)
			}
			br.Done(now, tk, outcome.OK, 0)
		}
	})
}

func BenchmarkAllowRefused(b *testing.B) {
	br := New("p", DefaultConfig(), Options{})
	tripNow(b, br)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := br.Allow(time.Now()); err == nil {
				b.Fatal("admitted by an open breaker")
			}
		}
	})
}

// TestLateOutcome: an outcome counts in the window bucket of its
// admission, so one reported more than a window after it counts for
// nothing, though its kind is remembered; auth and quota trip whenever
// they arrive.
func TestLateOutcome(t *testing.T) {
	tests := []struct {
		kind      outcome.Kind
		wantState State
	}{
		{outcome.ServerError, Closed},
		{outcome.Auth, Open},
	}
	for _, tc := range tests {
		t.Run(tc.kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := New("p", DefaultConfig(), Options{})
				slow, err := b.Allow(time.Now())
				if err != nil {
					t.Fatalf("Allow() = %v, want admitted", err)
				}
				time.Sleep(61 * time.Second)
				b.Done(time.Now(), slow, tc.kind, 0)
				s := b.Snapshot(time.Now())
				if s.State != tc.wantState || s.LastKind != tc.kind || s.Counts != (Counts{}) {
					t.Errorf("after a late %s: %s, last %s, counts %+v; want %s, last %s, no counts",
						tc.kind, s.State, s.LastKind, s.Counts, tc.wantState, tc.kind)
				}
			})
		})
	}
}

// TestRetryInStaleNow: a caller whose now was read before the trip (a
// request admitted while the failure that trips it is recorded) is told at
// most the cooldown, never the cooldown plus its lag: a client's
// Retry-After rounds up from it.
func TestRetryInStaleNow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FailureThreshold.Consecutive = 1
	b := New("p", cfg, Options{})
	t0 := time.Unix(1_000_000, 0)
	t1 := t0.Add(300 * time.Millisecond) // the failure becomes known after t0
	tk, err := b.Allow(t0)
	if err != nil {
		t.Fatal(err)
	}
	b.Done(t1, tk, outcome.ServerError, 0)
	_, err = b.Allow(t0)
	var oe *OpenError
	if !errors.As(err, &oe) {
		t.Fatalf("Allow = %v, want open", err)
	}
	if want := cfg.Cooldown.Failure; oe.RetryIn != want {
		t.Errorf("RetryIn = %s at a now before the trip, want the cooldown %s", oe.RetryIn, want)
	}
	if _, err := b.Allow(t1.Add(100 * time.Millisecond)); !errors.As(err, &oe) || oe.RetryIn != cfg.Cooldown.Failure-100*time.Millisecond {
		t.Errorf("RetryIn = %v after the trip, want the cooldown less 100ms", err)
	}
}

// TestCooldownState: Cooldown is Snapshot's State and CooldownLeft, closed,
// open (with the cooldown left) and half-open once it has passed.
func TestCooldownState(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FailureThreshold.Consecutive = 1
	b := New("p", cfg, Options{})
	t0 := time.Unix(1_000_000, 0)
	tk, err := b.Allow(t0)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		at   time.Time
		want State
		left time.Duration
	}{
		{"open at the trip", t0, Open, cfg.Cooldown.Failure},
		{"open later", t0.Add(time.Second), Open, cfg.Cooldown.Failure - time.Second},
		{"half-open after the cooldown", t0.Add(cfg.Cooldown.Failure), HalfOpen, 0},
	}
	if st, left := b.Cooldown(t0); st != Closed || left != 0 {
		t.Fatalf("Cooldown before the trip = %s %s, want closed 0", st, left)
	}
	b.Done(t0, tk, outcome.ServerError, 0)
	for _, s := range steps {
		snap := b.Snapshot(s.at)
		st, left := b.Cooldown(s.at)
		if st != s.want || left != s.left {
			t.Errorf("%s: Cooldown = %s %s, want %s %s", s.name, st, left, s.want, s.left)
		}
		if st != snap.State || left != snap.CooldownLeft {
			t.Errorf("%s: Cooldown = %s %s, Snapshot %s %s", s.name, st, left, snap.State, snap.CooldownLeft)
		}
	}
}
