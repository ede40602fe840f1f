package prober

import (
	"context"
	"time"
)

// Target is what the loop drives: a circuit breaker (breaker.Breaker)
// that says when a probe is due and runs one at a time.
type Target interface {
	// NextProbe says how long until a probe is due (0: now; < 0: none until
	// changed is closed).
	NextProbe(now time.Time) (wait time.Duration, changed <-chan struct{})
	// Probe runs probe if one is due and no other is running; ran says
	// whether it did.
	Probe(ctx context.Context, probe func(context.Context) error) (ran bool, err error)
}

// Run is b's prober loop; the owner starts it in its own goroutine and
// stops it by ending ctx, and Run returns soon after (at once while
// waiting; after probe returns while probing, and probe gets ctx, so it
// returns promptly too). It waits, without polling, until a probe is due
// (NextProbe), runs one probe bounded by timeout (timeout <= 0: ctx alone
// bounds it), reports it through Probe, and repeats. probe should hit a
// free endpoint (provider.Prober); wrap it to count probes in metrics.
//
// Run reads time.Now(); test it inside testing/synctest. Several Run
// loops (or Probe callers) on one Target are safe: probes stay
// single-flight.
func Run(ctx context.Context, b Target, probe func(context.Context) error, timeout time.Duration) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for ctx.Err() == nil {
		wait, changed := b.NextProbe(time.Now())
		if wait == 0 {
			if probeOnce(ctx, b, probe, timeout) {
				continue
			}
			// Another caller's probe took the slot between NextProbe and
			// Probe; changed fires when it ends. Look again in a while as
			// well rather than spin.
			wait = max(timeout, time.Second)
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func probeOnce(ctx context.Context, b Target, probe func(context.Context) error, timeout time.Duration) bool {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	ran, _ := b.Probe(ctx, probe)
	return ran
}
