package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// maxMessage bounds a provider message (provider.Message).
const maxMessage = provider.MaxMessage

// maxRetryDelay caps a RetryInfo delay, like provider.RetryAfter caps its
// headers: a hostile or broken body must not park a provider for years.
const maxRetryDelay = 24 * time.Hour

// rpcStatus is the google.rpc.Status error body Gemini answers with. One
// struct covers the detail types read here: RetryInfo (retryDelay),
// QuotaFailure (violations) and ErrorInfo (reason).
type rpcStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
		Reason     string `json:"reason"`
		Violations []struct {
			QuotaID string `json:"quotaId"`
		} `json:"violations"`
	} `json:"details"`
}

type rpcEnvelope struct {
	Error *rpcStatus `json:"error"`
}

// parseStatus reads {"error":{…}} or the array-wrapped [{"error":{…}}];
// nil when body is neither.
func parseStatus(body []byte) *rpcStatus {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	if body[0] == '[' {
		var arr []rpcEnvelope
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return nil
		}
		return arr[0].Error
	}
	var env rpcEnvelope
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return env.Error
}

// ClassifyError turns a Gemini error answer into an *outcome.Error.
// status is the HTTP status, or 0 for an error event inside a 200 stream
// (the body's error.code then stands in). h may be nil. now is the wall
// clock used for Retry-After dates and the per-day quota reset.
//
//   - 429 RESOURCE_EXHAUSTED: RateLimited, RetryAfter from RetryInfo or the
//     Retry-After headers; a quotaId containing "PerDay" (or a quota whose
//     limit is 0) is Quota instead, with RetryAfter until the next midnight
//     in America/Los_Angeles for the per-day case.
//   - an invalid API key (ErrorInfo reason API_KEY_*, or a message that
//     starts "API key not valid" or "API key expired": Google quotes a
//     request's input only after its own words), 401, 403, UNAUTHENTICATED,
//     PERMISSION_DENIED: Auth.
//   - 404 NOT_FOUND: ClientError; naming a model ("models/x is not found
//     for API version v1beta, or is not supported for generateContent") it
//     suspects TargetMissing (Error.Suspect), which the router confirms
//     with a request of its own before it disables the target
//     (docs/ARCHITECTURE.md, "Classification"): a message's words may be
//     a request's.
//   - 400 INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE: ClientError.
//   - 500 INTERNAL: ServerError; 503 UNAVAILABLE: Overloaded; 504
//     DEADLINE_EXCEEDED: ServerError (Google's deadline, not our timer).
//   - an unparseable body: outcome.ForStatus(status); a non-error status
//     (a redirect the client did not follow) is ServerError.
//
// RateLimit is outcome.UnknownRateLimit, as on a successful answer: Gemini
// sends no rate-limit headers; its only wait is RetryAfter.
func ClassifyError(status int, h http.Header, body []byte, now time.Time) *outcome.Error {
	e := classifyError(status, h, body, now)
	e.Message = provider.Message(e.Message)
	return e
}

func classifyError(status int, h http.Header, body []byte, now time.Time) *outcome.Error {
	e := &outcome.Error{Status: status, RateLimit: outcome.UnknownRateLimit}
	st := parseStatus(body)
	if st == nil {
		e.Kind = kindForStatus(status)
		e.Message = boundMessage(string(body))
		if e.Message == "" {
			e.Message = "gemini answered status " + strconv.Itoa(status)
		}
		if e.Kind == outcome.RateLimited {
			e.RetryAfter = provider.RetryAfter(h, now)
		}
		return e
	}
	code := status
	if code == 0 {
		code = st.Code
		e.Status = st.Code
	}
	e.Type = st.Status
	e.Message = boundMessage(st.Message)

	var retryDelay time.Duration
	perDay, reason, quotaID := false, "", ""
	for i := range st.Details {
		d := &st.Details[i]
		if d.RetryDelay != "" {
			if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
				retryDelay = min(v, maxRetryDelay)
			}
		}
		if d.Reason != "" && reason == "" {
			reason = d.Reason
		}
		for _, v := range d.Violations {
			if quotaID == "" {
				quotaID = v.QuotaID
			}
			if strings.Contains(v.QuotaID, "PerDay") {
				perDay, quotaID = true, v.QuotaID
			}
		}
	}
	e.Code = reason
	if e.Code == "" {
		e.Code = quotaID
	}

	switch {
	case strings.HasPrefix(reason, "API_KEY_") || strings.HasPrefix(st.Message, "API key not valid") ||
		strings.HasPrefix(st.Message, "API key expired"):
		// Google quotes a request's field names and values inside its
		// INVALID_ARGUMENT messages, never at their start.
		e.Kind = outcome.Auth
	case code == http.StatusTooManyRequests || st.Status == "RESOURCE_EXHAUSTED":
		switch {
		case perDay:
			e.Kind = outcome.Quota
			e.RetryAfter = untilPacificMidnight(now)
		case strings.Contains(st.Message, "limit: 0"):
			// The model has no quota at all on this project's tier
			// (e.g. a free-tier key on a paid-only model): no wait helps.
			e.Kind = outcome.Quota
		default:
			e.Kind = outcome.RateLimited
			e.RetryAfter = retryDelay
			if e.RetryAfter == 0 {
				e.RetryAfter = provider.RetryAfter(h, now)
			}
		}
	case code == http.StatusUnauthorized || code == http.StatusForbidden ||
		st.Status == "UNAUTHENTICATED" || st.Status == "PERMISSION_DENIED":
		e.Kind = outcome.Auth
	case code == http.StatusNotFound || st.Status == "NOT_FOUND":
		e.Kind = outcome.ClientError
		if strings.Contains(strings.ToLower(st.Message), "model") {
			// "models/x is not found for API version v1beta": the
			// target's model, or a cached content or file a request
			// named; only the router's own request can tell.
			e.Suspect = outcome.TargetMissing
		}
	case st.Status == "INVALID_ARGUMENT" && provider.GeminiTooLong(st.Message):
		// For this target's window; a larger one may serve
		// (docs/ARCHITECTURE.md, "Context windows").
		e.Kind = outcome.ContextExceeded
	case st.Status == "INVALID_ARGUMENT" || st.Status == "FAILED_PRECONDITION" || st.Status == "OUT_OF_RANGE":
		e.Kind = outcome.ClientError
	case st.Status == "INTERNAL":
		e.Kind = outcome.ServerError
	case st.Status == "UNAVAILABLE":
		e.Kind = outcome.Overloaded
	case st.Status == "DEADLINE_EXCEEDED":
		e.Kind = outcome.ServerError // Google's deadline, not our timer
	case code == 0:
		e.Kind = outcome.Unknown
	default:
		e.Kind = kindForStatus(code)
	}
	if e.Message == "" {
		e.Message = "gemini answered " + st.Status + " (status " + strconv.Itoa(code) + ")"
	}
	return e
}

// kindForStatus is outcome.ForStatus for a status that is known not to be
// a success: anything below 400 here is a redirect or an unexpected 2xx,
// which says the base_url is wrong.
func kindForStatus(status int) outcome.Kind {
	if status == 0 {
		return outcome.Unknown
	}
	if k := outcome.ForStatus(status); k != outcome.OK {
		return k
	}
	return outcome.ServerError
}

// boundMessage is s as a message (see provider.Message).
func boundMessage(s string) string { return provider.Message(s) }

// pacific is where Google resets per-day quotas. Without tzdata on the
// host it falls back to standard time (UTC-8), at most an hour off.
var pacific = sync.OnceValue(func() *time.Location {
	if loc, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return loc
	}
	return time.FixedZone("PST", -8*60*60)
})

// untilPacificMidnight is the wait from now until the next midnight in
// America/Los_Angeles.
func untilPacificMidnight(now time.Time) time.Duration {
	t := now.In(pacific())
	next := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
	return next.Sub(now)
}
