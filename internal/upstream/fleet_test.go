package upstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// oneHandle is a Fleet of one provider whose Admit answers decide.
type oneHandle struct {
	d      provider.Descriptor
	key    string
	pol    shared.Policy
	decide shared.Decision
}

func (f *oneHandle) For(d provider.Descriptor, key string, pol shared.Policy, _ func(shared.View)) shared.Handle {
	f.d, f.key, f.pol = d, key, pol
	return f
}
func (f *oneHandle) Up() bool                             { return true }
func (f *oneHandle) Admit(int64) (shared.Decision, error) { return f.decide, nil }
func (f *oneHandle) Record(shared.Record)                 {}
func (f *oneHandle) DisableTarget(string, string)         {}
func (f *oneHandle) Enable()                              {}
func (f *oneHandle) Close()                               {}
func (f *oneHandle) Probe(context.Context, func(context.Context) error) (shared.ProbeResult, error) {
	return shared.ProbeResult{}, nil
}

// TestFleetReadsTheDescriptor: the fleet is handed the provider's own
// description, the runtime's policy with the quota recheck in force, and
// the state file's fingerprint as its key; each of its refusals comes
// back as the runtime's refusal of the same name, matching its sentinel.
func TestFleetReadsTheDescriptor(t *testing.T) {
	f := &oneHandle{}
	sp := spec("p", 10)
	sp.Config.RPM = 60
	u := build(sp, Options{Fleet: f})
	if !f.d.Equal(sp.Descriptor) || f.key != u.fingerprint().Key("p") || f.pol.Breaker != sp.Breaker || f.pol.QuotaRecheck != shared.DefaultQuotaRecheck {
		t.Errorf("the fleet got %+v, key %q, policy %+v; want the descriptor, the fingerprint's key and the policy with its recheck", f.d, f.key, f.pol)
	}
	for _, c := range []struct {
		r    shared.Reason
		wait time.Duration
		is   error
	}{
		{shared.Open, time.Second, breaker.ErrOpen},
		{shared.Limited, time.Second, ratelimit.ErrLimited},
		{shared.TooLarge, 0, ratelimit.ErrTooLarge},
		{shared.Quota, 0, ErrQuota},
	} {
		f.decide = shared.Decision{Reason: c.r, Wait: c.wait}
		_, err := u.Acquire(t0, 1)
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Reason.String() != c.r.String() || !errors.Is(err, c.is) || ref.Wait != c.wait {
			t.Errorf("fleet refused %s: got %v (%+v), want the runtime's %s refusal matching %v, wait %s", c.r, err, ref, c.r, c.is, c.wait)
		}
	}
	f.decide = shared.Decision{}
	p, err := u.Acquire(t0, 1)
	if err != nil {
		t.Fatalf("fleet admitted: got %v", err)
	}
	p.Release(t0, Result{})
}
