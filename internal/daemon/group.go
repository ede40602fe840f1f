package daemon

import "context"

// A component is one part of the running router with a lifetime: the
// tracer, the fleet's Redis, the routing state, a listener, the state
// saver, the config watcher. Start runs the components in order and stops
// them in reverse (the shape of Prometheus' run.Group), so that a part is
// stopped only after everything started on top of it, and cleanup after a
// partial start is the same code as shutdown (docs/ARCHITECTURE.md,
// "Reload and shutdown").
type component struct {
	name string
	// start starts the part; nil has nothing to start. An error stops
	// every component started before it, in reverse.
	start func() error
	// stop stops the part within ctx (the shutdown's deadline); nil has
	// nothing to stop. It is called once, and only if start succeeded.
	stop func(ctx context.Context)
}

// group is the components started so far.
type group struct{ started []component }

// start starts cs in order. When one fails, the ones already started (by
// this call and earlier ones) are stopped in reverse, and its error is
// returned as it is (each start says what it was doing).
func (g *group) start(cs ...component) error {
	for _, c := range cs {
		if c.start != nil {
			if err := c.start(); err != nil {
				g.stop(context.Background())
				return err
			}
		}
		g.started = append(g.started, c)
	}
	return nil
}

// stop stops every started component, the last started first.
func (g *group) stop(ctx context.Context) {
	for i := len(g.started) - 1; i >= 0; i-- {
		if s := g.started[i].stop; s != nil {
			s(ctx)
		}
	}
	g.started = nil
}

// loop is a goroutine with an owner: goLoop starts f, stop ends it and
// waits until it has returned. stop may be called more than once.
type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func goLoop(f func(ctx context.Context)) *loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		f(ctx)
	}()
	return l
}

func (l *loop) stop() {
	l.cancel()
	<-l.done
}
