package answer

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
)

func exchange(attempts int, failures ...failover.Failure) *Exchange {
	return &Exchange{Run: failover.Run{ID: "req", Op: provider.OpChat, Model: &route.Model{Name: "m"},
		Supported: true, Attempts: attempts, Failures: failures}}
}

func fail(p string, kind outcome.Kind, status int, retryAfter time.Duration) failover.Failure {
	return failover.Failure{Provider: p, Err: &outcome.Error{Kind: kind, Status: status, RetryAfter: retryAfter, Message: "m"}}
}

// TestUnserved: how a request no attempt served ends, each case the
// status, code and Retry-After a client sees ("HTTP surface").
func TestUnserved(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ex         *Exchange
		deadline   bool
		status     int
		code       string
		retryAfter time.Duration
		mentions   []string // in the message
	}{
		{name: "unsupported operation", ex: func() *Exchange { ex := exchange(0); ex.Supported = false; return ex }(),
			status: 400, code: "unsupported_operation", mentions: []string{`"m"`, "chat"}},
		{name: "deadline", ex: exchange(2, fail("a", outcome.Timeout, 0, 0), fail("b", outcome.ServerError, 500, 0)), deadline: true,
			status: 504, code: "timeout", mentions: []string{"limits.request_timeout", "a", "b status 500"}},
		{name: "only missing targets", ex: func() *Exchange {
			ex := exchange(1, fail("a", outcome.TargetMissing, 404, 0))
			ex.Missing = []string{"a/gpt-x"}
			return ex
		}(), status: 404, code: "model_not_found", mentions: []string{"a/gpt-x", "router enable"}},
		{name: "missing and failed", ex: func() *Exchange {
			ex := exchange(2, fail("a", outcome.TargetMissing, 404, 0), fail("b", outcome.ServerError, 500, 0))
			ex.Missing = []string{"a/gpt-x"}
			return ex
		}(), status: 502, code: "upstream_error"},
		{name: "all rate limited: the soonest Retry-After", ex: exchange(2, fail("a", outcome.RateLimited, 429, 7*time.Second),
			fail("b", outcome.RateLimited, 429, 3*time.Second)), status: 429, code: "rate_limit_exceeded", retryAfter: 3 * time.Second},
		{name: "rate limited without a hint: a second", ex: exchange(1, fail("a", outcome.RateLimited, 429, 0)),
			status: 429, code: "rate_limit_exceeded", retryAfter: time.Second},
		{name: "mixed failures", ex: exchange(2, fail("a", outcome.RateLimited, 429, time.Second), fail("b", outcome.Overloaded, 529, 0)),
			status: 502, code: "upstream_error", mentions: []string{"a status 429", "b status 529"}},
		{name: "nothing admitted, no refusal: 503", ex: exchange(0), status: 503, code: "service_unavailable", retryAfter: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Unserved(tc.ex, tc.deadline)
			e := res.Err
			if e == nil {
				t.Fatalf("got %+v, want an error", res)
			}
			if e.Status != tc.status || e.Code != tc.code || e.RetryAfter != tc.retryAfter {
				t.Errorf("got %d %s Retry-After %s, want %d %s %s", e.Status, e.Code, e.RetryAfter, tc.status, tc.code, tc.retryAfter)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q does not mention %q", e.Message, m)
				}
			}
		})
	}
}

// TestClientError: a provider's client error goes back with its own
// status and words; what is not a client status becomes a 400, and a
// native body is kept as it came.
func TestClientError(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         outcome.Error
		status     int
		typ, msg   string
		raw        string
		wantRawSet bool
	}{
		{name: "404 passed", in: outcome.Error{Status: 404, Type: "not_found_error", Message: "no such thing"}, status: 404, typ: "not_found_error", msg: "no such thing"},
		{name: "a 200 is no client status", in: outcome.Error{Status: 200}, status: 400, typ: "invalid_request_error", msg: "the provider rejected the request"},
		{name: "type error is the generic one", in: outcome.Error{Status: 422, Type: "error", Message: "x"}, status: 422, typ: "invalid_request_error", msg: "x"},
		{name: "native body kept", in: outcome.Error{Status: 400, Type: "invalid_request_error", Message: "m", Body: []byte(`{"type":"error"}`)},
			status: 400, typ: "invalid_request_error", msg: "m", raw: `{"type":"error"}`, wantRawSet: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ClientError(&tc.in)
			if e.Status != tc.status || e.Type != tc.typ || e.Message != tc.msg || (e.Raw != nil) != tc.wantRawSet || string(e.Raw) != tc.raw {
				t.Errorf("got %+v", e)
			}
		})
	}
}

// TestAnswerError: an error answer's status, headers and body as a
// client reads them.
func TestAnswerError(t *testing.T) {
	w := New(nil, nil)
	for _, tc := range []struct {
		name    string
		ex      *Exchange
		res     Result
		status  int
		headers map[string]string // "" means absent
		body    string            // a substring; for Raw the whole body
	}{
		{name: "Retry-After rounds up to whole seconds", ex: exchange(1),
			res:    Result{Err: &apierror.Error{Status: 429, Type: "rate_limit_error", Code: "rate_limit_exceeded", Message: "slow down", RetryAfter: 1500 * time.Millisecond}},
			status: 429, headers: map[string]string{"Retry-After": "2", "X-Llmrouter-Attempts": "1", "X-Should-Retry": ""},
			body: `"code":"rate_limit_exceeded"`},
		{name: "after a failover the SDK must not retry", ex: exchange(2),
			res:    Result{Err: &apierror.Error{Status: 502, Type: "server_error", Code: "upstream_error", Message: "every attempt failed"}},
			status: 502, headers: map[string]string{"X-Should-Retry": "false", "X-Llmrouter-Attempts": "2"}, body: `"type":"server_error"`},
		{name: "401 names its realm", ex: exchange(0),
			res:    Unauthorized(httptest.NewRequest("POST", "/v1/chat/completions", nil)),
			status: 401, headers: map[string]string{"Www-Authenticate": `Bearer realm="llmrouter"`, "X-Llmrouter-Attempts": ""}, body: "invalid_api_key"},
		{name: "a provider's client error names it", ex: exchange(1),
			res:    Result{Err: apierror.BadRequest("messages", "bad"), Provider: "openai"},
			status: 400, headers: map[string]string{"X-Llmrouter-Provider": "openai"}, body: `"param":"messages"`},
		{name: "a native body as it came", ex: exchange(1),
			res:    Result{Err: &apierror.Error{Status: 400, Raw: []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"x"}}`)}},
			status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"x"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w.Answer(rec, tc.ex, tc.res)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d", rec.Code, tc.status)
			}
			for k, v := range tc.headers {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: got %q, want %q", k, got, v)
				}
			}
			body := rec.Body.String()
			if tc.res.Err.Raw != nil {
				if body != tc.body {
					t.Errorf("body %q, want %q byte for byte", body, tc.body)
				}
				return
			}
			if !strings.Contains(body, tc.body) {
				t.Errorf("body %q does not contain %q", body, tc.body)
			}
			var v struct {
				Error struct{ Message, Type string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &v); err != nil || v.Error.Type == "" {
				t.Errorf("body %q is not an OpenAI error: %v", body, err)
			}
			if tc.ex.status != tc.status {
				t.Errorf("the exchange records %d, want %d", tc.ex.status, tc.status)
			}
		})
	}
}

// TestRequestID: a client's short printable X-Request-ID is kept; any
// other gets a fresh one, distinct per request.
func TestRequestID(t *testing.T) {
	w := New(nil, nil)
	for _, tc := range []struct {
		name, id string
		kept     bool
	}{
		{name: "kept", id: "abc-123", kept: true},
		{name: "control byte", id: "abc\x01"},
		{name: "space", id: "a b"},
		{name: "too long", id: strings.Repeat("x", 129)},
		{name: "128 is fine", id: strings.Repeat("x", 128), kept: true},
		{name: "absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", nil)
			if tc.id != "" {
				r.Header.Set("X-Request-Id", tc.id)
			}
			rec := httptest.NewRecorder()
			ex := w.NewExchange(rec, r, provider.OpChat, time.Second)
			if got := ex.ID == tc.id; got != tc.kept {
				t.Errorf("id %q for %q: kept %v, want %v", ex.ID, tc.id, got, tc.kept)
			}
			if rec.Header().Get("X-Request-Id") != ex.ID {
				t.Errorf("header %q, want %q", rec.Header().Get("X-Request-Id"), ex.ID)
			}
		})
	}
	a := w.NewExchange(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil), provider.OpChat, time.Second)
	b := w.NewExchange(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil), provider.OpChat, time.Second)
	if a.ID == b.ID || !strings.HasPrefix(a.ID, "req_") {
		t.Errorf("fresh ids %q and %q", a.ID, b.ID)
	}
}

// TestKeyErrors: the client key refusals say which key and when to come
// back.
func TestKeyErrors(t *testing.T) {
	if e := BudgetExceeded("team", 90*time.Minute+400*time.Millisecond); e.Status != http.StatusTooManyRequests ||
		e.Code != "budget_exceeded" || e.RetryAfter != 90*time.Minute+400*time.Millisecond || !strings.Contains(e.Message, `"team"`) ||
		!strings.Contains(e.Message, "resets in 1h30m0s") {
		t.Errorf("BudgetExceeded: %+v", e)
	}
	if e := BudgetExceeded("team", 0); e.RetryAfter != 0 || strings.Contains(e.Message, "resets") {
		t.Errorf("a total budget never resets: %+v", e)
	}
	if e := KeyRateLimited("team", 10*time.Millisecond); e.RetryAfter != time.Second {
		t.Errorf("KeyRateLimited's Retry-After is at least a second: %+v", e)
	}
	if e := ModelNotAllowed("gpt-4o", "team"); e.Status != 403 || e.Code != "model_not_allowed" || e.Param != "model" {
		t.Errorf("ModelNotAllowed: %+v", e)
	}
}
