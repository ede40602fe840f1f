package failover

import (
	"context"
	"errors"

	"github.com/llmrouter/llmrouter/internal/confirm"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
)

// confirm settles a client error whose words suspect a provider-wide kind
// (oe.Suspect: quota, or the target's model missing; docs/ARCHITECTURE.md,
// "Classification"): the attempt waits for the router's own minimal
// request of op to tg's model (provider.Minimal), single-flight per
// provider and kind and at most one per breaker.cooldown.failure
// (upstream.Upstream.Confirm). Met with the same kind, the attempt ends in
// it (the provider is blocked or the target disabled, and the request
// fails over); otherwise it stays the client's error, passed on.
func (l *Loop) confirm(ctx context.Context, r *Run, up *Provider, tg route.Target, op provider.Op, oe *outcome.Error) *outcome.Error {
	k := confirm.Key{Kind: oe.Suspect}
	if k.Kind == outcome.TargetMissing {
		k.Model = tg.Model
	}
	ok := up.Up.Confirm(ctx, l.now(), k, func() (confirmed, conclusive bool) {
		confirmed, conclusive = l.check(ctx, up, tg.Model, op, k.Kind)
		l.log.InfoContext(ctx, "suspected provider error checked with a request of the router's own", "request_id", r.ID,
			"provider", up.Name, "model", tg.Model, "kind", k.Kind.String(), "confirmed", confirmed, "conclusive", conclusive)
		return confirmed, conclusive
	})
	if !ok {
		return oe
	}
	cp := *oe
	cp.Kind = oe.Suspect
	return &cp
}

// check sends provider.Minimal(op, model) to up, bounded by its timeout
// and by ctx (the request that waits for it) but carrying nothing of
// ctx's (no trace, no client header), and says whether the answer was
// kind, or suspected it again: the router's own request quotes nothing,
// so the words are the provider's.
func (l *Loop) check(ctx context.Context, up *Provider, model string, op provider.Op, kind outcome.Kind) (confirmed, conclusive bool) {
	cctx, cancel := context.WithTimeout(context.Background(), up.Config.Timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	resp, err := up.Adapter.Do(cctx, provider.Minimal(op, model))
	if err == nil {
		if resp.Stream != nil {
			resp.Stream.Close()
		}
		return false, true
	}
	if ctx.Err() != nil {
		return false, false
	}
	var oe *outcome.Error
	return errors.As(err, &oe) && (oe.Kind == kind || oe.Suspect == kind), true
}
