package upstream

import (
	"errors"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// TestQuotaBlockAndRecheck: a quota answer takes the provider off; nothing
// is admitted until the recheck time, when exactly one request checks; a
// check that meets quota again waits another recheck; a check that is
// answered lifts the block. The breaker stays closed throughout: a
// models-list probe cannot tell whether quota is back.
func TestQuotaBlockAndRecheck(t *testing.T) {
	sp := spec("p", 10)
	sp.QuotaRecheck = time.Minute
	u := build(sp, Options{})
	now := t0
	p, _ := u.Acquire(now, 1)
	p.Release(now, Result{Kind: outcome.Quota})
	for _, at := range []time.Duration{0, time.Second, 59 * time.Second} {
		_, err := u.Acquire(now.Add(at), 1)
		var r *Refusal
		if !errors.As(err, &r) || r.Reason != Quota || !errors.Is(err, ErrQuota) {
			t.Fatalf("at +%s: got %v, want a quota refusal", at, err)
		}
	}
	check, err := u.Acquire(now.Add(time.Minute), 1)
	if err != nil {
		t.Fatalf("at the recheck: %v, want the one check admitted", err)
	}
	if _, err := u.Acquire(now.Add(time.Minute), 1); !errors.Is(err, ErrQuota) {
		t.Fatalf("a second request while the check is in flight: %v, want refused", err)
	}
	check.Release(now.Add(time.Minute), Result{Kind: outcome.Quota})
	if _, err := u.Acquire(now.Add(time.Minute+time.Second), 1); !errors.Is(err, ErrQuota) {
		t.Fatalf("after a failed check: %v, want refused until the next recheck", err)
	}
	check, err = u.Acquire(now.Add(2*time.Minute), 1)
	if err != nil {
		t.Fatalf("at the second recheck: %v", err)
	}
	check.Release(now.Add(2*time.Minute), Result{Kind: outcome.OK})
	if p, err := u.Acquire(now.Add(2*time.Minute), 1); err != nil {
		t.Fatalf("after a good check: %v, want admitted", err)
	} else {
		p.Release(now.Add(2*time.Minute), Result{Kind: outcome.OK})
	}
	if st := u.Status(now.Add(2 * time.Minute)); st.State != "closed" || st.OutOfQuota {
		t.Errorf("status %+v, want closed and not out of quota", st)
	}
}

// TestQuotaResetNamedAndEnable: a quota answer that names its reset lifts
// at the reset; an operator's Enable lifts at once.
func TestQuotaResetNamedAndEnable(t *testing.T) {
	u := build(spec("p", 10), Options{})
	p, _ := u.Acquire(t0, 1)
	p.Release(t0, Result{Kind: outcome.Quota, RetryAfter: 10 * time.Second})
	if _, err := u.Acquire(t0.Add(9*time.Second), 1); !errors.Is(err, ErrQuota) {
		t.Fatalf("before the named reset: %v, want refused", err)
	}
	if p, err := u.Acquire(t0.Add(10*time.Second), 1); err != nil {
		t.Fatalf("at the named reset: %v, want admitted", err)
	} else {
		p.Release(t0.Add(10*time.Second), Result{Kind: outcome.Quota})
	}
	if !u.Status(t0.Add(10 * time.Second)).OutOfQuota {
		t.Fatal("quota again: not out of quota")
	}
	if quota, _ := u.Enable(); !quota {
		t.Error("Enable did not report a lifted quota")
	}
	if _, err := u.Acquire(t0.Add(11*time.Second), 1); err != nil {
		t.Fatalf("after Enable: %v, want admitted", err)
	}
}

// TestRateLimitWithResetIsNotAFailure: 429s that name their reset block
// the provider until then but never trip the breaker; without a hint
// they count.
func TestRateLimitWithResetIsNotAFailure(t *testing.T) {
	u := build(spec("p", 10), Options{})
	now := t0
	for range 10 {
		p, err := u.Acquire(now, 1)
		if err != nil {
			t.Fatalf("at %s: %v", now.Sub(t0), err)
		}
		p.Release(now, Result{Kind: outcome.RateLimited, RetryAfter: time.Second})
		now = now.Add(time.Second)
	}
	if st := u.Status(now); st.State != "closed" {
		t.Fatalf("after ten hinted 429s: breaker %s, want closed", st.State)
	}
	for range 5 {
		p, err := u.Acquire(now, 1)
		if err != nil {
			t.Fatal(err)
		}
		p.Release(now, Result{Kind: outcome.RateLimited})
	}
	if st := u.Status(now); st.State != "open" {
		t.Errorf("after five bare 429s: breaker %s, want open", st.State)
	}
}

// TestTargetsOff: a disabled target is reported off, others are not, the
// provider is untouched, and Enable turns it back on.
func TestTargetsOff(t *testing.T) {
	u := build(spec("p", 10), Options{})
	if !u.DisableTarget("gpt-4o-mni", "The model `gpt-4o-mni` does not exist") {
		t.Fatal("first disable reported no change")
	}
	if u.DisableTarget("gpt-4o-mni", "again") {
		t.Error("second disable of the same target reported a change")
	}
	if !u.TargetOff("gpt-4o-mni") || u.TargetOff("gpt-4o-mini") {
		t.Error("wrong targets off")
	}
	if st := u.Status(t0); len(st.DisabledTargets) != 1 || st.State != "closed" {
		t.Errorf("status %+v, want one disabled target and a closed breaker", st)
	}
	if _, targets := u.Enable(); len(targets) != 1 || u.TargetOff("gpt-4o-mni") {
		t.Errorf("Enable: targets %v, still off %v", targets, u.TargetOff("gpt-4o-mni"))
	}
}
