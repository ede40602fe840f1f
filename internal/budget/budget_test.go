package budget

import (
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestPeriods(t *testing.T) {
	now := at("2025-06-04T15:04:05Z") // a Wednesday
	tests := []struct {
		p          Period
		start, end string
		id         string
	}{
		{Day, "2025-06-04T00:00:00Z", "2025-06-05T00:00:00Z", "day:2025-06-04"},
		{Week, "2025-06-02T00:00:00Z", "2025-06-09T00:00:00Z", "week:2025-06-02"},
		{Month, "2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z", "month:2025-06"},
	}
	for _, tt := range tests {
		start := tt.p.Start(now)
		if !start.Equal(at(tt.start)) || !tt.p.End(start).Equal(at(tt.end)) || tt.p.ID(start) != tt.id {
			t.Errorf("%s: got %s to %s (%s), want %s to %s (%s)", tt.p, start, tt.p.End(start), tt.p.ID(start), tt.start, tt.end, tt.id)
		}
	}
	if s := Week.Start(at("2025-06-08T23:59:59Z")); !s.Equal(at("2025-06-02T00:00:00Z")) {
		t.Errorf("a Sunday's week starts %s, want the Monday before", s)
	}
	if s := Week.Start(at("2025-06-09T00:00:00+02:00")); !s.Equal(at("2025-06-02T00:00:00Z")) {
		t.Errorf("weeks are UTC: got %s", s)
	}
	if !Total.Start(now).IsZero() || !Total.End(time.Time{}).IsZero() || Total.ID(time.Time{}) != "total" {
		t.Error("Total has a start or an end")
	}
	for _, s := range []string{"", "day", "week", "month", "total"} {
		p, err := ParsePeriod(s)
		if err != nil || (s != "" && p.String() != s) || (s == "" && p != DefaultPeriod) {
			t.Errorf("ParsePeriod(%q) = %s, %v", s, p, err)
		}
	}
	if _, err := ParsePeriod("year"); err == nil {
		t.Error("ParsePeriod(year) = nil error")
	}
}

// step is one step of a budget's story: at a moment, a request reserves
// (its estimate, in dollars) and the verdict is want; or request n
// (counted from 0 among the admitted) settles at its cost.
type step struct {
	at      string
	reserve float64 // reserve this estimate
	want    Verdict
	settle  int // settle admitted request number settle-1 (1-based; 0: not a settle)
	cost    float64
	spend   float64 // the spend recorded after the step
	resetIn time.Duration
}

func TestBudgetSteps(t *testing.T) {
	tests := []struct {
		name   string
		limit  float64
		period Period
		steps  []step
	}{
		{"sequential $5 requests on $50 a day: 10 served, then exceeded until midnight", 50, Day, func() []step {
			var ss []step
			for i := range 10 {
				ss = append(ss, step{at: "2025-06-04T10:00:00Z", reserve: 20, want: Admitted},
					step{at: "2025-06-04T10:00:01Z", settle: i + 1, cost: 5, spend: float64(5 * (i + 1))})
			}
			return append(ss, step{at: "2025-06-04T22:00:00Z", reserve: 1, want: Exceeded, spend: 50, resetIn: 2 * time.Hour},
				step{at: "2025-06-05T00:00:00Z", reserve: 1, want: Admitted, spend: 0})
		}()},
		{"reservations in flight make others wait, never exceeded", 10, Day, []step{
			{at: "2025-06-04T10:00:00Z", reserve: 6, want: Admitted},
			{at: "2025-06-04T10:00:00Z", reserve: 6, want: Admitted},
			{at: "2025-06-04T10:00:00Z", reserve: 6, want: Wait},
			{at: "2025-06-04T10:00:01Z", settle: 1, cost: 1, spend: 1},
			{at: "2025-06-04T10:00:01Z", reserve: 6, want: Admitted}, // 1 spent + 6 in flight < 10
			{at: "2025-06-04T10:00:01Z", reserve: 6, want: Wait},     // 1 + 12
			{at: "2025-06-04T10:00:02Z", settle: 2, cost: 4, spend: 5},
			{at: "2025-06-04T10:00:02Z", settle: 3, cost: 4, spend: 9},
			{at: "2025-06-04T10:00:02Z", reserve: 6, want: Admitted}, // 9 < 10: admitted, may pass it
			{at: "2025-06-04T10:00:03Z", settle: 4, cost: 3, spend: 12},
			{at: "2025-06-04T10:00:03Z", reserve: 6, want: Exceeded, spend: 12, resetIn: 14*time.Hour - 3*time.Second},
		}},
		{"one request may pass the budget by its own cost", 10, Month, []step{
			{at: "2025-06-04T10:00:00Z", reserve: 100, want: Admitted},
			{at: "2025-06-04T10:00:00Z", reserve: 1, want: Wait},
			{at: "2025-06-04T10:00:01Z", settle: 1, cost: 30, spend: 30},
			{at: "2025-06-30T23:59:59Z", reserve: 1, want: Exceeded, spend: 30, resetIn: time.Second},
			{at: "2025-07-01T00:00:00Z", reserve: 1, want: Admitted, spend: 0},
		}},
		{"a request settling after midnight counts in the new day", 10, Day, []step{
			{at: "2025-06-04T23:59:00Z", reserve: 5, want: Admitted},
			{at: "2025-06-05T00:00:01Z", settle: 1, cost: 10, spend: 10},
			{at: "2025-06-05T00:00:02Z", reserve: 1, want: Exceeded, spend: 10, resetIn: 24*time.Hour - 2*time.Second},
		}},
		{"a clock set back does not reopen yesterday", 10, Day, []step{
			{at: "2025-06-05T00:00:01Z", reserve: 1, want: Admitted},
			{at: "2025-06-05T00:00:02Z", settle: 1, cost: 10, spend: 10},
			{at: "2025-06-04T23:59:59Z", reserve: 1, want: Exceeded, spend: 10, resetIn: 24*time.Hour + time.Second},
		}},
		{"total never resets", 1, Total, []step{
			{at: "2025-06-04T10:00:00Z", reserve: 1, want: Admitted},
			{at: "2025-06-04T10:00:00Z", settle: 1, cost: 1, spend: 1},
			{at: "2030-01-01T00:00:00Z", reserve: 1, want: Exceeded, spend: 1, resetIn: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(ToNano(tt.limit), tt.period)
			var held []Reservation
			for i, s := range tt.steps {
				now := at(s.at)
				if s.settle > 0 {
					b.Settle(now, held[s.settle-1], ToNano(s.cost))
				} else {
					d := b.Reserve(now, ToNano(s.reserve))
					if d.Verdict != s.want {
						t.Fatalf("step %d at %s: got verdict %d, want %d", i, s.at, d.Verdict, s.want)
					}
					switch d.Verdict {
					case Admitted:
						held = append(held, d.Reservation)
					case Wait:
						if d.Settled == nil {
							t.Fatalf("step %d: a wait without a channel", i)
						}
					case Exceeded:
						if d.ResetIn != s.resetIn {
							t.Errorf("step %d: reset in %s, want %s", i, d.ResetIn, s.resetIn)
						}
					}
					if s.want != Exceeded && s.spend == 0 {
						continue // the step says nothing about the spend
					}
				}
				if got := b.Snapshot(now).Spend; got != ToNano(s.spend) {
					t.Errorf("step %d at %s: spend %g, want %g", i, s.at, USD(got), s.spend)
				}
			}
		})
	}
}

// TestWaitWakes: a request told to wait is woken by the next settlement.
func TestWaitWakes(t *testing.T) {
	b := New(ToNano(1), Day)
	now := at("2025-06-04T10:00:00Z")
	first := b.Reserve(now, ToNano(2))
	d := b.Reserve(now, ToNano(1))
	if d.Verdict != Wait {
		t.Fatalf("got verdict %d, want Wait", d.Verdict)
	}
	select {
	case <-d.Settled:
		t.Fatal("woken before any settlement")
	default:
	}
	b.Settle(now, first.Reservation, ToNano(0.5))
	select {
	case <-d.Settled:
	default:
		t.Fatal("not woken by the settlement")
	}
	if d := b.Reserve(now, ToNano(1)); d.Verdict != Admitted {
		t.Errorf("after the settlement: verdict %d, want Admitted", d.Verdict)
	}
}

// TestFleetNumber: the spend follows the fleet's number plus what this
// process recorded and the fleet has not acknowledged; an amount that
// failed to reach the fleet is sent again; a period that ended drops it.
func TestFleetNumber(t *testing.T) {
	b := NewShared(ToNano(50), Day)
	now := at("2025-06-04T10:00:00Z")
	id := b.ID(now)
	b.Observe(now, id, ToNano(20)) // the others spent 20
	if got := b.Snapshot(now).Spend; got != ToNano(20) {
		t.Fatalf("spend %g, want 20", USD(got))
	}
	d := b.Reserve(now, ToNano(1))
	b.Settle(now, d.Reservation, ToNano(5))
	b.Observe(now, id, ToNano(21)) // the others spent 1 more; our 5 not yet in
	if got := b.Snapshot(now).Spend; got != ToNano(26) {
		t.Fatalf("spend %g, want 26 (21 + our 5)", USD(got))
	}
	b.Observe(now, id, 0) // a Redis that lost its data
	if got := b.Snapshot(now).Spend; got != ToNano(26) {
		t.Fatalf("spend %g after the fleet's number was lost, want 26 still", USD(got))
	}
	gotID, amount := b.TakeUnsent(now)
	if gotID != id || amount != ToNano(5) {
		t.Fatalf("unsent %s %g, want %s 5", gotID, USD(amount), id)
	}
	b.Sent(id, amount, 0, false) // Redis down
	if _, again := b.TakeUnsent(now); again != ToNano(5) {
		t.Fatalf("after a failure: unsent %g, want 5 again", USD(again))
	}
	b.Sent(id, ToNano(5), ToNano(30), true) // the fleet's number is 30 with ours
	if got := b.Snapshot(now).Spend; got != ToNano(30) {
		t.Errorf("spend %g, want 30", USD(got))
	}
	b.Observe(now, "day:2025-06-03", ToNano(49)) // another period's number
	if got := b.Snapshot(now).Spend; got != ToNano(30) {
		t.Errorf("spend %g after another period's number, want 30", USD(got))
	}
	b.Settle(now, Reservation{}, ToNano(2))
	next := at("2025-06-05T00:00:01Z")
	if _, left := b.TakeUnsent(next); left != 0 {
		t.Errorf("unsent %g in the next day, want 0", USD(left))
	}
}

func TestExportRestore(t *testing.T) {
	now := at("2025-06-04T10:00:00Z")
	b := NewShared(ToNano(50), Day)
	d := b.Reserve(now, ToNano(1))
	b.Settle(now, d.Reservation, ToNano(7))
	saved := b.Export(now)
	if saved != (Saved{Period: "day:2025-06-04", Spend: ToNano(7), Unsent: ToNano(7)}) {
		t.Fatalf("exported %+v", saved)
	}
	c := NewShared(ToNano(50), Day)
	if !c.Restore(now.Add(time.Hour), saved) || c.Snapshot(now).Spend != ToNano(7) {
		t.Errorf("same day: not restored")
	}
	if _, unsent := c.TakeUnsent(now); unsent != ToNano(7) {
		t.Errorf("restored unsent %g, want 7", USD(unsent))
	}
	e := New(ToNano(50), Day)
	if e.Restore(at("2025-06-05T00:00:00Z"), saved) || e.Snapshot(at("2025-06-05T00:00:00Z")).Spend != 0 {
		t.Errorf("next day: restored yesterday's spend")
	}
}
