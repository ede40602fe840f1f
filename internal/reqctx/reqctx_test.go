package reqctx

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them (an
// AfterFunc's, a fallback parent watch's).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type valueKey struct{}

var errMine = errors.New("mine")

// ended says whether ctx's Done is closed.
func ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

func TestCancel(t *testing.T) {
	for _, c := range []struct {
		name      string
		cause     error
		wantCause error
	}{
		{"nil cause", nil, context.Canceled},
		{"a cause", errMine, errMine},
	} {
		t.Run(c.name, func(t *testing.T) {
			var x Ctx
			if x.Err() != nil || x.Cause() != nil || Cause(&x) != nil || ended(&x) {
				t.Fatalf("a fresh Ctx has ended: err %v, cause %v", x.Err(), x.Cause())
			}
			x.Cancel(c.cause)
			x.Cancel(errors.New("second")) // the first end wins
			if got := x.Err(); got != context.Canceled {
				t.Errorf("Err() = %v, want %v", got, context.Canceled)
			}
			if got := x.Cause(); got != c.wantCause {
				t.Errorf("Cause() = %v, want %v", got, c.wantCause)
			}
			if got := Cause(&x); got != c.wantCause {
				t.Errorf("reqctx.Cause = %v, want %v", got, c.wantCause)
			}
			if !ended(&x) {
				t.Error("Done not closed")
			}
		})
	}
}

// TestDoneMadeBeforeEnd: a Done channel handed out before the end is the
// one closed.
func TestDoneMadeBeforeEnd(t *testing.T) {
	var x Ctx
	d := x.Done()
	if d != x.Done() {
		t.Fatal("Done changed between calls")
	}
	x.Cancel(nil)
	select {
	case <-d:
	default:
		t.Fatal("the channel handed out before Cancel is not closed")
	}
}

func TestDeadline(t *testing.T) {
	t.Run("fires", func(t *testing.T) {
		var x Ctx
		at := time.Now().Add(10 * time.Millisecond)
		x.SetDeadline(at)
		if d, ok := x.Deadline(); !ok || !d.Equal(at) {
			t.Fatalf("Deadline() = %v %v, want %v true", d, ok, at)
		}
		<-x.Done()
		if x.Err() != context.DeadlineExceeded || x.Cause() != context.DeadlineExceeded {
			t.Errorf("err %v cause %v, want DeadlineExceeded for both", x.Err(), x.Cause())
		}
	})
	t.Run("passed", func(t *testing.T) {
		var x Ctx
		x.SetDeadline(time.Now().Add(-time.Second))
		if x.Err() != context.DeadlineExceeded {
			t.Errorf("err %v, want DeadlineExceeded at once", x.Err())
		}
	})
	t.Run("cancel stops the timer", func(t *testing.T) {
		var x Ctx
		x.SetDeadline(time.Now().Add(time.Hour))
		x.Cancel(errMine)
		x.mu.Lock()
		timer := x.timer
		x.mu.Unlock()
		if timer != nil {
			t.Error("timer kept after Cancel")
		}
		if x.Cause() != errMine {
			t.Errorf("cause %v, want %v", x.Cause(), errMine)
		}
	})
	t.Run("parent's comes first", func(t *testing.T) {
		parent, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
		defer cancel()
		pd, _ := parent.Deadline()
		x := New(parent)
		defer x.Cancel(nil)
		x.SetDeadline(pd.Add(time.Hour))
		if d, ok := x.Deadline(); !ok || !d.Equal(pd) {
			t.Errorf("Deadline() = %v %v, want the parent's %v", d, ok, pd)
		}
		if x.timer != nil {
			t.Error("a timer for a deadline after the parent's")
		}
	})
	t.Run("own comes first", func(t *testing.T) {
		var p Ctx
		p.SetDeadline(time.Now().Add(time.Hour))
		defer p.Cancel(nil)
		x := New(&p)
		at := time.Now().Add(time.Minute)
		x.SetDeadline(at)
		defer x.Cancel(nil)
		if d, ok := x.Deadline(); !ok || !d.Equal(at) {
			t.Errorf("Deadline() = %v %v, want %v", d, ok, at)
		}
	})
}

// TestParent: a Ctx ends with its parent, with the parent's error and
// cause, whatever the parent is; and its own end leaves the parent alive.
func TestParent(t *testing.T) {
	for _, c := range []struct {
		name string
		// parent is the Ctx's parent and how to end it with errMine as
		// its cause (or DeadlineExceeded when wantErr says so).
		parent  func() (context.Context, func())
		wantErr error
	}{
		{"Ctx", func() (context.Context, func()) {
			p := New(context.Background())
			return p, func() { p.Cancel(errMine) }
		}, context.Canceled},
		{"values over a Ctx", func() (context.Context, func()) {
			p := New(context.Background())
			return context.WithValue(p, valueKey{}, 1), func() { p.Cancel(errMine) }
		}, context.Canceled},
		{"Ctx's deadline", func() (context.Context, func()) {
			p := New(context.Background())
			return p, func() { p.SetDeadline(time.Now()) }
		}, context.DeadlineExceeded},
		{"standard library", func() (context.Context, func()) {
			p, cancel := context.WithCancelCause(context.Background())
			return p, func() { cancel(errMine) }
		}, context.Canceled},
		{"standard library over a Ctx", func() (context.Context, func()) {
			p := New(context.Background())
			q, cancel := context.WithCancelCause(p)
			return q, func() { cancel(errMine) }
		}, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent, end := c.parent()
			x := New(parent)
			if ended(x) {
				t.Fatal("ended before its parent")
			}
			y := New(x) // a grandchild ends too
			end()
			<-x.Done() // a standard library parent ends it from a goroutine
			<-y.Done()
			wantCause := errMine
			if c.wantErr == context.DeadlineExceeded {
				wantCause = context.DeadlineExceeded
			}
			for _, z := range []*Ctx{x, y} {
				if z.Err() != c.wantErr || z.Cause() != wantCause {
					t.Errorf("err %v cause %v, want %v and %v", z.Err(), z.Cause(), c.wantErr, wantCause)
				}
			}
			if got := y.Value(valueKey{}); c.name == "values over a Ctx" && got != 1 {
				t.Errorf("Value through the Ctx = %v, want the parent's 1", got)
			}
		})
	}
	t.Run("child's end leaves the parent", func(t *testing.T) {
		var p Ctx
		x := New(&p)
		x.Cancel(errMine)
		if p.Err() != nil {
			t.Fatal("the parent ended with its child")
		}
		p.mu.Lock()
		n := p.w
		p.mu.Unlock()
		if n[0].id != 0 || n[1].id != 0 {
			t.Error("the ended child is still registered with its parent")
		}
		p.Cancel(nil)
		if x.Cause() != errMine {
			t.Errorf("cause %v, want the child's own %v", x.Cause(), errMine)
		}
	})
	t.Run("parent ended first", func(t *testing.T) {
		var p Ctx
		p.Cancel(errMine)
		x := New(&p)
		if x.Cause() != errMine {
			t.Errorf("cause %v, want the parent's %v at once", x.Cause(), errMine)
		}
	})
	t.Run("never-ending parent", func(t *testing.T) {
		x := New(context.Background())
		if x.detach != nil || x.up != nil {
			t.Error("a watch on a parent that never ends")
		}
		x.Cancel(nil)
	})
}

// TestStandardChildren: contexts of the standard library derived from a
// Ctx end with it (through its AfterFunc method).
func TestStandardChildren(t *testing.T) {
	var p Ctx
	child, cancel := context.WithCancel(&p)
	defer cancel()
	ran := make(chan struct{})
	context.AfterFunc(&p, func() { close(ran) })
	p.Cancel(errMine)
	<-child.Done()
	<-ran
	if child.Err() != context.Canceled {
		t.Errorf("child err %v, want Canceled", child.Err())
	}
}

func TestWatch(t *testing.T) {
	t.Run("runs once, at the end", func(t *testing.T) {
		var x Ctx
		var n atomic.Int32
		for range 5 { // past the inline slots
			x.Watch(func() { n.Add(1) })
		}
		if n.Load() != 0 {
			t.Fatal("ran before the end")
		}
		x.Cancel(nil)
		x.Cancel(nil)
		if got := n.Load(); got != 5 {
			t.Errorf("ran %d times, want 5", got)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		var x Ctx
		ran := 0
		ws := make([]uint64, 4)
		for i := range ws {
			ws[i] = x.Watch(func() { ran++ })
		}
		if !x.Unwatch(ws[0]) || !x.Unwatch(ws[3]) {
			t.Error("Unwatch before the end = false, want true")
		}
		if x.Unwatch(ws[0]) {
			t.Error("a second Unwatch = true, want false")
		}
		x.Cancel(nil)
		if ran != 2 {
			t.Errorf("ran %d, want the 2 not stopped", ran)
		}
		if x.Unwatch(ws[1]) {
			t.Error("Unwatch after the function ran = true, want false")
		}
	})
	t.Run("after the end", func(t *testing.T) {
		var x Ctx
		x.Cancel(nil)
		ran := false
		id := x.Watch(func() { ran = true })
		if !ran {
			t.Error("did not run at once on an ended Ctx")
		}
		if id != 0 {
			t.Errorf("id %d of a watch on an ended Ctx, want 0", id)
		}
		if x.Unwatch(id) {
			t.Error("Unwatch = true after it ran")
		}
		var y Ctx
		y.Watch(func() {})
		if y.Unwatch(0) {
			t.Error("Unwatch(0) = true, want false (a free slot is not a watch)")
		}
	})
}

func TestAfterFunc(t *testing.T) {
	t.Run("runs in its own goroutine", func(t *testing.T) {
		var x Ctx
		release := make(chan struct{})
		ran := make(chan struct{})
		x.AfterFunc(func() { <-release; close(ran) })
		x.Cancel(nil) // returns although f blocks
		close(release)
		<-ran
	})
	t.Run("stop", func(t *testing.T) {
		var x Ctx
		stop := x.AfterFunc(func() { t.Error("a stopped function ran") })
		if !stop() {
			t.Error("stop() = false before the end")
		}
		if stop() {
			t.Error("a second stop() = true")
		}
		x.Cancel(nil)
	})
	t.Run("stop after the end", func(t *testing.T) {
		var x Ctx
		ran := make(chan struct{})
		stop := x.AfterFunc(func() { close(ran) })
		x.Cancel(nil)
		<-ran
		if stop() {
			t.Error("stop() = true after f started")
		}
	})
}

// TestOf finds the Ctx under values only.
func TestOf(t *testing.T) {
	var x Ctx
	defer x.Cancel(nil)
	if Of(&x) != &x {
		t.Error("Of(Ctx) is not the Ctx")
	}
	if Of(context.WithValue(&x, valueKey{}, 1)) != &x {
		t.Error("Of(values over Ctx) is not the Ctx")
	}
	c, cancel := context.WithCancel(&x)
	defer cancel()
	if Of(c) != nil {
		t.Error("Of found a Ctx under a context that ends on its own")
	}
	if Of(context.Background()) != nil {
		t.Error("Of(Background) is not nil")
	}
	cc, cancelCause := context.WithCancelCause(&x)
	cancelCause(errMine)
	if got := Cause(cc); got != errMine {
		t.Errorf("Cause of a standard library context = %v, want %v", got, errMine)
	}
}

// TestRace ends a tree of Ctx while watches are added and stopped and
// children made, from several goroutines (run with -race).
func TestRace(t *testing.T) {
	for range 200 {
		var root Ctx
		root.SetDeadline(time.Now().Add(time.Duration(50) * time.Microsecond))
		var wg sync.WaitGroup
		var ran, stopped atomic.Int32
		for range 4 {
			wg.Go(func() {
				x := New(&root)
				for range 8 {
					id := x.Watch(func() { ran.Add(1) })
					if x.Unwatch(id) {
						stopped.Add(1)
					}
					_ = x.Err()
					_ = x.Done()
				}
				x.Cancel(errMine)
			})
		}
		wg.Go(func() { root.Cancel(nil) })
		wg.Wait()
		if ran.Load()+stopped.Load() != 32 {
			t.Fatalf("%d ran and %d stopped, want 32 in all", ran.Load(), stopped.Load())
		}
	}
}

// TestAllocations: a child Ctx embedded in its owner's struct, linked to
// its parent Ctx, costs nothing; so does a Watch, stopped or run.
func TestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	type owner struct{ c Ctx }
	var root Ctx
	defer root.Cancel(nil)
	f := func() {}
	o := new(owner) // the owner's own allocation, made once
	n := testing.AllocsPerRun(100, func() {
		*o = owner{}
		o.c.Init(&root)
		id := o.c.Watch(f)
		_ = o.c.Err()
		o.c.Unwatch(id)
		o.c.Watch(f)
		o.c.Cancel(errMine)
	})
	if n != 0 {
		t.Errorf("%.0f allocations, want 0", n)
	}
}
