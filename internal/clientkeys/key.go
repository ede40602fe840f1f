package clientkeys

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/budget"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
)

// Key is one client key's runtime: its allow-list, its own RPM/TPM
// buckets and its counters. The anonymous key (auth.api_keys_env, or no
// authentication) is a Key too, named "", that allows everything and
// only counts. Build Keys with a Set; all methods are safe for concurrent
// use, and a nil *Key is the anonymous key without counters.
type Key struct {
	name   string
	limits Limits
	allow  allowList
	lim    *ratelimit.Limiter // rpm/tpm; nil: none
	bud    *budget.Budget     // the spend this period: capped by budget_usd when capped; nil for the anonymous key
	capped bool               // budget_usd > 0
	sh     Shared             // the fleet's buckets and number of a capped bud; nil: none
	fleet  fleetLevels        // the fleet's buckets at the last admission

	spent                        prometheus.Counter // client_spend_usd_total{key}
	rejModel, rejRate, rejBudget prometheus.Counter // client_rejections_total{key,reason}
}

// Name is the key's configured name; "" for the anonymous key.
func (k *Key) Name() string {
	if k == nil {
		return ""
	}
	return k.name
}

// Limits are the key's configured limits.
func (k *Key) Limits() Limits {
	if k == nil {
		return Limits{}
	}
	return k.limits
}

// Allows reports whether the key may call the requested model name
// (auth.keys[].models); a refusal is counted
// (client_rejections_total{reason="model"}).
func (k *Key) Allows(model string) bool {
	if k == nil || k.allow.allows(model) {
		return true
	}
	k.rejModel.Inc()
	return false
}

// Lists reports whether a configured model name (a pattern with its
// `*`) belongs in the key's model list (GET /v1/models): the key may call
// it, or, for a pattern, some name it serves. Nothing is counted.
func (k *Key) Lists(name string) bool { return k == nil || k.allow.lists(name) }

// Reason says why a key's own limits refused a request.
type Reason uint8

const (
	// Rate: the key's RPM or TPM is spent for now (429
	// rate_limit_exceeded; Refusal.Wait until it would fit).
	Rate Reason = iota + 1
	// TooLarge: the request's token estimate exceeds the key's whole TPM
	// (413: it could never fit).
	TooLarge
	// Budget: the spend recorded in the key's period has reached its
	// budget (429 budget_exceeded; Refusal.Wait until the period resets,
	// 0 for a total budget).
	Budget
	// Deadline: the request's context ended while it waited for the
	// key's requests in flight to settle.
	Deadline
)

var reasonNames = [...]string{Rate: "rate", TooLarge: "too_large", Budget: "budget", Deadline: "deadline"}

// String names the reason as the request's span does (a refusal event's
// llmrouter.reason).
func (r Reason) String() string { return reasonNames[r] }

// Refusal is a request the key's limits refused: nothing was charged.
type Refusal struct {
	Reason Reason
	// Wait is how long until the same request could be admitted, when
	// known.
	Wait time.Duration
}

// Ticket is what an admitted request holds against its key until
// Settle. The zero Ticket holds nothing.
type Ticket struct {
	res *ratelimit.Reservation
	bud budget.Reservation
	// fleet: the request was charged to the key's fleet-wide buckets,
	// tokens its estimate (Settle and cancel correct them there).
	fleet  bool
	tokens int64
}

// cancel gives back what t charged to k's buckets, for a request never
// sent.
func (k *Key) cancel(now time.Time, t Ticket) {
	t.res.Cancel(now)
	if t.fleet {
		k.sh.Adjust(k.name, k.limits.RPM, k.limits.TPM, -1, -t.tokens)
	}
}

// HasBudget reports whether the key has a budget: only then does a
// request's estimated cost matter to Admit.
func (k *Key) HasBudget() bool { return k != nil && k.capped }

// Admit admits a request to the key's limits (docs/ARCHITECTURE.md,
// "Client keys and spend"): its estimated tokens are charged to the key's
// RPM and TPM, all or nothing, and its estimated cost (US dollars) is
// reserved against the key's budget. While the spend recorded plus the
// reservations in flight is not under the budget but the spend alone is,
// it waits for requests in flight to settle, until ctx ends (Deadline).
// clock reads the time (nil: time.Now). A Ticket must be settled exactly
// once (Settle), whatever became of the request.
func (k *Key) Admit(ctx context.Context, clock func() time.Time, tokens int64, estimate float64) (Ticket, *Refusal) {
	if k == nil || (k.lim == nil && !k.capped) {
		return Ticket{}, nil
	}
	if clock == nil {
		clock = time.Now
	}
	now := clock()
	var t Ticket
	// With shared_state, one round trip charges the key's fleet-wide
	// buckets and reads its spend; unreachable, the decision is local at
	// once (docs/ARCHITECTURE.md, "Client keys and spend").
	charged, r, shared := k.admitShared(ctx, now, tokens)
	switch {
	case r != nil:
		k.rejRate.Inc()
		return Ticket{}, r
	case shared:
		t.fleet, t.tokens = charged, max(tokens, 0)
	case k.lim != nil:
		res, err := k.lim.Reserve(now, tokens)
		if err != nil {
			k.rejRate.Inc()
			var le *ratelimit.LimitedError
			if errors.As(err, &le) {
				return Ticket{}, &Refusal{Reason: Rate, Wait: le.Wait}
			}
			return Ticket{}, &Refusal{Reason: TooLarge}
		}
		t.res = &res // shared by the Ticket's copies: the charge ends once
	}
	if !k.capped {
		return t, nil
	}
	est := budget.ToNano(estimate)
	for {
		d := k.bud.Reserve(now, est)
		switch d.Verdict {
		case budget.Admitted:
			t.bud = d.Reservation
			return t, nil
		case budget.Exceeded:
			k.cancel(now, t)
			k.rejBudget.Inc()
			return Ticket{}, &Refusal{Reason: Budget, Wait: d.ResetIn}
		}
		select {
		case <-d.Settled:
			now = clock()
		case <-ctx.Done():
			k.cancel(clock(), t)
			return Ticket{}, &Refusal{Reason: Deadline}
		}
	}
}

// Charge takes one request of the key's RPM at now (the fleet's, with
// shared_state), and no tokens and no budget, without waiting: a call
// outside the attempt loop that must still count against the key
// (count_tokens). It reports false, charging nothing and counting no
// rejection, when the key's buckets have no request to give now (the
// caller answers without its provider) or, with shared_state, the key's
// budget is spent. A key without rpm or tpm always has one.
func (k *Key) Charge(ctx context.Context, now time.Time) bool {
	if k == nil || k.lim == nil {
		return true
	}
	if charged, r, shared := k.admitShared(ctx, now, 0); shared {
		return r == nil && charged
	}
	res, err := k.lim.Reserve(now, 0)
	if err != nil {
		return false
	}
	res.Reconcile(now, 0) // sent: nothing to reconcile but the request
	return true
}

// Settle ends an admitted request at now: tokens is the usage its
// provider reported (0: none, the estimate stands) and costUSD what it
// cost at the configured prices (0 when nothing was served), recorded in
// the key's spend.
func (k *Key) Settle(now time.Time, t Ticket, tokens int64, costUSD float64) {
	if k == nil {
		return
	}
	t.res.Reconcile(now, tokens)
	if t.fleet && tokens > 0 && tokens != t.tokens {
		// As Reconcile: the usage reported replaces the estimate; none
		// reported, the estimate stands. Queued, off the request path.
		k.sh.Adjust(k.name, k.limits.RPM, k.limits.TPM, 0, tokens-t.tokens)
	}
	if k.bud != nil {
		k.bud.Settle(now, t.bud, budget.ToNano(costUSD))
		k.send(now)
	}
	if costUSD > 0 {
		k.spent.Add(costUSD)
	}
}
