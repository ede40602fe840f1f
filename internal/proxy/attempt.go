package proxy

import (
	"context"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// walk runs the request's attempts (internal/failover) and shapes how
// they ended into the result answer writes.
func (s *Server) walk(ctx context.Context, ex *exchange, st *state, req *provider.Request, tokens int64) result {
	pol := failover.Policy{Retry: st.retry, Weights: st.weights}
	if st.domains {
		pol.DomainDown = st.domainDown(s.now())
	}
	res := s.loop.Walk(ctx, &ex.Run, pol, func(name string) *failover.Provider { return st.providers[name] }, req, tokens)
	switch {
	case res.Served != nil:
		return result{served: res.Served}
	case res.ClientError != nil:
		return result{err: clientError(res.ClientError), provider: res.Provider}
	case res.Gone:
		return result{gone: true}
	}
	return unserved(ex, res.DeadlinePassed)
}

// clientError passes a provider's client error (400, 404, 413, 422…)
// through to the client as it is.
func clientError(oe *outcome.Error) *intake.Error {
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
	return &intake.Error{Status: status, Type: typ, Code: oe.Code, Param: oe.Param, Message: msg}
}

// unserved is the end of a request no attempt served: 400 when no target
// serves the operation; 504 at the deadline; refused (429, 413, 503) when no provider admitted it; 429 when
// every attempt was rate limited; else 502 listing the attempts.
func unserved(ex *exchange, deadlinePassed bool) result {
	switch {
	case !ex.Supported:
		return result{err: &intake.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_operation",
			Param: "model", Message: "the model " + intake.Quote(ex.Model.Name) + " has no provider that serves " + ex.Op.String()}}
	case deadlinePassed:
		return result{err: &intake.Error{Status: http.StatusGatewayTimeout, Type: "server_error", Code: "timeout",
			Message: "the request did not complete within limits.request_timeout; " + ex.FailureList()}}
	case onlyMissing(ex):
		// Every target the model has is misconfigured: say which, and
		// never as a failure worth retrying (SDKs retry 5xx, not 404).
		return result{err: &intake.Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found",
			Param: "model", Message: "the model " + intake.Quote(ex.Model.Name) + " is configured with targets its providers do not have (" +
				strings.Join(ex.Missing, ", ") + "): they are disabled until the config is fixed and reloaded, or `router enable PROVIDER`"}}
	case ex.Attempts == 0:
		return result{err: refused(ex)}
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
		return result{err: &intake.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "every provider for this model is rate limited; " + ex.FailureList(), RetryAfter: wait}}
	}
	return result{err: &intake.Error{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
		Message: "every attempt failed; " + ex.FailureList()}}
}

// onlyMissing reports whether the request met nothing but missing
// targets: no other failure and no other refusal.
func onlyMissing(ex *exchange) bool {
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
func refused(ex *exchange) *intake.Error {
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
		return &intake.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "the providers for this model are failing most requests; the router is throttling locally, retry later", RetryAfter: time.Second}
	case limited || full:
		if !limited {
			wait = time.Second
		}
		return &intake.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "every provider for this model is at its rate or concurrency limit; retry later", RetryAfter: max(wait, time.Second)}
	case tooLarge && !open:
		return &intake.Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
			Message: "the request's estimated tokens exceed every provider's per-minute token budget"}
	}
	if !open || reopen <= 0 {
		reopen = time.Second
	}
	return &intake.Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
		Message: "every provider for this model is unavailable (circuit open); retry later", RetryAfter: max(reopen, time.Second)}
}
