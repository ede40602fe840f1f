package reqctx

import (
	"context"
	"testing"
	"time"
)

// bell is an Alarm that counts its rings and may lend again from Ring.
type bell struct {
	rings int
	again func() // called by Ring, when not nil
	rang  chan struct{}
}

func (b *bell) Ring() {
	b.rings++
	if b.again != nil {
		b.again()
	}
	if b.rang != nil {
		b.rang <- struct{}{}
	}
}

// armedAt is when x's timer fires (zero: not armed).
func armedAt(x *Ctx) time.Time {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.armed
}

// TestLend: the request's one timer rings the alarm lent to an attempt at
// its time, keeps the request's deadline, and, firing before anything is
// due (the alarm moved later, or was given back, or disarmed), is set
// again for what is due first. The clock is injected: ringAt is the
// timer's firing at a given time; the real timer, an hour or more away,
// never fires during the test.
func TestLend(t *testing.T) {
	t0 := time.Now()
	deadline := t0.Add(2 * time.Hour)
	at := t0.Add(time.Hour)
	for _, c := range []struct {
		name string
		// do lends (or not) and then fires the timer at the returned time.
		do        func(x *Ctx, b *bell) time.Time
		rings     int
		err       error     // x's error after the firing
		wantArmed time.Time // when the timer is set for afterwards
	}{
		{"due alarm rings, then the deadline", func(x *Ctx, b *bell) time.Time {
			x.Lend(b, at)
			return at
		}, 1, nil, deadline},
		{"moved later: an early firing sets the timer for it", func(x *Ctx, b *bell) time.Time {
			x.Lend(b, at)
			x.Lend(b, at.Add(time.Minute))
			if got := armedAt(x); !got.Equal(at) {
				t.Errorf("moved later: the timer was reset to %v, want left at %v", got, at)
			}
			return at
		}, 0, nil, at.Add(time.Minute)},
		{"moved earlier: the timer is moved", func(x *Ctx, b *bell) time.Time {
			x.Lend(b, at)
			x.Lend(b, at.Add(-time.Minute))
			if got := armedAt(x); !got.Equal(at.Add(-time.Minute)) {
				t.Errorf("moved earlier: the timer fires at %v, want %v", got, at.Add(-time.Minute))
			}
			return at.Add(-time.Minute)
		}, 1, nil, deadline},
		{"returned: the timer is left, then set for the deadline", func(x *Ctx, b *bell) time.Time {
			x.Lend(b, at)
			x.Return(b)
			if got := armedAt(x); !got.Equal(at) {
				t.Errorf("returned: the timer was reset to %v, want left at %v", got, at)
			}
			return at
		}, 0, nil, deadline},
		{"disarmed: no ring, the slot kept", func(x *Ctx, b *bell) time.Time {
			x.Lend(b, at)
			if !x.Disarm(b) {
				t.Error("Disarm of a pending alarm = false")
			}
			if x.Disarm(b) {
				t.Error("Disarm of a disarmed alarm = true")
			}
			if x.Lend(&bell{}, at) {
				t.Error("a disarmed alarm's slot was lent to another")
			}
			return at
		}, 0, nil, deadline},
		{"after the deadline: the deadline ends x, no ring", func(x *Ctx, b *bell) time.Time {
			x.Lend(b, deadline.Add(time.Hour))
			if got := armedAt(x); !got.Equal(deadline) {
				t.Errorf("an alarm after the deadline moved the timer to %v", got)
			}
			return deadline
		}, 0, context.DeadlineExceeded, time.Time{}},
		{"Ring lends again", func(x *Ctx, b *bell) time.Time {
			x.Lend(b, at)
			b.again = func() { x.Lend(b, at.Add(time.Second)) }
			return at
		}, 1, nil, at.Add(time.Second)},
		{"Ring ends x", func(x *Ctx, b *bell) time.Time {
			x.Lend(b, at)
			b.again = func() { x.Cancel(errMine) }
			return at
		}, 1, context.Canceled, time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var x Ctx
			defer x.Cancel(nil)
			x.SetDeadline(deadline)
			if got := armedAt(&x); !got.Equal(deadline) {
				t.Fatalf("SetDeadline set the timer for %v, want %v", got, deadline)
			}
			b := &bell{}
			x.ringAt(c.do(&x, b))
			if b.rings != c.rings {
				t.Errorf("%d rings, want %d", b.rings, c.rings)
			}
			if x.Err() != c.err {
				t.Errorf("err %v, want %v", x.Err(), c.err)
			}
			if got := armedAt(&x); !got.Equal(c.wantArmed) {
				t.Errorf("the timer is set for %v, want %v", got, c.wantArmed)
			}
		})
	}
}

// TestLendSlot: the slot is one borrower's until it gives it back; a
// second (a hedge's twin) is refused meanwhile; an ended Ctx lends nothing.
func TestLendSlot(t *testing.T) {
	var x Ctx
	defer x.Cancel(nil)
	x.SetDeadline(time.Now().Add(time.Hour))
	first, second := &bell{}, &bell{}
	if !x.Lend(first, time.Now().Add(time.Minute)) {
		t.Fatal("a free slot was refused")
	}
	if x.Lend(second, time.Now().Add(time.Minute)) {
		t.Error("a held slot was lent to another")
	}
	if x.Disarm(second) {
		t.Error("Disarm by one that does not hold the slot = true")
	}
	x.Return(second) // not its own: nothing happens
	if x.Lend(second, time.Now().Add(time.Minute)) {
		t.Error("another's Return freed the slot")
	}
	x.Return(first)
	if !x.Lend(second, time.Now().Add(time.Minute)) {
		t.Error("a returned slot was refused")
	}
	x.Cancel(nil)
	x.mu.Lock()
	timer, alarm := x.timer, x.alarm
	x.mu.Unlock()
	if timer != nil || alarm != nil {
		t.Errorf("after Cancel: timer %v, alarm %v, want none", timer, alarm)
	}
}

// TestLendTimer: the real timer rings a lent alarm at its (short) time on
// a Ctx with a far deadline, and on one without a deadline (the Ctx makes
// its timer then); a deadline before the alarm ends the Ctx first.
func TestLendTimer(t *testing.T) {
	for _, deadline := range []time.Duration{time.Hour, 0} {
		var x Ctx
		if deadline > 0 {
			x.SetDeadline(time.Now().Add(deadline))
		}
		b := &bell{rang: make(chan struct{}, 1)}
		x.Lend(b, time.Now().Add(time.Millisecond))
		<-b.rang
		if x.Err() != nil {
			t.Errorf("deadline %v: the alarm ended the Ctx: %v", deadline, x.Err())
		}
		x.Cancel(nil)
	}
	var x Ctx
	x.SetDeadline(time.Now().Add(time.Millisecond))
	b := &bell{}
	x.Lend(b, time.Now().Add(time.Hour))
	<-x.Done()
	if x.Err() != context.DeadlineExceeded || b.rings != 0 {
		t.Errorf("err %v after %d rings, want DeadlineExceeded and none", x.Err(), b.rings)
	}
}
