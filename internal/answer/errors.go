package answer

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// The router's own error answers ("HTTP surface").

// ClientError passes a provider's client error (400, 404, 413, 422…)
// through to the client as it is.
func ClientError(oe *outcome.Error) *apierror.Error {
	status := oe.Status
	if status < 400 || status > 499 {
		status = http.StatusBadRequest
	}
	typ := oe.Type
	if typ == "" || typ == "error" {
		typ = "invalid_request_error"
	}
	msg := oe.Message
	if msg == "" {
		msg = "the provider rejected the request"
	}
	// A body kept by an adapter that served the client's own API natively
	// goes back as it came (Error.Raw).
	return &apierror.Error{Status: status, Type: typ, Code: oe.Code, Param: oe.Param, Message: msg, Raw: oe.Body}
}

// Unserved is the end of a request no attempt served: 400 when no target
// serves the operation; 504 at the deadline; refused (429, 413, 503) when no provider admitted it; 429 when
// every attempt was rate limited; else 502 listing the attempts.
func Unserved(ex *Exchange, deadlinePassed bool) Result {
	switch {
	case !ex.Supported:
		return Result{Err: &apierror.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_operation",
			Param: "model", Message: "the model " + apierror.Quote(ex.Model.Name) + " has no provider that serves " + ex.Op.String()}}
	case deadlinePassed:
		return Result{Err: &apierror.Error{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "timeout",
			Message: "the request did not complete within limits.request_timeout; " + ex.FailureList()}}
	case onlyMissing(ex):
		// Every target the model has is misconfigured: say which, and
		// never as a failure worth retrying (SDKs retry 5xx, not 404).
		return Result{Err: &apierror.Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found",
			Param: "model", Message: "the model " + apierror.Quote(ex.Model.Name) + " is configured with targets its providers do not have (" +
				strings.Join(ex.Missing, ", ") + "): they are disabled until the config is fixed and reloaded, or `router enable PROVIDER`"}}
	case ex.Attempts == 0:
		return Result{Err: refused(ex)}
	}
	allRateLimited, wait := len(ex.Failures) > 0, time.Duration(math.MaxInt64)
	for _, f := range ex.Failures {
		if f.Err.Kind != outcome.RateLimited {
			allRateLimited = false
			break
		}
		if f.Err.RetryAfter > 0 && f.Err.RetryAfter < wait {
			wait = f.Err.RetryAfter
		}
	}
	if allRateLimited {
		if wait == time.Duration(math.MaxInt64) {
			wait = time.Second
		}
		return Result{Err: &apierror.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "every provider for this model is rate limited; " + ex.FailureList(), RetryAfter: wait}}
	}
	return Result{Err: &apierror.Error{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
		Message: "every attempt failed; " + ex.FailureList()}}
}

// onlyMissing reports whether the request met nothing but missing
// targets: no other failure and no other refusal.
func onlyMissing(ex *Exchange) bool {
	if len(ex.Missing) == 0 || len(ex.Refusals()) > 0 {
		return false
	}
	for _, f := range ex.Failures {
		if f.Err.Kind != outcome.TargetMissing {
			return false
		}
	}
	return true
}

// refused is the answer to a request no provider admitted: 429 when some
// are at their limits or full (Retry-After: the soonest refill), 413 when
// it is larger than every provider's token budget, else 503 with
// Retry-After at the earliest breaker reopening.
func refused(ex *Exchange) *apierror.Error {
	var (
		limited, full, throttled, tooLarge, open bool
		wait, reopen                             time.Duration = math.MaxInt64, math.MaxInt64
	)
	for _, rf := range ex.Refusals() {
		switch rf.Reason {
		case upstream.Limited:
			limited, wait = true, min(wait, rf.Wait)
		case upstream.Full:
			full = true
		case upstream.Throttled:
			throttled = true
		case upstream.TooLarge:
			tooLarge = true
		case upstream.Open, upstream.Quota:
			open, reopen = true, min(reopen, rf.Wait)
		}
	}
	switch {
	case throttled && !limited && !full:
		return &apierror.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "the providers for this model are failing most requests; the router is throttling locally, retry later", RetryAfter: time.Second}
	case limited || full:
		if !limited {
			wait = time.Second
		}
		return &apierror.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "every provider for this model is at its rate or concurrency limit; retry later", RetryAfter: max(wait, time.Second)}
	case tooLarge && !open:
		return &apierror.Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
			Message: "the request's estimated tokens exceed every provider's per-minute token budget"}
	}
	if !open || reopen <= 0 {
		reopen = time.Second
	}
	return &apierror.Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
		Message: "every provider for this model is unavailable (circuit open); retry later", RetryAfter: max(reopen, time.Second)}
}

// Unauthorized is the 401 for a missing or wrong client key; a body the
// client sent is not read.
func Unauthorized(r *http.Request) Result {
	return Result{Err: &apierror.Error{Status: http.StatusUnauthorized, Type: "authentication_error", Code: "invalid_api_key",
		Message: "missing or invalid API key: send Authorization: Bearer <key> or x-api-key: <key>", EndConn: r.ContentLength != 0}}
}

// ModelNotFound is the 404 for a model that is not configured.
func ModelNotFound(name string) *apierror.Error {
	return &apierror.Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Param: "model",
		Message: "the model " + apierror.Quote(name) + " does not exist"}
}

// ModelNotAllowed is the 403 for a model the client key named key may not
// call (auth.keys[].models).
func ModelNotAllowed(model, key string) *apierror.Error {
	return &apierror.Error{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "model_not_allowed", Param: "model",
		Message: "the client key " + apierror.Quote(key) + " may not use the model " + apierror.Quote(model)}
}

// KeyRateLimited is the 429 for a request over its client key's own RPM
// or TPM (auth.keys[].rpm, tpm); wait is when it would fit.
func KeyRateLimited(key string, wait time.Duration) *apierror.Error {
	return &apierror.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
		Message: "the client key " + apierror.Quote(key) + " is over its own requests or tokens per minute; retry later", RetryAfter: max(wait, time.Second)}
}

// KeyTooLarge is the 413 for a request whose token estimate exceeds its
// client key's whole TPM: it could never be admitted.
func KeyTooLarge(key string) *apierror.Error {
	return &apierror.Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
		Message: "the request's estimated tokens exceed the client key " + apierror.Quote(key) + "'s tokens per minute"}
}

// BudgetExceeded is the 429 for a client key whose spend this period has
// reached its budget (auth.keys[].budget_usd); resetIn is when the period
// resets (Retry-After), 0 for a total budget (no Retry-After: it never
// resets). It is Final: an SDK retrying it at once would only be refused
// again (issue 34).
func BudgetExceeded(key string, resetIn time.Duration) *apierror.Error {
	e := &apierror.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "budget_exceeded", Final: true,
		Message: "the client key " + apierror.Quote(key) + " has spent its budget for this period"}
	if resetIn > 0 {
		e.RetryAfter = max(resetIn, time.Second)
		e.Message += "; it resets in " + resetIn.Round(time.Second).String()
	}
	return e
}

// BudgetWaitTimeout is the 504 for a request whose deadline passed while
// it waited for its client key's requests in flight to settle.
func BudgetWaitTimeout(key string) *apierror.Error {
	return &apierror.Error{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "timeout",
		Message: "the request did not complete within limits.request_timeout: it waited for the client key " + apierror.Quote(key) +
			"'s requests in flight to settle against its budget"}
}
