package reqctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Ctx is a context.Context its owner ends (Cancel, or a deadline), and
// that ends with its parent. The zero Ctx is a context without a parent
// that ends only when cancelled; Init gives it one. A Ctx must not be
// copied once used.
type Ctx struct {
	parent context.Context // nil: none; set by Init before c is shared
	ended  atomic.Bool     // err is set: Err's lock-free look

	mu       sync.Mutex    // guards everything below
	done     chan struct{} // nil until asked for or ended
	err      error
	cause    error
	deadline time.Time   // c's own; zero: none
	timer    *time.Timer // ends c at deadline, rings alarm; nil once ended
	armed    time.Time   // when timer fires; zero: not armed (it fired, or none)
	alarm    Alarm       // the slot's borrower (Lend); nil: free
	alarmAt  time.Time   // when alarm rings; zero: it rang or was disarmed
	up       *Ctx        // the Ctx parent watched directly, as upID
	upID     uint64
	detach   func() bool // stops the watch of a parent that is not a Ctx
	next     uint64      // the last watcher id given
	w        [2]watcher  // watchers; id 0: a free slot
	more     []watcher   // watchers beyond two
}

// watcher is one function or child Ctx to end with a Ctx.
type watcher struct {
	id    uint64
	f     func()
	child *Ctx
}

// ctxKey is the Value key a Ctx answers with itself.
type ctxKey struct{}

// closed is the Done channel of a Ctx ended before anyone asked for it.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

var _ context.Context = (*Ctx)(nil)

// New is a Ctx with parent, allocated: for a level that has no
// per-request struct to embed one in.
func New(parent context.Context) *Ctx {
	c := &Ctx{}
	c.Init(parent)
	return c
}

// Init makes parent (nil, as context.Background(): none) c's parent: c ends when it does, with its
// error and cause (at once if it has ended). Call it once, on a zero Ctx,
// before c is shared.
func (c *Ctx) Init(parent context.Context) {
	c.parent = parent
	if parent == nil {
		return
	}
	if p := Of(parent); p != nil {
		c.mu.Lock()
		id, err, cause := p.add(watcher{child: c})
		if id != 0 {
			c.up, c.upID = p, id
		}
		c.mu.Unlock()
		if id == 0 {
			c.end(err, cause)
		}
		return
	}
	if parent.Done() == nil {
		return // never ends
	}
	c.mu.Lock()
	c.detach = context.AfterFunc(parent, func() { c.end(parent.Err(), Cause(parent)) })
	c.mu.Unlock()
}

// Of is the Ctx that ctx is, or that ctx only adds values to (its Done is
// the Ctx's); nil when there is none. Looking through a wrapper asks the
// Ctx for its Done channel once.
func Of(ctx context.Context) *Ctx {
	if c, ok := ctx.(*Ctx); ok {
		return c
	}
	c, ok := ctx.Value(ctxKey{}).(*Ctx)
	if !ok || ctx.Done() != c.Done() {
		return nil
	}
	return c
}

// Cause is why ctx ended (nil while it has not), as context.Cause, but
// also for a Ctx, and a context that only adds values to one, whose cause
// context.Cause cannot see.
func Cause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if c := Of(ctx); c != nil {
		return c.Cause()
	}
	return context.Cause(ctx)
}

// Cancel ends c with context.Canceled and cause (context.Canceled when
// nil); after c has ended it does nothing.
func (c *Ctx) Cancel(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.end(context.Canceled, cause)
}

// SetDeadline ends c with context.DeadlineExceeded at t (at once when t
// has passed), unless its parent's deadline comes first: then c keeps
// that one, as context.WithDeadline does. Call it at most once.
func (c *Ctx) SetDeadline(t time.Time) {
	if c.parent != nil {
		if pd, ok := c.parent.Deadline(); ok && !t.Before(pd) {
			return
		}
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.deadline = t
	now := time.Now()
	past := !now.Before(t)
	if !past && (c.armed.IsZero() || t.Before(c.armed)) {
		c.arm(t, now)
	}
	c.mu.Unlock()
	if past {
		c.expire()
	}
}

func (c *Ctx) expire() { c.end(context.DeadlineExceeded, context.DeadlineExceeded) }

// Alarm is what borrows a Ctx's timer (Lend): Ring is called once its
// time has come, from the timer's goroutine, outside any lock.
type Alarm interface{ Ring() }

// Lend lends c's timer to a, to ring it at t (docs/ARCHITECTURE.md,
// "Request contexts"): an attempt's timeouts ride the request's timer
// instead of a timer of their own. c keeps ending at its deadline; the
// timer is moved earlier for a, never later, and when it fires before
// what is due (a moved a later, or gave the timer back) it is set again
// for the earliest of c's deadline and a's time: the timer is not reset
// when a's time moves later, so that an attempt that ends costs no
// change of the timer. The one slot is a's until Return; a, holding it,
// may Lend again (a new time, from Ring too). Lend reports false when
// another holds it (a hedge's twin then keeps a timer of its own). Once
// c has ended it does nothing.
func (c *Ctx) Lend(a Alarm, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.alarm != nil && c.alarm != a {
		return false
	}
	if c.err != nil {
		return true
	}
	c.alarm, c.alarmAt = a, t
	if c.armed.IsZero() || t.Before(c.armed) {
		c.arm(t, time.Now())
	}
	return true
}

// Disarm keeps a's alarm from ringing, a keeping the slot; it reports
// whether that stopped it (as time.Timer's Stop): false when it rang,
// was disarmed, or a does not hold the slot.
func (c *Ctx) Disarm(a Alarm) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.alarm != a || c.alarmAt.IsZero() {
		return false
	}
	c.alarmAt = time.Time{}
	return true
}

// Return gives the slot back when a holds it: its alarm will not ring.
// The timer is left as it is (set again to c's deadline when it fires).
func (c *Ctx) Return(a Alarm) {
	c.mu.Lock()
	if c.alarm == a {
		c.alarm, c.alarmAt = nil, time.Time{}
	}
	c.mu.Unlock()
}

// arm has c's timer fire at t, as read at now. c.mu is held.
func (c *Ctx) arm(t, now time.Time) {
	c.armed = t
	d := max(t.Sub(now), 0)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.ring)
		return
	}
	c.timer.Reset(d)
}

// ring is c's timer firing: c ends at its deadline, else a due alarm
// rings, else (it fired early) the timer is set again for what is due
// first.
func (c *Ctx) ring() { c.ringAt(time.Now()) }

// ringAt is ring with the clock read at now.
func (c *Ctx) ringAt(now time.Time) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.armed = time.Time{}
	if !c.deadline.IsZero() && !now.Before(c.deadline) {
		c.mu.Unlock()
		c.expire()
		return
	}
	a := c.alarm
	if a != nil && !c.alarmAt.IsZero() && !now.Before(c.alarmAt) {
		c.alarmAt = time.Time{}
		c.mu.Unlock()
		a.Ring()
		c.mu.Lock()
	}
	if c.err == nil && c.armed.IsZero() {
		next := c.deadline
		if at := c.alarmAt; c.alarm != nil && !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
		if !next.IsZero() {
			c.arm(next, now)
		}
	}
	c.mu.Unlock()
}

// end ends c with err and cause, unless it has ended: its Done closes,
// its timer stops, it leaves its parent, and then its watchers run (its
// children end with the same err and cause), outside the lock.
func (c *Ctx) end(err, cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err, c.cause = err, cause
	c.ended.Store(true)
	if c.done == nil {
		c.done = closed
	} else {
		close(c.done)
	}
	w, more := c.w, c.more
	c.w, c.more = [2]watcher{}, nil
	timer, up, upID, detach := c.timer, c.up, c.upID, c.detach
	c.timer, c.up, c.detach = nil, nil, nil
	c.alarm = nil
	c.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if up != nil {
		up.remove(upID)
	} else if detach != nil {
		detach()
	}
	w[0].run(err, cause)
	w[1].run(err, cause)
	for _, x := range more {
		x.run(err, cause)
	}
}

func (w watcher) run(err, cause error) {
	switch {
	case w.child != nil:
		w.child.end(err, cause)
	case w.f != nil:
		w.f()
	}
}

// add registers w and returns its id; 0 and c's error and cause when c
// has ended.
func (c *Ctx) add(w watcher) (id uint64, err, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err, c.cause
	}
	c.next++
	w.id = c.next
	switch {
	case c.w[0].id == 0:
		c.w[0] = w
	case c.w[1].id == 0:
		c.w[1] = w
	default:
		c.more = append(c.more, w)
	}
	return w.id, nil, nil
}

// remove unregisters the watcher id; false when it is not registered (it
// ran, or was removed).
func (c *Ctx) remove(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.w {
		if c.w[i].id == id {
			c.w[i] = watcher{}
			return true
		}
	}
	for i := range c.more {
		if c.more[i].id == id {
			last := len(c.more) - 1
			c.more[i] = c.more[last]
			c.more[last] = watcher{}
			c.more = c.more[:last]
			return true
		}
	}
	return false
}

// Watch has f called once c ends, synchronously in the goroutine that
// ends it, outside any lock: f must be short and must not block (the
// hang-up watcher or a timer may be that goroutine). id is for Unwatch;
// when c has ended, f runs now, in the caller's goroutine, and id is 0.
// Its types are the language's own, so that a package below this one
// (internal/h1) can use it through an interface of its own.
func (c *Ctx) Watch(f func()) (id uint64) {
	id, _, _ = c.add(watcher{f: f})
	if id == 0 {
		f()
	}
	return id
}

// Unwatch unregisters the watch id (0: none); true when that kept its
// function from running.
func (c *Ctx) Unwatch(id uint64) bool {
	if id == 0 {
		return false
	}
	return c.remove(id)
}

// AfterFunc has f called in a goroutine of its own once c ends (at once
// when it has), as context.AfterFunc, which calls it; stop unregisters it
// and says whether that kept f from being started.
func (c *Ctx) AfterFunc(f func()) (stop func() bool) {
	id := c.Watch(func() { go f() })
	return func() bool { return c.Unwatch(id) }
}

// Deadline is c's deadline, or its parent's when that comes first.
func (c *Ctx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	d := c.deadline
	c.mu.Unlock()
	if c.parent != nil {
		if pd, ok := c.parent.Deadline(); ok && (d.IsZero() || pd.Before(d)) {
			return pd, true
		}
	}
	return d, !d.IsZero()
}

// Done is closed when c ends.
func (c *Ctx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

// Err is nil until c ends, then context.Canceled or
// context.DeadlineExceeded.
func (c *Ctx) Err() error {
	if !c.ended.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Cause is why c ended (nil until it has): the cause given to Cancel, or
// its parent's, or context.DeadlineExceeded.
func (c *Ctx) Cause() error {
	if !c.ended.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Value is c itself for this package's key, else its parent's value.
func (c *Ctx) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return c
	}
	if c.parent == nil {
		return nil
	}
	return c.parent.Value(key)
}

// String names c, as the standard library's contexts do.
func (c *Ctx) String() string { return "reqctx.Ctx" }
