package shared

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Fleet gives each provider its handle on the fleet's shared state
// (shared_state; docs/ARCHITECTURE.md, "Fleet"). The runtime asks it once
// per provider runtime it builds; sink receives the fleet's view of the
// provider whenever the Fleet reads it (at least once a second while
// reachable).
type Fleet interface {
	// For returns the handle of the provider d (its Config's defaults
	// applied), whose breaker and quota block follow pol (defaults
	// applied). key names its state among the fleet's
	// (record.Fingerprint.Key: processes share a provider's state only
	// when they agree on what it is); it holds no secret. The fleet reads
	// from d its name, its ceilings (rpm, tpm; 0 means learn from headers)
	// and its timeouts (first_token_timeout bounds the fleet's probe lock,
	// timeout a quota check's lease).
	For(d provider.Descriptor, key string, pol Policy, sink func(View)) Handle
}

// Policy is what every provider's runtime, local or shared by a fleet,
// takes from the config's breaker and routing blocks: not a provider's
// description (provider.Descriptor) but the rules its state follows.
type Policy struct {
	// Breaker configures the circuit breaker; the zero value means
	// breaker.DefaultConfig.
	Breaker breaker.Config
	// ThrottleK is the adaptive throttling multiplier; 0 disables it.
	// Each process throttles alone: the fleet does not read it.
	ThrottleK float64
	// QuotaRecheck is how often a provider out of quota gets one real
	// request to check whether it is back (breaker.quota_recheck); 0 means
	// DefaultQuotaRecheck.
	QuotaRecheck time.Duration
}

// DefaultQuotaRecheck is Policy.QuotaRecheck's default.
const DefaultQuotaRecheck = time.Hour

// WithDefaults fills zero fields with their defaults.
func (p Policy) WithDefaults() Policy {
	if p.Breaker == (breaker.Config{}) {
		p.Breaker = breaker.DefaultConfig()
	}
	if p.QuotaRecheck == 0 {
		p.QuotaRecheck = DefaultQuotaRecheck
	}
	return p
}

// Validate reports every invalid field, each naming its key.
func (p Policy) Validate() error {
	var errs []error
	errs = append(errs, p.Breaker.Validate())
	if k := p.ThrottleK; k != 0 && !(k >= 1 && k < 1e6) {
		errs = append(errs, fmt.Errorf("routing.adaptive_throttle_k: must be 0 (off) or at least 1, got %g", k))
	}
	if d := p.QuotaRecheck; d != 0 && d < time.Second {
		errs = append(errs, fmt.Errorf("breaker.quota_recheck: must be at least 1s, got %s", d))
	}
	return errors.Join(errs...)
}

// Reason says why the fleet refused an attempt.
type Reason uint8

const (
	// Open: the breaker is open, or half-open (only the probe goes).
	Open Reason = iota + 1
	// Limited: a budget holds too little, or a Retry-After or remaining-0
	// block holds.
	Limited
	// TooLarge: the attempt needs more tokens than a whole budget.
	TooLarge
	// Quota: the provider is out of quota.
	Quota
)

var reasonNames = [...]string{Open: "open", Limited: "limited", TooLarge: "too_large", Quota: "quota"}

// String is the reason's name, as the runtime's refusal of the same kind
// names it (upstream.Reason): "open", "limited", "too_large", "quota";
// "admitted" for 0 and "reason(n)" for a code the fleet should never send.
func (r Reason) String() string {
	switch {
	case r == 0:
		return "admitted"
	case int(r) < len(reasonNames):
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Handle is one provider's state as the whole fleet sees it. Every method
// is safe for concurrent use. An error from Admit or Probe means the
// shared state is unreachable right now: the caller decides locally, at
// once.
type Handle interface {
	// Up reports whether the shared state is reachable; while it is not,
	// nothing is sent to it.
	Up() bool
	// Admit decides one attempt of tokens estimated tokens for the whole
	// fleet, in one round trip: breaker, quota block, Retry-After and
	// budget blocks, and the request and token budgets (spent when it
	// admits).
	Admit(tokens int64) (Decision, error)
	// Record reports what an attempt (or a stream's headers) taught; it
	// never blocks.
	Record(r Record)
	// Probe runs probe if this process wins the fleet's probe lock and
	// applies its verdict fleet-wide; otherwise it waits (until ctx ends)
	// for the holder's verdict. Either way it returns the fleet's view
	// after the verdict. An error means the shared state failed; the
	// result still says whether probe ran and what it returned.
	Probe(ctx context.Context, probe func(context.Context) error) (ProbeResult, error)
	// DisableTarget and Enable share a disabled target and an operator's
	// enable (targets and quota) with the fleet.
	DisableTarget(model, message string)
	Enable()
	// Close stops the handle (its provider left the configuration).
	Close()
}

// Decision is the fleet's answer to Admit.
type Decision struct {
	// Reason is 0 when admitted; otherwise why not (Open, Limited,
	// TooLarge or Quota) and Wait how long until it could be.
	Reason Reason
	Wait   time.Duration
	// Gen is the fleet breaker's generation the attempt was admitted in;
	// Record hands it back, so an outcome from before a trip or a close
	// changes nothing.
	Gen uint64
	// QuotaCheck marks the one attempt (fleet-wide) that checks whether a
	// provider out of quota is back.
	QuotaCheck bool
	View       View
}

// ProbeResult is what Handle.Probe did.
type ProbeResult struct {
	View View
	// Ran says whether this process probed; Err is then the probe's result.
	Ran bool
	Err error
}

// View is the fleet's state of one provider at one instant.
type View struct {
	Breaker breaker.Mirror
	// Quota is the fleet's out-of-quota block and how long until it could
	// lift (its reset or the next check).
	Quota     bool
	QuotaLeft time.Duration
	// TargetsGen changes whenever the disabled targets change; Targets is
	// filled (possibly empty) only when the Fleet read them.
	TargetsGen uint64
	Targets    map[string]string
}

// Record is one attempt's lesson for the fleet.
type Record struct {
	// Observe only: a stream's headers, before its end. No outcome.
	ObserveOnly bool
	// Gen is Decision.Gen.
	Gen uint64
	// Health is what the breaker learns (outcome.Canceled: nothing);
	// Cooldown is the base cooldown a trip caused by it would start from.
	Health   outcome.Kind
	Cooldown time.Duration
	// LastKind is the kind to show as the last error (0: unchanged).
	LastKind outcome.Kind
	// RateLimit is what the provider announced, with RetryAfter set only
	// when it blocks the provider.
	RateLimit outcome.RateLimit
	// TokensDelta corrects the token estimate charged at admission (real
	// usage minus estimate; 0 leaves it).
	TokensDelta int64
	// Quota: the attempt met a quota error (QuotaReset is its reset, 0
	// unknown). QuotaCheck: the attempt was the fleet's quota check.
	Quota      bool
	QuotaReset time.Duration
	QuotaCheck bool
}
