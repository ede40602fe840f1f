package stats

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// exportAt is when history is exported: inside the 11th 5s bucket.
const exportAt = 51234 * ms

// history fills a Stats with 45s of mixed traffic from t0 on, then one
// success at 47.234s.
func history(tb testing.TB, cfg Config) *Stats {
	tb.Helper()
	s := New(cfg)
	kinds := []outcome.Kind{outcome.OK, outcome.OK, outcome.OK, outcome.ServerError, outcome.OK, outcome.Timeout, outcome.Canceled}
	for i := range 300 {
		now := at(time.Duration(i) * 150 * ms)
		s.Observe(now, kinds[i%len(kinds)], time.Duration(50+(i*37)%900)*ms)
	}
	s.Observe(at(exportAt-4*time.Second), outcome.OK, 3*time.Second) // last success 4s before export
	return s
}

// roundTrip exports s at now and passes the result through JSON.
func roundTrip(tb testing.TB, s *Stats, now time.Time) Persisted {
	tb.Helper()
	data, err := json.Marshal(s.Export(now))
	if err != nil {
		tb.Fatalf("marshalling: %v", err)
	}
	var p Persisted
	if err := json.Unmarshal(data, &p); err != nil {
		tb.Fatalf("unmarshalling: %v", err)
	}
	return p
}

func TestExportRestore(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name string
		gap  time.Duration // how long the state was saved
		// want no requests left in the window at restore
		empty bool
	}{
		{name: "immediate", gap: 0},
		{name: "2s, same bucket", gap: 2 * sec},
		{name: "17s, some buckets left the window", gap: 17 * sec},
		{name: "50s, only the newest bucket left", gap: 50 * sec},
		{name: "2min, older than the window", gap: 2 * time.Minute, empty: true},
		{name: "a day", gap: 24 * time.Hour, empty: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := history(t, Config{})
			p := roundTrip(t, orig, at(exportAt))
			if len(p.Buckets) == 0 || p.Version != 1 || p.SinceSuccessMs != 4000 {
				t.Fatalf("got export with %d buckets, version %d, since %dms, want buckets, 1 and 4000ms", len(p.Buckets), p.Version, p.SinceSuccessMs)
			}

			restoredAt := exportAt + tt.gap
			restored := New(Config{})
			restored.Restore(at(restoredAt), p)

			got := restored.Snapshot(at(restoredAt))
			if tt.empty && (got.Requests != 0 || got.P50 != 0 || got.SuccessRate != 1) {
				t.Errorf("got requests %d p50 %v rate %v, want the window empty", got.Requests, got.P50, got.SuccessRate)
			}
			if !tt.empty && got.Requests == 0 {
				t.Errorf("got no requests after restore, want some")
			}
			if want := 4*sec + tt.gap; got.SinceSuccess != want {
				t.Errorf("got since success %v, want %v", got.SinceSuccess, want)
			}
			if got.LatencyEMA == 0 {
				t.Errorf("got no latency EMA after restore, want it kept")
			}

			// From here on both see the same time and traffic; their
			// snapshots must agree, bucket boundaries included.
			for i, x := range []time.Duration{0, 1 * sec, 3 * sec, 5 * sec, 11 * sec, 30 * sec, 58 * sec, 70 * sec} {
				now := at(restoredAt + x)
				if i == 2 {
					orig.Observe(now, outcome.OK, 42*ms)
					restored.Observe(now, outcome.OK, 42*ms)
					orig.Observe(now, outcome.Overloaded, 0)
					restored.Observe(now, outcome.Overloaded, 0)
				}
				want, got := orig.Snapshot(now), restored.Snapshot(now)
				if got != want {
					t.Errorf("%v after restore: got %+v, want %+v", x, got, want)
				}
			}
		})
	}
}

func TestRestoreCases(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name    string
		cfg     Config // of the restored Stats
		persist func() Persisted
		check   func(t *testing.T, s *Stats)
	}{
		{
			name:    "fresh Stats exports nothing",
			persist: func() Persisted { return New(Config{}).Export(at(0)) },
			check: func(t *testing.T, s *Stats) {
				if got := s.Snapshot(at(0)); got != idle {
					t.Errorf("got %+v, want %+v", got, idle)
				}
			},
		},
		{
			name:    "zero Persisted restores empty state",
			persist: func() Persisted { return Persisted{} },
			check: func(t *testing.T, s *Stats) {
				if got := s.Snapshot(at(exportAt)); got != idle {
					t.Errorf("got %+v, want %+v", got, idle)
				}
			},
		},
		{
			name: "unknown version restores empty state",
			persist: func() Persisted {
				p := history(t, Config{}).Export(at(exportAt))
				p.Version = 2
				return p
			},
			check: func(t *testing.T, s *Stats) {
				if got := s.Snapshot(at(exportAt)); got != idle {
					t.Errorf("got %+v, want %+v", got, idle)
				}
			},
		},
		{
			name: "saved in the future counts as no gap",
			persist: func() Persisted {
				p := history(t, Config{}).Export(at(exportAt))
				p.SavedAtUnixMs += int64(time.Hour / ms)
				return p
			},
			check: func(t *testing.T, s *Stats) {
				want := history(t, Config{}).Snapshot(at(exportAt))
				if got := s.Snapshot(at(exportAt)); got != want {
					t.Errorf("got %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "a wider window keeps every bucket by its start",
			cfg:  Config{Window: 120 * sec},
			persist: func() Persisted {
				return history(t, Config{}).Export(at(exportAt))
			},
			check: func(t *testing.T, s *Stats) {
				want := history(t, Config{}).Snapshot(at(exportAt))
				got := s.Snapshot(at(exportAt))
				if got.Requests != want.Requests || got.Failures != want.Failures || got.P90 != want.P90 {
					t.Errorf("got requests %d failures %d p90 %v, want %d, %d and %v",
						got.Requests, got.Failures, got.P90, want.Requests, want.Failures, want.P90)
				}
				// The oldest bucket began at t0; it must be gone 120s later.
				if got := s.Snapshot(at(120 * sec)); got.Requests >= want.Requests {
					t.Errorf("got %d requests at 120s, want fewer than %d", got.Requests, want.Requests)
				}
				if got := s.Snapshot(at(exportAt + 120*sec)); got.Requests != 0 {
					t.Errorf("got %d requests 120s after export, want 0", got.Requests)
				}
			},
		},
		{
			name: "invalid entries are skipped",
			persist: func() Persisted {
				return Persisted{
					Version: 1, SavedAtUnixMs: at(exportAt).UnixMilli(), BucketMs: 5000,
					Buckets: []PersistedBucket{
						{StartAgoMs: 1000, Successes: -5, Failures: 1},
						{StartAgoMs: 6000, Successes: 3, Failures: 1, Latencies: []PersistedBin{
							{Us: -1, Count: 9}, {Us: 100_000, Count: 3}, {Us: 50, Count: 0},
						}},
					},
					LatencyEMANs:   -4,
					SinceSuccessMs: -7,
				}
			},
			check: func(t *testing.T, s *Stats) {
				got := s.Snapshot(at(exportAt))
				if got.Requests != 4 || got.Failures != 1 {
					t.Errorf("got requests %d failures %d, want 4 and 1", got.Requests, got.Failures)
				}
				if got.P50 < 90*ms || got.P50 > 111*ms {
					t.Errorf("got p50 %v, want about 100ms", got.P50)
				}
				if got.LatencyEMA != 0 || got.SinceSuccess != -1 || got.Recency != 0.5 {
					t.Errorf("got EMA %v since %v recency %v, want 0, -1 and 0.5", got.LatencyEMA, got.SinceSuccess, got.Recency)
				}
			},
		},
		{
			name: "restore replaces existing state",
			persist: func() Persisted {
				s := New(Config{})
				s.Observe(at(exportAt), outcome.ServerError, 0)
				return s.Export(at(exportAt))
			},
			check: func(t *testing.T, s *Stats) {
				got := s.Snapshot(at(exportAt))
				if got.Requests != 1 || got.Failures != 1 || got.SinceSuccess != -1 || got.LatencyEMA != 0 {
					t.Errorf("got %+v, want one failure and nothing else", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.cfg)
			for i := range 50 { // state that Restore must replace
				s.Observe(at(exportAt-time.Duration(i)*ms), outcome.OK, time.Second)
			}
			s.Restore(at(exportAt), tt.persist())
			tt.check(t, s)
		})
	}
}

func TestPersistedJSON(t *testing.T) {
	p := history(t, Config{}).Export(at(exportAt))
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("marshalling: %v", err)
	}
	for _, key := range []string{`"version":1`, `"saved_at_unix_ms":`, `"bucket_ms":5000`, `"buckets":`,
		`"start_ago_ms":`, `"successes":`, `"failures":`, `"latencies":`, `"us":`, `"n":`,
		`"latency_ema_ns":`, `"since_success_ms":4000`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("got JSON without %s: %s", key, data)
		}
	}
	var back Persisted
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("unmarshalling: %v", err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Errorf("got %+v after a JSON round trip, want %+v", back, p)
	}
	// Buckets are oldest first and within the window.
	for i, b := range p.Buckets {
		if b.StartAgoMs < 0 || b.StartAgoMs >= 60_000 {
			t.Errorf("got bucket %d starting %dms ago, want within the window", i, b.StartAgoMs)
		}
		if i > 0 && b.StartAgoMs >= p.Buckets[i-1].StartAgoMs {
			t.Errorf("got bucket %d (%dms ago) after bucket %d (%dms ago), want oldest first",
				i, b.StartAgoMs, i-1, p.Buckets[i-1].StartAgoMs)
		}
	}
}
