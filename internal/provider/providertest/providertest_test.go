package providertest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTB records failures. Fatal ends the calling goroutine as the real
// one does, so a helper under test runs through run.
type fakeTB struct {
	testing.TB
	errors, fatals []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatal(args ...any) {
	f.fatals = append(f.fatals, fmt.Sprint(args...))
	runtime.Goexit()
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// run calls fn with a fakeTB on its own goroutine and returns the
// failures once fn returned or failed fatally.
func run(fn func(tb testing.TB)) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func TestSameJSON(t *testing.T) {
	tests := []struct {
		name, got, want   string
		wantErrs, wantFat int
	}{
		{"equal despite order, space and number spelling", `{"b":[1,2],"a":{"x":null}}`, `{ "a": {"x": null}, "b": [1.0, 2e0] }`, 0, 0},
		{"different value", `{"a":1}`, `{"a":2}`, 1, 0},
		{"different array order", `[1,2]`, `[2,1]`, 1, 0},
		{"got invalid", `{"a":`, `{}`, 0, 1},
		{"want invalid", `{}`, `{"a":`, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := run(func(tb testing.TB) { SameJSON(tb, "doc", []byte(tt.got), tt.want) })
			if len(f.errors) != tt.wantErrs || len(f.fatals) != tt.wantFat {
				t.Errorf("got errors %q fatals %q, want %d and %d", f.errors, f.fatals, tt.wantErrs, tt.wantFat)
			}
			if len(f.errors) > 0 && !strings.HasPrefix(f.errors[0], "doc:") {
				t.Errorf("got message %q, want it to name the document", f.errors[0])
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	var got any
	f := run(func(tb testing.TB) { got = DecodeJSON(tb, []byte(`{"a":[1,"x",true,null]}`)) })
	want := map[string]any{"a": []any{1.0, "x", true, nil}}
	if len(f.fatals) != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v (fatals %q), want %v", got, f.fatals, want)
	}
	if f := run(func(tb testing.TB) { DecodeJSON(tb, []byte(`nope`)) }); len(f.fatals) != 1 {
		t.Errorf("got fatals %q for invalid JSON, want 1", f.fatals)
	}
}

type codeError struct{ code int }

func (e *codeError) Error() string { return fmt.Sprintf("code %d", e.code) }

func TestAs(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int // 0: want a fatal failure
	}{
		{"the error itself", &codeError{7}, 7},
		{"wrapped", fmt.Errorf("calling x: %w", &codeError{8}), 8},
		{"joined", errors.Join(io.EOF, &codeError{9}), 9},
		{"another type", io.EOF, 0},
		{"nil", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *codeError
			f := run(func(tb testing.TB) { got = As[*codeError](tb, tt.err) })
			if tt.wantCode == 0 {
				if len(f.fatals) != 1 || !strings.Contains(f.fatals[0], "*providertest.codeError") {
					t.Errorf("got fatals %q, want one naming *providertest.codeError", f.fatals)
				}
				return
			}
			if len(f.fatals) != 0 || got == nil || got.code != tt.wantCode {
				t.Errorf("got %v (fatals %q), want code %d", got, f.fatals, tt.wantCode)
			}
		})
	}
}

func TestUpstream(t *testing.T) {
	u := NewUpstream(t, Reply(http.StatusTeapot, map[string]string{"X-Answer": "1"}, "tea"))
	if f := run(func(tb testing.TB) { u.Last(tb) }); len(f.fatals) != 1 {
		t.Errorf("Last with no request: got fatals %q, want 1", f.fatals)
	}
	if f := run(func(tb testing.TB) { u.Only(tb) }); len(f.fatals) != 1 {
		t.Errorf("Only with no request: got fatals %q, want 1", f.fatals)
	}
	if got := u.Requests(); got != nil {
		t.Errorf("Requests = %v, want nil", got)
	}

	req, err := http.NewRequest(http.MethodPost, u.Server.URL+"/v1/x?alt=sse", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Key", "k")
	resp, err := u.Server.Client().Do(req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Answer") != "1" || string(answer) != "tea" {
		t.Errorf("got %d X-Answer %q body %q (%v), want Reply's 418, 1 and tea", resp.StatusCode, resp.Header.Get("X-Answer"), answer, err)
	}
	got := u.Only(t)
	if got.Method != http.MethodPost || got.Path != "/v1/x" || got.Query != "alt=sse" || got.Header.Get("X-Key") != "k" || string(got.Body) != `{"a":1}` {
		t.Errorf("got %+v, want POST /v1/x?alt=sse with X-Key k and body {\"a\":1}", got)
	}

	resp, err = u.Server.Client().Get(u.Server.URL + "/second")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	_ = resp.Body.Close()
	if p := u.Last(t).Path; p != "/second" {
		t.Errorf("Last = %s, want /second", p)
	}
	if f := run(func(tb testing.TB) { u.Only(tb) }); len(f.fatals) != 1 {
		t.Errorf("Only with two requests: got fatals %q, want 1", f.fatals)
	}
	reqs := u.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/x" || len(reqs[1].Body) != 0 {
		t.Fatalf("Requests = %+v, want the two in order, the GET without body", reqs)
	}
	reqs[0].Path = "changed"
	if p := u.Requests()[0].Path; p != "/v1/x" {
		t.Errorf("Requests()[0].Path = %q after changing a copy, want /v1/x", p)
	}
}

func TestCheckClassified(t *testing.T) {
	ok := func() *outcome.Error {
		return &outcome.Error{Kind: outcome.RateLimited, Status: 429, Message: "slow down", RetryAfter: time.Second,
			RateLimit: outcome.RateLimit{LimitRequests: 60, RemainingRequests: 0, ResetRequests: time.Second,
				LimitTokens: -1, RemainingTokens: -1}}
	}
	tests := []struct {
		name  string
		e     func() *outcome.Error
		fatal bool
	}{
		{"fine", ok, false},
		{"zero RateLimit says nothing", func() *outcome.Error { e := ok(); e.RateLimit = outcome.RateLimit{}; return e }, false},
		{"target missing is a known kind", func() *outcome.Error {
			return &outcome.Error{Kind: outcome.TargetMissing, Status: 404, Message: "model: claude-x"}
		}, false},
		{"nil", func() *outcome.Error { return nil }, true},
		{"ok is no failure", func() *outcome.Error { e := ok(); e.Kind = outcome.OK; return e }, true},
		{"kind past the last", func() *outcome.Error { e := ok(); e.Kind = outcome.Kind(len(outcome.Kinds())); return e }, true},
		{"wait too long", func() *outcome.Error { e := ok(); e.RetryAfter = time.Hour; return e }, true},
		{"rate-limit reset too long", func() *outcome.Error { e := ok(); e.RateLimit.ResetTokens = time.Hour; return e }, true},
		{"rate-limit count below unknown", func() *outcome.Error { e := ok(); e.RateLimit.RemainingTokens = -2; return e }, true},
		{"invalid utf-8", func() *outcome.Error { e := ok(); e.Message = "\xff"; return e }, true},
		{"message too long", func() *outcome.Error { e := ok(); e.Message = strings.Repeat("x", MaxMessage+1); return e }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := run(func(tb testing.TB) { CheckClassified(tb, "test", tt.e(), time.Minute) })
			if got := len(f.fatals) > 0; got != tt.fatal || len(f.errors) > 0 {
				t.Errorf("fatals %q errors %q, want fatal %v", f.fatals, f.errors, tt.fatal)
			}
		})
	}
}
