package quota

import (
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// TestSteps walks a Block through its transitions, one step at a time.
func TestSteps(t *testing.T) {
	type step struct {
		name string
		at   time.Duration
		do   func(b *Block, now time.Time) bool // what the step reports
		want bool
		off  bool          // Off() after the step
		left time.Duration // Status's left after the step
	}
	admit := func(b *Block, now time.Time) bool { _, check, _ := b.Admit(now); return check }
	tests := []struct {
		name  string
		steps []step
	}{
		{"recheck: one check at a time, answered", []step{
			{"serving admits", 0, admit, true, false, 0},
			{"a quota answer", 0, func(b *Block, now time.Time) bool { return b.Quota(now, 0) }, true, true, time.Minute},
			{"refused before the recheck", 30 * time.Second, admit, false, true, 30 * time.Second},
			{"the one check", time.Minute, admit, true, true, 0},
			{"a second request waits", time.Minute, admit, false, true, 0},
			{"the check answered", time.Minute, func(b *Block, _ time.Time) bool { return b.Answered(true) }, true, false, 0},
		}},
		{"a check that meets quota again waits a recheck more", []step{
			{"a quota answer", 0, func(b *Block, now time.Time) bool { return b.Quota(now, 0) }, true, true, time.Minute},
			{"the one check", time.Minute, admit, true, true, 0},
			{"quota again", time.Minute, func(b *Block, now time.Time) bool { return b.Quota(now, 0) }, false, true, time.Minute},
			{"refused", time.Minute + time.Second, admit, false, true, time.Minute - time.Second},
		}},
		{"a check not sent gives its turn back", []step{
			{"a quota answer", 0, func(b *Block, now time.Time) bool { return b.Quota(now, 0) }, true, true, time.Minute},
			{"the one check", time.Minute, admit, true, true, 0},
			{"not sent", time.Minute, func(b *Block, _ time.Time) bool { b.CheckDone(); return true }, true, true, 0},
			{"the next request checks", time.Minute, admit, true, true, 0},
			{"a client error says nothing", time.Minute, func(b *Block, _ time.Time) bool { return b.Answered(false) }, false, true, 0},
		}},
		{"a named reset lifts the block", []step{
			{"a quota answer with a reset", 0, func(b *Block, now time.Time) bool { return b.Quota(now, 10*time.Second) }, true, true, 10 * time.Second},
			{"refused before it", 5 * time.Second, admit, false, true, 5 * time.Second},
			{"admitted at it", 10 * time.Second, admit, true, false, 0},
		}},
		{"lift and mirror", []step{
			{"mirrored on", 0, func(b *Block, now time.Time) bool { return b.Mirror(now, true, 20*time.Second) }, false, true, 20 * time.Second},
			{"lifted by an operator", 0, func(b *Block, _ time.Time) bool { return b.Lift() }, true, false, 0},
			{"lift again", 0, func(b *Block, _ time.Time) bool { return b.Lift() }, false, false, 0},
			{"mirrored on again", 0, func(b *Block, now time.Time) bool { return b.Mirror(now, true, time.Second) }, false, true, time.Second},
			{"mirrored off", 0, func(b *Block, now time.Time) bool { return b.Mirror(now, false, 0) }, true, false, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(time.Minute)
			for _, st := range tc.steps {
				now := t0.Add(st.at)
				if got := st.do(b, now); got != st.want {
					t.Fatalf("%s: reported %v, want %v", st.name, got, st.want)
				}
				on, left := b.Status(now)
				if b.Off() != st.off || on != st.off || left != st.left {
					t.Fatalf("%s: off %v, status (%v, %s); want %v, %s", st.name, b.Off(), on, left, st.off, st.left)
				}
			}
		})
	}
}

// TestExportRestore: the block crosses a restart as wall-clock instants;
// a reset that passed meanwhile leaves it lifted, a check that fell due
// is due at once, and none is further off than one recheck.
func TestExportRestore(t *testing.T) {
	b := New(time.Minute)
	if b.Export(t0) != nil {
		t.Fatal("a serving block exported something")
	}
	b.Quota(t0, 0)
	p := b.Export(t0)
	if p == nil || !p.NextCheck.Equal(t0.Add(time.Minute)) || !p.Until.IsZero() {
		t.Fatalf("Export = %+v, want the next check at +1m and no reset", p)
	}
	for _, tc := range []struct {
		name    string
		p       Persisted
		at      time.Duration
		off     bool
		left    time.Duration
		recheck time.Duration
	}{
		{"check still ahead", *p, 20 * time.Second, true, 40 * time.Second, time.Minute},
		{"check fell due", *p, 2 * time.Minute, true, 0, time.Minute},
		{"capped at one recheck", Persisted{NextCheck: t0.Add(time.Hour)}, 0, true, 10 * time.Second, 10 * time.Second},
		{"named reset passed", Persisted{Until: t0.Add(time.Second), NextCheck: t0.Add(time.Minute)}, 2 * time.Second, false, 0, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(tc.recheck)
			now := t0.Add(tc.at)
			r.Restore(now, tc.p)
			on, left := r.Status(now)
			if r.Off() != tc.off || on != tc.off || left != tc.left {
				t.Errorf("restored at +%s: off %v, status (%v, %s); want %v, %s", tc.at, r.Off(), on, left, tc.off, tc.left)
			}
		})
	}
}
