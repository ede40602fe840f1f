package ratelimit

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// TestRestore: a limiter that lived through before, saved at exportAt,
// is loaded (JSON in between) into a new limiter configured with rpm2 and
// tpm2 at restoreAt; the router was down in between. after runs on the
// new one. All times are from t0, wall-clock only, as in a new process.
func TestRestore(t *testing.T) {
	tests := []struct {
		name                string
		rpm, tpm, rpm2      int64
		before              []step
		exportAt, restoreAt time.Duration
		after               []step
	}{
		{name: "an announced remaining 0 still blocks until its reset",
			before:   []step{observe(0, reqs(100, 0, 60*time.Second))},
			exportAt: 10 * time.Second, restoreAt: 30 * time.Second,
			after: []step{
				// The level refilled at 100/60s while the router was down,
				// but the provider said not before its reset.
				snapshot(30*time.Second, Snapshot{RequestsLimit: 100, RemainingRequests: 50, RemainingTokens: -1, BlockedFor: 30 * time.Second}),
				refuse(30*time.Second, 1, R, 30*time.Second),
				grant(60*time.Second, 1, 1),
			}},
		{name: "a block that ended while the router was down is dropped",
			before:   []step{observe(0, reqs(100, 0, 60*time.Second))},
			exportAt: 10 * time.Second, restoreAt: 70 * time.Second,
			after: []step{
				snapshot(70*time.Second, Snapshot{RequestsLimit: 100, RemainingRequests: 100, RemainingTokens: -1}),
				grant(70*time.Second, 1, 1),
			}},
		{name: "a bucket refills for the time the router was down",
			before: []step{
				observe(0, reqs(60, 30, 30*time.Second)), // learned: 1 a second
				grant(0, 0, 10),
			},
			exportAt: 5 * time.Second, restoreAt: 15 * time.Second,
			after: []step{
				snapshot(15*time.Second, Snapshot{RequestsLimit: 60, RemainingRequests: 35, RemainingTokens: -1}),
				grant(15*time.Second, 0, 35),
				refuse(15*time.Second, 0, R, time.Second),
			}},
		{name: "Retry-After still blocks everything",
			before:   []step{observe(0, retryAfter(40*time.Second))},
			exportAt: 0, restoreAt: 10 * time.Second,
			after: []step{
				snapshot(10*time.Second, Snapshot{RemainingRequests: -1, RemainingTokens: -1, BlockedFor: 30 * time.Second}),
				refuse(10*time.Second, 1, LimitRetryAfter, 30*time.Second),
				grant(40*time.Second, 1, 1),
			}},
		{name: "a Retry-After that ended while down is dropped",
			before:   []step{observe(0, retryAfter(40*time.Second))},
			exportAt: 0, restoreAt: 41 * time.Second,
			after: []step{grant(41*time.Second, 1, 1)},
		},
		{name: "the ceiling's level carries over and refills",
			rpm: 60, rpm2: 60,
			before:   []step{grant(0, 1, 30)},
			exportAt: 0, restoreAt: 10 * time.Second,
			after: []step{
				snapshot(10*time.Second, Snapshot{RequestsLimit: 60, RemainingRequests: 40, RemainingTokens: -1}),
			}},
		{name: "a changed ceiling starts full",
			rpm: 60, rpm2: 120,
			before:   []step{grant(0, 1, 30)},
			exportAt: 0, restoreAt: 10 * time.Second,
			after: []step{
				snapshot(10*time.Second, Snapshot{RequestsLimit: 120, RemainingRequests: 120, RemainingTokens: -1}),
			}},
		{name: "token debt carries over",
			tpm: 600, before: []step{grant(0, 100, 1), reconcile(0, 0, 1100)}, // 500 over: -500
			exportAt: 0, restoreAt: 30 * time.Second, // +300 at 10 a second
			after: []step{
				snapshot(30*time.Second, Snapshot{TokensLimit: 600, RemainingRequests: -1, RemainingTokens: 0}),
				refuse(30*time.Second, 100, T, 30*time.Second),
			}},
		{name: "an older remaining is still recognised as stale",
			before:   []step{observe(0, reqs(100, 10, 60*time.Second))}, // learned 1.5 a second
			exportAt: 0, restoreAt: 10 * time.Second,
			after: []step{
				observe(10*time.Second, reqs(100, 80, 50*time.Second)), // above 10 + 15: computed before
				snapshot(10*time.Second, Snapshot{RequestsLimit: 100, RemainingRequests: 25, RemainingTokens: -1}),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(tt.rpm, tt.tpm)
			run(t, a, tt.before)
			data, err := json.Marshal(a.Export(t0.Add(tt.exportAt)))
			if err != nil {
				t.Fatal(err)
			}
			var p Persisted
			if err := json.Unmarshal(data, &p); err != nil {
				t.Fatal(err)
			}
			b := New(tt.rpm2, tt.tpm)
			b.Restore(t0.Add(tt.restoreAt), p)
			run(t, b, tt.after)
		})
	}
}

// TestExportAcrossClocks: the router's clock has a monotonic reading; the
// deadline crosses the restart as a wall-clock instant and comes back on
// the new process's clock, which knows nothing of the old one.
func TestExportAcrossClocks(t *testing.T) {
	a := New(0, 0)
	saved := time.Now()
	a.Observe(saved, reqs(10, 0, 20*time.Second))
	a.Observe(saved, retryAfter(5*time.Second))
	p := a.Export(saved)
	if got := p.Requests.BlockedUntil.Sub(saved.Round(0)); got != 20*time.Second {
		t.Errorf("exported block ends %s after the save, want 20s", got)
	}
	// A new process, 8s (wall) later: its monotonic readings have
	// nothing to do with the old one's, so only the wall clock links them.
	loaded := saved.Round(0).Add(8 * time.Second)
	b := New(0, 0)
	b.Restore(loaded, p)
	if s := b.Snapshot(loaded); s.BlockedFor != 12*time.Second {
		t.Errorf("restored block: %s left, want 12s", s.BlockedFor)
	}
	if _, err := b.Reserve(loaded.Add(12*time.Second), 0); err != nil {
		t.Errorf("after the block: %v, want admitted", err)
	}
}

// TestRestoreIgnoresWhatItCannotUse: hand-edited or damaged values do not
// poison a limiter.
func TestRestoreIgnoresWhatItCannotUse(t *testing.T) {
	b := New(60, 0)
	b.Restore(t0, Persisted{Requests: PersistedBudget{
		Configured: 60, LearnedPerSec: -1,
		Ceiling:  &PersistedBucket{Capacity: 60, PerSec: 1, Level: math.Inf(1), At: t0},
		Provider: &PersistedBucket{Capacity: -5, PerSec: 1, Level: 3, At: t0},
	}})
	if s := b.Snapshot(t0); s.RemainingRequests != 60 || s.RequestsLimit != 60 {
		t.Errorf("got %+v, want the configured 60, full", s)
	}
}

func TestObserveReportsBlocks(t *testing.T) {
	l := New(0, 0)
	steps := []struct {
		at   time.Duration
		rl   outcome.RateLimit
		want bool
	}{
		{0, reqs(10, 5, time.Minute), false},
		{0, reqs(10, 0, time.Minute), true},
		{time.Second, reqs(10, 0, 30*time.Second), false}, // ends earlier: the block stands
		{2 * time.Second, reqs(10, 0, time.Minute), true}, // extends it
		{2 * time.Second, toks(1000, 0, 10*time.Second), true},
		{3 * time.Second, retryAfter(10 * time.Second), true},
		{4 * time.Second, retryAfter(time.Second), false},
		{5 * time.Second, outcome.UnknownRateLimit, false},
	}
	for i, s := range steps {
		if got := l.Observe(t0.Add(s.at), s.rl); got != s.want {
			t.Errorf("step %d: Observe() = %v, want %v", i, got, s.want)
		}
	}
}
