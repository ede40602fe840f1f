package clientkeys

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

	spent                     prometheus.Counter // client_spend_usd_total{key}
	rejModel, rejRate, rejBig prometheus.Counter // client_rejections_total{key,reason}
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

// Reason says why a key's own limits refused a request.
type Reason uint8

const (
	// Rate: the key's RPM or TPM is spent for now (429
	// rate_limit_exceeded; Refusal.Wait until it would fit).
	Rate Reason = iota + 1
	// TooLarge: the request's token estimate exceeds the key's whole TPM
	// (413: it could never fit).
	TooLarge
)

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
}

// Admit charges a request of the estimated tokens to the key's RPM and
// TPM at now, all or nothing. A Ticket must be settled exactly once
// (Settle), whatever became of the request.
func (k *Key) Admit(now time.Time, tokens int64) (Ticket, *Refusal) {
	if k == nil || k.lim == nil {
		return Ticket{}, nil
	}
	res, err := k.lim.Reserve(now, tokens)
	if err != nil {
		var le *ratelimit.LimitedError
		if errors.As(err, &le) {
			k.rejRate.Inc()
			return Ticket{}, &Refusal{Reason: Rate, Wait: le.Wait}
		}
		k.rejBig.Inc()
		return Ticket{}, &Refusal{Reason: TooLarge}
	}
	return Ticket{res: res}, nil
}

// Settle ends an admitted request at now: tokens is the usage its
// provider reported (0: none, the estimate stands) and costUSD what it
// cost at the configured prices (0 when nothing was served).
func (k *Key) Settle(now time.Time, t Ticket, tokens int64, costUSD float64) {
	if k == nil {
		return
	}
	t.res.Reconcile(now, tokens)
	if costUSD > 0 {
		k.spent.Add(costUSD)
	}
}
