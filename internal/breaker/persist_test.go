package breaker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// restart is when the restored breaker starts: wall-clock only, like a
// reading in a new process.
var restart = time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)

// recorded returns a breaker on DefaultConfig whose transitions land in
// got.
func recorded(got *[]string) *Breaker {
	return New("p", DefaultConfig(), Options{OnStateChange: func(_ string, from, to State) {
		*got = append(*got, from.String()+"->"+to.String())
	}})
}

func TestRestore(t *testing.T) {
	tests := []struct {
		name   string
		p      Persisted
		state  State
		left   time.Duration
		trips  int
		kind   outcome.Kind // the OpenError's kind when not closed
		last   outcome.Kind
		change string // the transitions, in order
	}{
		{name: "open with its cooldown still ahead",
			p:     Persisted{State: "open", OpenUntil: restart.Add(20 * sec), Trips: 2, TripKind: "timeout", LastKind: "timeout"},
			state: Open, left: 20 * sec, trips: 2, kind: outcome.Timeout, last: outcome.Timeout,
			change: "closed->open"},
		{name: "open whose cooldown passed while down: the probe is due at once",
			p:     Persisted{State: "open", OpenUntil: restart.Add(-5 * sec), Trips: 1, TripKind: "server_error"},
			state: HalfOpen, trips: 1, kind: outcome.ServerError,
			change: "closed->open open->half_open"},
		{name: "half-open restores as open with the probe due",
			p:     Persisted{State: "half_open", OpenUntil: restart.Add(-sec), Trips: 3, TripKind: "network"},
			state: HalfOpen, trips: 3, kind: outcome.Network,
			change: "closed->open open->half_open"},
		{name: "a deadline past cooldown.max (wall clock set back) is capped",
			p:     Persisted{State: "open", OpenUntil: restart.Add(2 * time.Hour), Trips: 1, TripKind: "auth"},
			state: Open, left: 600 * sec, trips: 1, kind: outcome.Auth,
			change: "closed->open"},
		{name: "open without trips or kind counts as one unknown trip",
			p:     Persisted{State: "open", OpenUntil: restart.Add(sec)},
			state: Open, left: sec, trips: 1, kind: outcome.Unknown,
			change: "closed->open"},
		{name: "closed keeps only the last kind",
			p:     Persisted{State: "closed", LastKind: "overloaded"},
			state: Closed, last: outcome.Overloaded},
		{name: "a state this version does not know is closed",
			p:     Persisted{State: "ajar", OpenUntil: restart.Add(time.Minute), Trips: 4},
			state: Closed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			b := recorded(&got)
			b.Restore(restart, tt.p)
			s := b.Snapshot(restart)
			if s.State != tt.state || s.CooldownLeft != tt.left || s.ConsecutiveTrips != tt.trips || s.LastKind != tt.last {
				t.Errorf("got %s, left %s, trips %d, last %s; want %s, left %s, trips %d, last %s",
					s.State, s.CooldownLeft, s.ConsecutiveTrips, s.LastKind, tt.state, tt.left, tt.trips, tt.last)
			}
			if g := strings.Join(got, " "); g != tt.change {
				t.Errorf("transitions %q, want %q", g, tt.change)
			}
			_, err := b.Allow(restart)
			var oe *OpenError
			switch {
			case tt.state == Closed && err != nil:
				t.Errorf("Allow() = %v, want admitted", err)
			case tt.state != Closed && !errors.As(err, &oe):
				t.Errorf("Allow() = %v, want an *OpenError", err)
			case tt.state != Closed && (oe.Kind != tt.kind || oe.RetryIn != tt.left):
				t.Errorf("refused after %s in %s, want after %s in %s", oe.Kind, oe.RetryIn, tt.kind, tt.left)
			}
		})
	}
}

// TestExportRestoreAcrossRestart: a breaker that tripped, saved 10s into
// its 60s cooldown and loaded 15s after that in another process (JSON in
// between), is open with 35s left, its trips and kinds intact.
func TestExportRestoreAcrossRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New("p", DefaultConfig(), Options{})
		for range 5 {
			tk, _ := a.Allow(time.Now())
			a.Done(time.Now(), tk, outcome.Timeout, 0)
		}
		saved := time.Now().Add(10 * sec) // monotonic, as the router's clock
		data, err := json.Marshal(a.Export(saved))
		if err != nil {
			t.Fatal(err)
		}
		var p Persisted
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		if p.State != "open" || p.Trips != 1 || p.TripKind != "timeout" || p.LastKind != "timeout" {
			t.Errorf("exported %s", data)
		}
		b := New("p", DefaultConfig(), Options{})
		loaded := saved.Round(0).Add(15 * sec) // another process: wall clock only
		b.Restore(loaded, p)
		if s := b.Snapshot(loaded); s.State != Open || s.CooldownLeft != 35*sec || s.ConsecutiveTrips != 1 || s.LastKind != outcome.Timeout {
			t.Errorf("restored %+v, want open with 35s left, 1 trip, last timeout", s)
		}
		if s := b.Snapshot(loaded.Add(35 * sec)); s.State != HalfOpen {
			t.Errorf("at the end of the cooldown: %s, want half_open", s.State)
		}
	})
}

// TestExportHalfOpen: a half-open breaker saves its (past) deadline, so
// it comes back with the probe due at once.
func TestExportHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New("p", DefaultConfig(), Options{})
		tripNow(t, a)
		later := time.Now().Add(31 * sec)
		p := a.Export(later)
		if p.State != "half_open" || !p.OpenUntil.Before(later.Round(0)) {
			t.Errorf("exported %+v at %s, want half_open with a past deadline", p, later.Round(0))
		}
		b := New("p", DefaultConfig(), Options{})
		b.Restore(later, p)
		if wait, _ := b.NextProbe(later); wait != 0 {
			t.Errorf("restored half-open: next probe in %s, want 0", wait)
		}
	})
}

// TestRestoredTripsGrowCooldown: a breaker restored with 2 trips whose
// probe then fails reopens with base × multiplier^2 (the third trip in a
// row), not the base of a first trip.
func TestRestoredTripsGrowCooldown(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Cooldown.Failure, cfg.Cooldown.Multiplier = 10*sec, 2
	for _, tc := range []struct {
		trips int
		want  time.Duration
	}{{0, 20 * sec}, {1, 20 * sec}, {2, 40 * sec}, {5, 320 * sec}, {9, 600 * sec}} {
		t.Run(fmt.Sprint(tc.trips), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := New("p", cfg, Options{})
				now := time.Now()
				b.Restore(now, Persisted{State: "open", OpenUntil: now.Round(0).Add(-sec), Trips: tc.trips, TripKind: "server_error"})
				ran, _ := b.Probe(context.Background(), func(context.Context) error { return errBoom })
				if !ran {
					t.Fatal("no probe ran on a restored breaker whose cooldown had passed")
				}
				s := b.Snapshot(time.Now())
				if s.State != Open || s.CooldownLeft != tc.want || s.ConsecutiveTrips != max(tc.trips, 1)+1 {
					t.Errorf("after a failed probe: %s, left %s, trips %d; want open, left %s, trips %d",
						s.State, s.CooldownLeft, s.ConsecutiveTrips, tc.want, max(tc.trips, 1)+1)
				}
			})
		})
	}
}
