package failover

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/reqctx"
)

// hangs answers when its context ends, as an adapter does: with the
// cause the loop gave.
func hangs(ctx context.Context, _ int) (*provider.Response, error) {
	<-ctx.Done()
	return nil, provider.TransportError(ctx, "calling", ctx.Err())
}

// failsAfter fails with a server error after d.
func failsAfter(d time.Duration) func(context.Context, int) (*provider.Response, error) {
	return func(ctx context.Context, _ int) (*provider.Response, error) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil, &outcome.Error{Kind: outcome.ServerError, Status: 500, Message: "boom"}
		case <-ctx.Done():
			return nil, provider.TransportError(ctx, "calling", ctx.Err())
		}
	}
}

// TestAttemptAlarm: an attempt's timeouts ride the request's one timer
// (docs/ARCHITECTURE.md, "Request contexts"), and every timeout keeps its
// time and its cause: the provider timeout ends its attempt as a timeout
// and the walk fails over; an attempt that ended before its alarm leaves
// the timer earlier than the request's deadline, which still ends the
// request at its time; an alarm after the deadline does not delay it.
// The clock is synctest's: each time is exact.
func TestAttemptAlarm(t *testing.T) {
	for _, c := range []struct {
		name      string
		a, b      func(context.Context, int) (*provider.Response, error)
		aTimeout  time.Duration
		served    string
		took      time.Duration
		deadline  bool
		aFailKind outcome.Kind
	}{
		// a's provider timeout (300ms) cuts it; b answers at once.
		{"provider timeout", hangs, answers, 300 * time.Millisecond, "b", 300 * time.Millisecond, false, outcome.Timeout},
		// a fails at 10ms, its alarm (500ms) given back unrung; b hangs
		// with an alarm (120s) after the deadline: the timer, left at
		// 510ms, is set again for the deadline (2s) when it fires.
		{"deadline after a returned alarm", failsAfter(10 * time.Millisecond), hangs, 500 * time.Millisecond, "", 2 * time.Second, true, outcome.ServerError},
		// a's alarm (5s) comes after the deadline (2s): the deadline ends
		// the request, the alarm never rings.
		{"deadline before the alarm", hangs, answers, 5 * time.Second, "", 2 * time.Second, true, outcome.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rg := newRig(t, retryEvery, tgt{name: "a", a: &fake{do: c.a}, cfg: provider.Config{Timeout: c.aTimeout}},
					tgt{name: "b", tier: 1, a: &fake{do: c.b}})
				start := time.Now()
				r, res := rg.walk(t.Context(), 2*time.Second)
				if got := servedBy(res); got != c.served || res.DeadlinePassed != c.deadline {
					t.Errorf("served by %q, deadline passed %v (%s), want %q, %v", got, res.DeadlinePassed, r.FailureList(), c.served, c.deadline)
				}
				if took := time.Since(start); took != c.took {
					t.Errorf("ended after %s, want %s", took, c.took)
				}
				if c.aFailKind != outcome.Canceled && (len(r.Failures) == 0 || r.Failures[0].Provider != "a" || r.Failures[0].Err.Kind != c.aFailKind) {
					t.Errorf("failures %s, want a's first, %s", r.FailureList(), c.aFailKind)
				}
			})
		})
	}
}

// TestAttemptAlarmHost: the request's context lends its timer to the
// first attempt; a hedge's twin, while the first holds it, rings on a
// timer of its own; an attempt of a request whose context is not a
// reqctx.Ctx has its own too.
func TestAttemptAlarmHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, retryEvery, tgt{name: "a", a: &fake{do: answers}}, tgt{name: "b", a: &fake{do: answers}})
		r := &Run{ID: "req", Op: provider.OpChat, Model: rg.model}
		c0, c1 := &r.candBuf[0], &r.candBuf[1]
		*c0 = candidate{p: rg.provs["a"], tg: &rg.model.Targets[0]}
		*c1 = candidate{p: rg.provs["b"], tg: &rg.model.Targets[1]}
		ctx := reqctx.New(t.Context())
		ctx.SetDeadline(time.Now().Add(time.Minute))
		defer ctx.Cancel(nil)
		first := rg.loop.begin(ctx, r, c0.p, *c0.tg, &provider.Request{Op: provider.OpChat}, nil, false)
		twin := rg.loop.begin(ctx, r, c1.p, *c1.tg, &provider.Request{Op: provider.OpChat}, nil, true)
		if first.host != ctx {
			t.Error("the first attempt's alarm is not on the request's timer")
		}
		if twin.host != &twin.rc {
			t.Error("the twin's alarm is not on a timer of its own")
		}
		first.end()
		twin.end()
		next := rg.loop.begin(ctx, r, c1.p, *c1.tg, &provider.Request{Op: provider.OpChat}, nil, false)
		if next.host != ctx {
			t.Error("an attempt after the first ended does not get the request's timer back")
		}
		next.end()
		plain, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		own := rg.loop.begin(plain, r, c0.p, *c0.tg, &provider.Request{Op: provider.OpChat}, nil, false)
		if own.host != &own.rc {
			t.Error("an attempt under a standard context has no timer of its own")
		}
		own.end()
	})
}
