package fleet

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// handle is one provider's shared state: shared.Handle.
type handle struct {
	c *Client
	// key is the provider's hash; lock and targets live beside it, in the
	// same Cluster slot.
	key, lock, targets string
	d                  provider.Descriptor // what it reads of the provider: its name, rpm, tpm and timeouts
	pol                shared.Policy
	sink               func(shared.View)
	lockTTL            time.Duration
	lease              time.Duration // a quota check's: the longest an attempt may take
	ttl                int64         // keyTTL in ms
	targetsGen         atomic.Uint64
}

// For returns the shared state of the provider d, named key, under pol
// (shared.Fleet); sink receives its view whenever the fleet reads it.
func (c *Client) For(d provider.Descriptor, key string, pol shared.Policy, sink func(shared.View)) shared.Handle {
	key = c.conn.KeyPrefix() + "{" + d.Config.Name + "}:" + key
	timeouts := d.Config.WithDefaults()
	h := &handle{c: c, key: key, lock: key + ":probe", targets: key + ":targets", d: d, pol: pol, sink: sink,
		// A process that dies holding the lock wedges nothing: it expires a
		// little after the longest a probe may take.
		lockTTL: timeouts.FirstTokenTimeout + time.Second,
		lease:   timeouts.Timeout + time.Second,
		ttl:     keyTTL.Milliseconds()}
	c.mu.Lock()
	c.handle[h] = struct{}{}
	c.mu.Unlock()
	return h
}

func (h *handle) Up() bool { return h.c.Up() }

func (h *handle) Close() {
	h.c.mu.Lock()
	delete(h.c.handle, h)
	h.c.mu.Unlock()
}

func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// Admit is the one round trip on the request path.
func (h *handle) Admit(tokens int64) (shared.Decision, error) {
	ctx, cancel := h.c.call()
	defer cancel()
	cmd := prod().admit.Run(ctx, h.c.rdb, []string{h.key}, admitArgs(h.d.Config, h.lease, h.ttl, tokens)...)
	d, err := parseDecision(cmd)
	if err != nil {
		h.c.fail("admit", err)
	}
	return d, err
}

// admitArgs are admit's ARGV: the provider's ceilings are c's (0: learn
// them from headers).
func admitArgs(c provider.Config, lease time.Duration, ttl, tokens int64) []any {
	return []any{max(tokens, 0), c.RPM, c.TPM, lease.Milliseconds(), ttl}
}

// Record queues the attempt's lesson for the writer loop.
func (h *handle) Record(r shared.Record) {
	h.c.enqueue(job{h: h, s: prod().record, args: recordArgs(h.d.Config, h.pol, h.ttl, r)})
}

// recordArgs are record's ARGV.
func recordArgs(c provider.Config, pol shared.Policy, ttl int64, r shared.Record) []any {
	b := pol.Breaker
	th := b.FailureThreshold
	health := int64(-1)
	if r.Health.Counts() {
		health = int64(r.Health)
	}
	instant := 0
	if r.Health == outcome.Auth || r.Health == outcome.Quota {
		instant = 1
	}
	rl := r.RateLimit
	return []any{b2i(r.ObserveOnly), r.Gen, health,
		ms(r.Cooldown), strconv.FormatFloat(b.Cooldown.Multiplier, 'g', -1, 64), ms(b.Cooldown.Max),
		th.Consecutive, strconv.FormatFloat(th.Ratio, 'g', -1, 64), th.MinRequests, ms(th.Window),
		int64(r.LastKind), r.TokensDelta, c.RPM, c.TPM,
		rl.LimitRequests, rl.RemainingRequests, ms(rl.ResetRequests),
		rl.LimitTokens, rl.RemainingTokens, ms(rl.ResetTokens), ms(rl.RetryAfter),
		b2i(r.Quota), ms(r.QuotaReset), b2i(r.QuotaCheck), ms(pol.QuotaRecheck), ttl, instant}
}

func (h *handle) DisableTarget(model, message string) {
	h.c.enqueue(job{h: h, s: prod().disable, args: []any{model, message, h.ttl}})
}

func (h *handle) Enable() {
	h.c.enqueue(job{h: h, s: prod().enable, args: []any{h.ttl}})
}

// Probe takes the fleet's probe lock and probes, or waits for the verdict
// of the process that holds it.
func (h *handle) Probe(ctx context.Context, probe func(context.Context) error) (shared.ProbeResult, error) {
	var res shared.ProbeResult
	token := h.c.token + ":" + strconv.FormatUint(h.c.seq.Add(1), 10)
	cctx, cancel := h.c.call()
	d, err := parseDecision(prod().probeStart.Run(cctx, h.c.rdb, []string{h.key, h.lock}, token, h.lockTTL.Milliseconds()))
	cancel()
	if err != nil {
		h.c.fail("probe", err)
		return res, err
	}
	if m := d.View.Breaker; !d.QuotaCheck && (m.State == breaker.Closed || m.Left > 0) {
		res.View = d.View // the verdict is in already
		return res, nil
	}
	if d.QuotaCheck { // won the lock
		res.Ran = true
		res.Err = probe(ctx)
		kind := outcome.OK
		if res.Err != nil {
			kind = outcome.KindOf(res.Err)
			switch {
			case ctx.Err() == context.DeadlineExceeded:
				kind = outcome.Timeout
			case kind == outcome.OK || kind == outcome.Canceled:
				kind = outcome.Unknown
			}
		}
		if ctx.Err() == context.Canceled {
			// Shut down mid-probe: no verdict; free the lock for another.
			dctx, cancel := h.c.call()
			h.c.rdb.Eval(dctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end`, []string{h.lock}, token)
			cancel()
			return res, ctx.Err()
		}
		var retryAfter time.Duration
		if oe := (*outcome.Error)(nil); errors.As(res.Err, &oe) {
			retryAfter = oe.RetryAfter
		}
		dctx, cancel := h.c.call()
		defer cancel()
		cmd := prod().probeDone.Run(dctx, h.c.rdb, []string{h.key, h.lock},
			probeDoneArgs(h.pol, h.ttl, token, res.Err == nil, kind, retryAfter)...)
		d, err := parseDecision(cmd)
		if err != nil {
			h.c.fail("probe", err)
			return res, err
		}
		res.View = d.View
		return res, nil
	}
	// Another process probes: its verdict is the fleet's.
	t := time.NewTicker(probeWaitPoll)
	defer t.Stop()
	for {
		vctx, cancel := h.c.call()
		d, err := parseDecision(prod().view.Run(vctx, h.c.rdb, []string{h.key}))
		cancel()
		if err != nil {
			h.c.fail("probe", err)
			return res, err
		}
		res.View = d.View
		if m := d.View.Breaker; m.State == breaker.Closed || m.Left > 0 {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, nil // still half-open: the prober asks again
		case <-t.C:
		}
	}
}

// probeDoneArgs are probeDone's ARGV: the probe's verdict (ok, else its
// kind and the provider's Retry-After).
func probeDoneArgs(pol shared.Policy, ttl int64, token string, ok bool, kind outcome.Kind, retryAfter time.Duration) []any {
	cd := pol.Breaker.Cooldown
	return []any{token, b2i(ok), int64(kind), ms(cd.For(kind, retryAfter, 1)),
		strconv.FormatFloat(cd.Multiplier, 'g', -1, 64), ms(cd.Max), ttl}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseDecision reads a script's reply: code, wait ms, gen, breaker state,
// left ms, trips, trip kind, quota on, quota left ms, quota check,
// targets gen.
func parseDecision(cmd *redis.Cmd) (shared.Decision, error) {
	var d shared.Decision
	v, err := cmd.Int64Slice()
	if err != nil {
		return d, err
	}
	if len(v) != 11 {
		return d, errReply
	}
	msd := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	switch v[0] {
	case codeOpen:
		d.Reason = shared.Open
	case codeLimited:
		d.Reason = shared.Limited
	case codeTooLarge:
		d.Reason = shared.TooLarge
	case codeQuota:
		d.Reason = shared.Quota
	}
	d.Wait, d.Gen, d.QuotaCheck = msd(v[1]), uint64(v[2]), v[9] == 1
	d.View = shared.View{
		Breaker:    breaker.Mirror{Left: msd(v[4]), Trips: int(v[5]), Kind: outcome.Kind(v[6])},
		Quota:      v[7] == 1,
		QuotaLeft:  msd(v[8]),
		TargetsGen: uint64(v[10]),
	}
	if v[3] == 2 {
		d.View.Breaker.State = breaker.Open
	}
	return d, nil
}
