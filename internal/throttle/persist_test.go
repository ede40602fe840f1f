package throttle

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestRestore: 100 refused attempts spread over the first 50s of a
// window, saved at 60s, loaded (JSON in between) after the router was
// down until restoreAt: the probability is what the old throttle would
// have said then, give or take the bucket a count lands in.
func TestRestore(t *testing.T) {
	build := func() *Throttle {
		th := New(2, 10)
		for i := range 100 {
			th.Done(t0.Add(time.Duration(i)*500*time.Millisecond), i%10 == 0) // 10 accepts
		}
		return th
	}
	const saved = 60 * time.Second
	tests := []struct {
		name      string
		restoreAt time.Duration
		want      float64
	}{
		{"loaded at once", saved, (100 - 2*10) / 101.0},
		{"loaded 30s later", saved + 30*time.Second, (100 - 2*10) / 101.0},
		// 2m30s in, only the bucket that began 40s in is left: 20
		// attempts, 2 accepts.
		{"loaded while the oldest buckets leave", 150 * time.Second, (20 - 2*2) / 21.0},
		{"loaded after the window", saved + Window, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(build().Export(t0.Add(saved)))
			if err != nil {
				t.Fatal(err)
			}
			var p Persisted
			if err := json.Unmarshal(data, &p); err != nil {
				t.Fatal(err)
			}
			th := New(2, 10)
			now := t0.Add(tt.restoreAt)
			th.Restore(now, p)
			if got := th.RejectProbability(now); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("reject probability %.4f, want %.4f", got, tt.want)
			}
		})
	}
}

// TestRestoreKeepsCounting: a restored window goes on counting and
// rotating like one that never stopped.
func TestRestoreKeepsCounting(t *testing.T) {
	a := New(2, 0)
	for range 10 {
		a.Done(t0, false)
	}
	b := New(2, 0)
	b.Restore(t0.Add(5*time.Second), a.Export(t0))
	for range 10 {
		b.Done(t0.Add(90*time.Second), false)
	}
	if got, want := b.RejectProbability(t0.Add(90*time.Second)), 20/21.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("with both: %.4f, want %.4f", got, want)
	}
	// The restored ten began at t0 and leave by t0+2m; the new ten stay.
	if got, want := b.RejectProbability(t0.Add(Window+5*time.Second)), 10/11.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("after the restored ones left: %.4f, want %.4f", got, want)
	}
}

func TestRestoreSkipsBadCountsAndDisabled(t *testing.T) {
	p := Persisted{Buckets: []PersistedBucket{
		{Start: t0, Requests: -3, Accepts: 0},
		{Start: t0, Requests: math.Inf(1), Accepts: 0},
		{Start: t0.Add(time.Hour), Requests: 5, Accepts: 0}, // ahead: the wall clock was set back
	}}
	th := New(2, 0)
	th.Restore(t0, p)
	if got := th.RejectProbability(t0); math.Abs(got-5/6.0) > 1e-9 {
		t.Errorf("reject probability %.4f, want 5/6 from the one usable bucket", got)
	}
	off := New(0, 0)
	off.Restore(t0, p)
	if len(off.Export(t0).Buckets) != 0 {
		t.Error("a disabled throttle exported counts")
	}
}
