package outcome

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind classifies the result of one attempt against a provider
// (docs/ARCHITECTURE.md, "Classification"). The zero value OK means success.
type Kind uint8

const (
	OK          Kind = iota // the attempt succeeded
	RateLimited             // 429 with a retry hint: retry later, elsewhere now
	Overloaded              // 529, 503: the provider is short of capacity
	ServerError             // 500, 502, 504 (the provider's own gateway timing out), other 5xx
	Timeout                 // no answer (or no first token) in time: our timer, or 408
	Network                 // connection refused or reset, stream cut
	Auth                    // 401, 403: disabled until a probe succeeds or config changes
	Quota                   // out of money or a spend/day limit: permanent for the provider
	ClientError             // 400, 404, 413, 422: the request's fault, returned to the client
	Canceled                // the client went away; never counted against the provider
	Unknown                 // anything else; retried once

	// TargetMissing: the provider says the target's model or deployment
	// does not exist (a 404 model_not_found, DeploymentNotFound, Anthropic
	// "model: x", Gemini "models/x is not found"). That one target is
	// misconfigured: fail over to the model's next target, do not retry it,
	// and never count it against the provider, whose other targets may be
	// fine. Appended after Unknown so the numeric values and metric label
	// sets of the kinds before it stay as they were.
	TargetMissing

	// ContextExceeded: the prompt is too long for the target's context
	// window (OpenAI context_length_exceeded, Anthropic "prompt is too
	// long", Gemini "The input token count … exceeds", Bedrock "Input is
	// too long"). It says something about this request on this target
	// only: never counted against the provider, never resent to that
	// target; the request moves to a candidate with a larger or unknown
	// window, else the provider's 400 goes back (docs/ARCHITECTURE.md,
	// "Context windows"). Appended last, as TargetMissing was.
	ContextExceeded
)

var kindNames = [...]string{
	OK:              "ok",
	RateLimited:     "rate_limited",
	Overloaded:      "overloaded",
	ServerError:     "server_error",
	Timeout:         "timeout",
	Network:         "network",
	Auth:            "auth",
	Quota:           "quota",
	ClientError:     "client_error",
	Canceled:        "canceled",
	Unknown:         "unknown",
	TargetMissing:   "target_missing",
	ContextExceeded: "context_exceeded",
}

// String returns the snake_case name used in logs, metrics labels and JSON.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Kinds lists every kind, OK first; handy for pre-creating metric series.
func Kinds() []Kind {
	ks := make([]Kind, len(kindNames))
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// Retryable reports whether another attempt on the same target (on this
// provider later, or on another provider now) may succeed where this one
// failed. Auth and Quota are not retryable on the same provider but another
// provider may serve; TargetMissing and ContextExceeded are not retryable
// on the same target but the model's next target may serve.
func (k Kind) Retryable() bool {
	switch k {
	case RateLimited, Overloaded, ServerError, Timeout, Network, Unknown:
		return true
	}
	return false
}

// Counts reports whether the outcome says something about the provider's
// health. Client errors, cancellations, a missing target (one target's
// misconfiguration, not the provider's health) and a prompt too long for
// the target never count against it.
func (k Kind) Counts() bool {
	return k != ClientError && k != Canceled && k != TargetMissing && k != ContextExceeded
}

// Error is a classified failure of one attempt. Adapters return it (wrapped
// or not); everyone else finds it with errors.As.
type Error struct {
	Kind   Kind
	Status int // HTTP status the provider answered; 0 when there was no response

	// The provider's own error fields, when it sent a parseable body.
	Type    string
	Code    string
	Param   string
	Message string

	// Suspect is a provider-wide kind (Quota, TargetMissing) that only
	// the error's words suggest: words a request could have put there,
	// since providers quote client input in their errors (an unknown
	// anthropic-beta value, a block's tag). Kind is then ClientError
	// until one minimal request of the router's own confirms it
	// (docs/ARCHITECTURE.md, "Classification"). OK: nothing suspected.
	Suspect Kind

	// RetryAfter is how long the provider asked us to wait (Retry-After,
	// retry-after-ms, Gemini RetryInfo); 0 means it did not say.
	RetryAfter time.Duration

	// RateLimit is what the error answer's headers announced about the
	// provider's budget (a 429 or 503 often carries x-ratelimit-* or
	// anthropic-ratelimit-* headers), read by the same parser as a
	// successful answer's. The zero value means nothing was announced, as
	// for provider.Response.RateLimit.
	RateLimit RateLimit

	// Body is the provider's error body as it came (bounded), set by
	// adapters serving a request natively in the client's own API
	// (provider.OpMessages): a client error is then passed on byte for
	// byte, since clients match on its wording. nil otherwise.
	Body []byte

	Err error // the underlying cause, if any
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s (status %d): %s", e.Kind, e.Status, msg)
	}
	return fmt.Sprintf("%s: %s", e.Kind, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf classifies any error: a *Error anywhere in the chain gives its Kind,
// context cancellation gives Canceled, a deadline gives Timeout, and anything
// else is Unknown. nil is OK.
func KindOf(err error) Kind {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout
	}
	return Unknown
}

// ForStatus gives the default kind for an HTTP error status, before any
// provider-specific reading of the body. Adapters refine it (429
// insufficient_quota is Quota, a 404 naming the target's model is
// TargetMissing, and so on). It never returns TargetMissing itself: a bare
// 404 does not say what is missing.
func ForStatus(status int) Kind {
	switch {
	case status < 400:
		return OK
	case status == 401 || status == 403:
		return Auth
	case status == 402:
		return Quota
	case status == 408:
		return Timeout
	case status == 409:
		return Overloaded
	case status == 429:
		return RateLimited
	case status == 503 || status == 529:
		return Overloaded
	case status >= 500: // 504 included: the provider's gateway timed out, not our timer
		return ServerError
	case status >= 400:
		return ClientError
	}
	return Unknown
}

// Usage is what one call reported about itself: its token count and the
// model that answered. Zero fields mean not reported.
type Usage struct {
	// PromptTokens is the whole input, cache reads and writes included.
	PromptTokens     int64
	CompletionTokens int64

	// CachedInput is the part of PromptTokens read from the provider's
	// prompt cache (Anthropic cache_read_input_tokens), which providers
	// bill at a fraction of the input price. 0 when none or not reported.
	CachedInput int64
	// CacheWrite is the part of PromptTokens written to the provider's
	// prompt cache (Anthropic cache_creation_input_tokens), which
	// Anthropic bills above the input price. 0 when none or not reported.
	CacheWrite int64

	// Model is the model that answered as the provider named it in its
	// answer (gen_ai.response.model: often a dated snapshot of the model
	// asked for, "gpt-4o-mini-2024-07-18" for "gpt-4o-mini"); "" when the
	// answer named none (Bedrock Converse), and then the target's model is
	// the one that answered. Adapters keep it without an allocation per
	// answer (provider.ModelNames).
	Model string
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }

// RateLimit is what a provider announced about its budget in one response.
// Counts below zero mean unknown (a header absent, malformed or, for Azure,
// -1/0 values that mean "not reported"); durations of zero mean unknown.
type RateLimit struct {
	LimitRequests     int64
	RemainingRequests int64
	ResetRequests     time.Duration // until the request budget is full again
	LimitTokens       int64
	RemainingTokens   int64
	ResetTokens       time.Duration // until the token budget is full again
	RetryAfter        time.Duration // Retry-After / retry-after-ms: block until then
}

// UnknownRateLimit is a RateLimit that says nothing.
var UnknownRateLimit = RateLimit{LimitRequests: -1, RemainingRequests: -1, LimitTokens: -1, RemainingTokens: -1}
