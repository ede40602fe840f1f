package failover

import (
	"context"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// Hedging (docs/ARCHITECTURE.md, "Hedging"): an attempt with no first
// content after routing.hedge.after gets a twin on another provider; the
// first of the two to produce content answers, the other is cancelled,
// waited for and released as canceled. Both run in goroutines of the
// request's, and both have ended when race returns.

// errHedgeLost is the cause given to the attempt that lost a hedge race.
var errHedgeLost = &outcome.Error{Kind: outcome.Canceled, Message: "another attempt answered first (hedge)"}

// failed is one failed attempt, for decide.
type failed struct {
	c  *candidate
	oe *outcome.Error
}

// failures are the attempts of one step that failed: one, or a hedge's
// two.
type failures struct {
	n int
	f [2]failed
}

func (fs *failures) add(c *candidate, oe *outcome.Error) {
	fs.f[fs.n] = failed{c, oe}
	fs.n++
}

// leg is one of a race's two attempts.
type leg struct {
	c    *candidate
	sv   *Served
	resp *provider.Response
	err  error
}

// run sends lg's attempt and hands it back on done.
func (lg *leg) run(done chan<- *leg) {
	lg.resp, lg.err = lg.sv.send()
	done <- lg
}

// hedges reports whether c's attempt may be hedged: hedging is on, the
// request has not hedged yet, a twin would still be within max_attempts,
// and some candidate of another provider is left. It reads no lock, so a
// request that cannot hedge pays nothing for it.
func (l *Loop) hedges(r *Run, p *Policy, c *candidate) bool {
	if !p.Hedge.On() || r.hedged || r.Attempts+1 >= p.Retry.MaxAttempts {
		return false
	}
	for i := range r.cands {
		if o := &r.cands[i]; !o.out && o.p != c.p {
			return true
		}
	}
	return false
}

// twin picks c's hedge and admits it at now: the first candidate in rank
// order of another provider, in another failure domain when one is left
// (docs/ARCHITECTURE.md, "Hedging"). It must fit in max_share of the
// router's recent requests and be admitted like any attempt (breaker,
// bulkhead, buckets, the last attempt kept for the fallback tier); nil
// means no hedge.
func (l *Loop) twin(r *Run, p *Policy, c *candidate, now, end time.Time, tokens int64, w *wake) (*candidate, *upstream.Permit) {
	var tw *candidate
	for pass := 0; pass < 2 && tw == nil; pass++ {
		for i := range r.cands {
			o := &r.cands[i]
			if o.out || o.p == c.p || now.Before(o.notUntil) || (pass == 0 && sameDomain(o.p, c.p)) {
				continue
			}
			tw = o
			break
		}
	}
	if tw == nil || !l.share.Take(p.Hedge.MaxShare) {
		return nil, nil
	}
	permit := l.admit(r, tw, p, now, end.Sub(now), tokens, w)
	if permit == nil {
		l.share.Return() // refused: no hedge
		return nil, nil
	}
	return tw, permit
}

// sameDomain reports whether a and b share a named failure domain.
func sameDomain(a, b *Provider) bool {
	return a.Config.Domain != "" && a.Config.Domain == b.Config.Domain
}

// race sends c under permit as attempt does and, when it has produced no
// first content after routing.hedge.after, a twin (twin): the first of the
// two to produce content answers, and the candidate that gave it is
// returned with it; the other is cancelled at once, waited for and
// abandoned. A leg that fails before the other answers is a failure like
// any; when both fail, both are returned for decide.
func (l *Loop) race(ctx context.Context, r *Run, p *Policy, c *candidate, permit *upstream.Permit, end time.Time, tokens int64, w *wake) (*Served, *candidate, failures) {
	var fs failures
	done := make(chan *leg, 2)
	first := &leg{c: c, sv: l.begin(ctx, r, c.p, *c.tg, c.req, permit, false)}
	t0 := first.sv.t0
	go first.run(done)
	timer := time.NewTimer(p.Hedge.After)
	var (
		second *leg
		lg     *leg
	)
	select {
	case lg = <-done:
		timer.Stop()
	case <-timer.C:
		now := l.now()
		if tw, tp := l.twin(r, p, c, now, end, tokens, w); tw != nil {
			// The twin sends its own copy: the two attempts name
			// different models.
			req := *tw.req
			second = &leg{c: tw, sv: l.begin(ctx, r, tw.p, *tw.tg, &req, tp, true)}
			r.hedged = true
			l.log.Debug("hedging", "request_id", r.ID, "attempt", r.Attempts, "from", c.p.Name, "to", tw.p.Name,
				"after_ms", p.Hedge.After.Milliseconds())
			go second.run(done)
		}
	}
	if second == nil {
		if lg == nil {
			lg = <-done
		}
		r.Upstream += time.Since(t0)
		sv, oe := l.finish(ctx, r, lg.sv, lg.resp, lg.err)
		if oe != nil {
			fs.add(c, oe)
		}
		return sv, c, fs
	}
	var win *leg
	var sv *Served
	for range 2 {
		lg := <-done
		switch {
		case win != nil:
			l.abandon(lg.sv, lg.resp, lg.err)
		case lg.err == nil:
			win = lg
			loser := first
			if lg == first {
				loser = second
			}
			loser.sv.rc.Cancel(errHedgeLost)
			sv, _ = l.finish(ctx, r, lg.sv, lg.resp, nil)
			r.LastTier = lg.c.tg.Tier
		default:
			_, oe := l.finish(ctx, r, lg.sv, lg.resp, lg.err)
			fs.add(lg.c, oe)
		}
	}
	r.Upstream += time.Since(t0)
	l.m.hedged(r.Model.Name, win == second)
	if win == nil {
		return nil, nil, fs
	}
	return sv, win.c, fs
}
