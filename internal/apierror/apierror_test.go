package apierror

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestQuote: a quoted name is valid JSON string text, cut to 100 bytes.
func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`gpt-4o`, `"gpt-4o"`},
		{`a"b<`, `"a\"b<"`},
		{strings.Repeat("x", 101), `"` + strings.Repeat("x", 100) + `…"`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestBadRequest: a 400 invalid_request_error about its param.
func TestBadRequest(t *testing.T) {
	e := BadRequest("messages", "messages is required")
	if e.Status != 400 || e.Type != "invalid_request_error" || e.Code != "invalid_request_error" || e.Param != "messages" ||
		e.Error() != "messages is required" {
		t.Errorf("got %+v", e)
	}
}

// TestEndConnection: the answer says Connection: close.
func TestEndConnection(t *testing.T) {
	rec := httptest.NewRecorder()
	EndConnection(rec)
	if got := rec.Header().Get("Connection"); got != "close" {
		t.Errorf("Connection %q, want close", got)
	}
}
