package anthropic

import (
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// maxMessage bounds a provider message (provider.Message).
const maxMessage = provider.MaxMessage

// errorTypes maps Anthropic's error.type to a kind and the status Anthropic
// documents for it on its errors page. The status serves error events in a
// stream, which arrive after a 200.
var errorTypes = map[string]struct {
	kind   outcome.Kind
	status int
}{
	"invalid_request_error": {outcome.ClientError, http.StatusBadRequest},
	"authentication_error":  {outcome.Auth, http.StatusUnauthorized},
	"billing_error":         {outcome.Quota, http.StatusPaymentRequired},
	"permission_error":      {outcome.Auth, http.StatusForbidden},
	"not_found_error":       {outcome.ClientError, http.StatusNotFound},
	"conflict_error":        {outcome.Overloaded, http.StatusConflict},
	"request_too_large":     {outcome.ClientError, http.StatusRequestEntityTooLarge},
	"rate_limit_error":      {outcome.RateLimited, http.StatusTooManyRequests},
	"api_error":             {outcome.ServerError, http.StatusInternalServerError},
	"timeout_error":         {outcome.ServerError, http.StatusGatewayTimeout}, // Anthropic's timeout, not ours
	"overloaded_error":      {outcome.Overloaded, 529},
}

// ClassifyError turns an Anthropic error answer into an *outcome.Error.
// The body is `{"type":"error","error":{"type":…,"message":…}}`; its
// error.type decides the kind (billing_error is Quota), and so does
// details.error_code (enforced_spend_limit_reached is Quota). The message
// never does: Anthropic quotes client input in it (an unknown
// anthropic-beta value, an unknown block's tag), so where Anthropic reuses
// a type, the words only make a suspicion (Error.Suspect) on a
// ClientError, which the router confirms with a request of its own before
// it believes it (docs/ARCHITECTURE.md, "Classification"): an
// invalid_request_error speaking of a credit balance, a usage or spend
// limit suspects Quota; a not_found_error naming a model ("model:
// claude-x") suspects TargetMissing. A 504 timeout_error is ServerError:
// Anthropic's side timed out, not our timer. A body that is not Anthropic
// JSON (a 413 from Cloudflare, a proxy's page) is classified by status
// (outcome.ForStatus), with the trimmed text, bounded, as the message.
// RetryAfter comes from the headers, and RateLimit from the
// anthropic-ratelimit-* headers (ParseRateLimit), as on a successful
// answer.
func ClassifyError(status int, h http.Header, body []byte, now time.Time) *outcome.Error {
	e := classifyError(status, h, body, now)
	e.Message = provider.Message(e.Message)
	return e
}

func classifyError(status int, h http.Header, body []byte, now time.Time) *outcome.Error {
	e := &outcome.Error{Status: status, RetryAfter: provider.RetryAfter(h, now), RateLimit: ParseRateLimit(h, now)}
	var errObj gjson.Result
	if jsoncheck.Valid(body) {
		errObj = gjson.GetBytes(body, "error")
	}
	if t := errObj.Get("type"); t.Type == gjson.String {
		e.Type = t.Str
		e.Message = errObj.Get("message").String()
		e.Code = errObj.Get("details.error_code").String()
		e.Kind, e.Suspect = kindFor(status, e.Type, e.Code, e.Message)
	} else {
		e.Kind = outcome.ForStatus(status)
		e.Message = boundedText(body)
		if m := errObj.Get("message"); m.Type == gjson.String {
			e.Message = m.Str // some other JSON error shape
		}
	}
	if e.Kind == outcome.OK {
		// A redirect or other non-200 success: base_url points somewhere
		// that is not the Messages API.
		e.Kind = outcome.ServerError
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// kindFor is the kind of an error of type typ with details.error_code
// code and message msg under status, and the provider-wide kind msg
// alone suggests (OK: none). Only typ, code and status decide the kind.
func kindFor(status int, typ, code, msg string) (kind, suspect outcome.Kind) {
	switch {
	case typ == "overloaded_error" || status == 529:
		return outcome.Overloaded, outcome.OK
	case code == "enforced_spend_limit_reached":
		// A 429 that lasts until the 1st of next month: no retry helps.
		return outcome.Quota, outcome.OK
	}
	kind = outcome.ForStatus(status)
	if t, ok := errorTypes[typ]; ok {
		kind = t.kind
	}
	if kind != outcome.ClientError {
		return kind, outcome.OK
	}
	if typ == "invalid_request_error" && provider.AnthropicTooLong(msg) {
		// "prompt is too long: 201234 tokens > 200000 maximum": for this
		// target; a larger window may serve (docs/ARCHITECTURE.md,
		// "Context windows").
		return outcome.ContextExceeded, outcome.OK
	}
	lower := strings.ToLower(msg)
	switch {
	case typ == "invalid_request_error" &&
		(strings.Contains(lower, "credit balance") || strings.Contains(lower, "usage limit") ||
			strings.Contains(lower, "spend limit")):
		// Anthropic answers 400 when the organisation is out of credit or
		// over a spend limit it set; so would it quoting a client's
		// "credit balance" beta or block tag.
		suspect = outcome.Quota
	case typ == "not_found_error" && strings.Contains(lower, "model"):
		// "model: claude-x": the target names a model this key cannot
		// use, or a request named a file or a block that says "model".
		suspect = outcome.TargetMissing
	}
	return kind, suspect
}

// eventError classifies an `error` event inside a stream. Status is the
// one Anthropic documents for the error type, since the HTTP status was 200.
func eventError(errObj gjson.Result) *outcome.Error {
	typ := errObj.Get("type").String()
	msg := errObj.Get("message").String()
	code := errObj.Get("details.error_code").String()
	t, ok := errorTypes[typ]
	if !ok {
		t.kind, t.status = outcome.Unknown, 0
	}
	kind, suspect := kindFor(t.status, typ, code, msg)
	if kind == outcome.OK {
		kind = outcome.Unknown
	}
	if msg == "" {
		msg = "anthropic stream error"
	}
	return &outcome.Error{Kind: kind, Suspect: suspect, Status: t.status, Type: typ, Code: code,
		Message: provider.Message("anthropic stream: " + msg)}
}

// boundedText is body as a message (see provider.Message).
func boundedText(body []byte) string { return provider.Message(string(body)) }

// ParseRateLimit reads Anthropic's anthropic-ratelimit-* headers and
// Retry-After. The token axis is the combined tokens-* one, or input-tokens-*
// when the combined one is absent. Limits of 0, and absent, malformed or
// negative counts, are -1 (unknown); a reset is the RFC 3339 time at which
// the bucket is full again, returned as the duration from now, and 0 when
// absent, malformed or past.
func ParseRateLimit(h http.Header, now time.Time) outcome.RateLimit {
	tok := &hTokens
	if provider.HeaderValue(h, tok.limit) == "" && provider.HeaderValue(h, tok.remaining) == "" && provider.HeaderValue(h, tok.reset) == "" {
		tok = &hInputTokens
	}
	return outcome.RateLimit{
		LimitRequests:     provider.ParseCount(h, hRequests.limit, true),
		RemainingRequests: provider.ParseCount(h, hRequests.remaining, false),
		ResetRequests:     parseReset(provider.HeaderValue(h, hRequests.reset), now),
		LimitTokens:       provider.ParseCount(h, tok.limit, true),
		RemainingTokens:   provider.ParseCount(h, tok.remaining, false),
		ResetTokens:       parseReset(provider.HeaderValue(h, tok.reset), now),
		RetryAfter:        provider.RetryAfter(h, now),
	}
}

// rateHeaders are one axis' anthropic-ratelimit-<axis>-{limit,remaining,
// reset} header names in canonical form, computed once: they index the
// header map directly (provider.HeaderValue).
type rateHeaders struct{ limit, remaining, reset string }

var hRequests, hTokens, hInputTokens = rateAxis("requests"), rateAxis("tokens"), rateAxis("input-tokens")

func rateAxis(axis string) rateHeaders {
	pre := "anthropic-ratelimit-" + axis + "-"
	return rateHeaders{textproto.CanonicalMIMEHeaderKey(pre + "limit"),
		textproto.CanonicalMIMEHeaderKey(pre + "remaining"), textproto.CanonicalMIMEHeaderKey(pre + "reset")}
}

func parseReset(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0
	}
	return provider.CapWait(t.Sub(now))
}
