package upstream

import (
	"errors"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// built is what a test builds an Upstream from: the provider's
// description and the policy.
type built struct {
	provider.Descriptor
	shared.Policy
}

func spec(name string, maxConc int) built {
	return built{Descriptor: provider.Descriptor{Name: name, Type: "fake",
		Config: provider.Config{Name: name, Type: "fake", MaxConcurrency: maxConc}},
		Policy: shared.Policy{Breaker: breaker.DefaultConfig()}}
}

func build(b built, opts Options) *Upstream { return New(b.Descriptor, b.Policy, opts) }

// TestThrottledRefusalHoldsNothing: a refusal by adaptive throttling gives
// back the bulkhead slot and the bucket charge.
func TestThrottledRefusalHoldsNothing(t *testing.T) {
	sp := spec("p", 1)
	sp.Config.RPM = 100
	sp.ThrottleK = 2
	u := build(sp, Options{Rand: func() float64 { return 0 }}) // always below the reject probability
	now := t0
	for range 10 { // teach the throttle the provider refuses everything
		p, err := u.Acquire(now, 1)
		if err != nil {
			break
		}
		p.Release(now, Result{Kind: outcome.Overloaded})
	}
	before := u.Status(now).RemainingRequests
	_, err := u.Acquire(now, 1)
	var r *Refusal
	if !errors.As(err, &r) || !errors.Is(err, ErrThrottled) && r.Reason != Open {
		t.Fatalf("got %v, want a throttled (or open) refusal", err)
	}
	if st := u.Status(now); st.InFlight != 0 || st.RemainingRequests != before {
		t.Errorf("after the refusal: in flight %d, remaining %d; want 0 and %d", st.InFlight, st.RemainingRequests, before)
	}
}

// TestRampOnInjectedClock: after a breaker closes, the provider's share
// grows from the floor over rampDuration, measured on the injected clock.
func TestRampOnInjectedClock(t *testing.T) {
	clock := t0
	sp := spec("p", 10)
	u := build(sp, Options{Now: func() time.Time { return clock }})
	for range 5 {
		p, err := u.Acquire(clock, 1)
		if err != nil {
			t.Fatal(err)
		}
		p.Release(clock, Result{Kind: outcome.ServerError})
	}
	if got := u.Health(clock).Ramp; got != 1 {
		t.Fatalf("ramp while open = %v, want 1 (ranking skips open providers)", got)
	}
	u.closedAt.Store(int64(clock.Sub(u.epoch)) + 1) // as the close transition records it
	if got := u.Health(clock).Ramp; got != rampFloor {
		t.Errorf("ramp just after closing = %v, want %v", got, rampFloor)
	}
	clock = clock.Add(rampDuration / 2)
	if got := u.Health(clock).Ramp; got < 0.49 || got > 0.51 {
		t.Errorf("ramp half way = %v, want 0.5", got)
	}
	clock = clock.Add(rampDuration)
	if got := u.Health(clock).Ramp; got != 1 {
		t.Errorf("ramp after rampDuration = %v, want 1", got)
	}
}
