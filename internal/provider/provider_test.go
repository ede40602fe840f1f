package provider

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/reqctx"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 10, 21, 7, 28, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"absent", nil, 0},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{"fraction", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"ms wins", map[string]string{"Retry-After": "30", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"bad ms falls back", map[string]string{"Retry-After": "3", "Retry-After-Ms": "soon"}, 3 * time.Second},
		{"http date", map[string]string{"Retry-After": "Wed, 21 Oct 2026 07:28:09 GMT"}, 9 * time.Second},
		{"date in past", map[string]string{"Retry-After": "Wed, 21 Oct 2026 07:27:00 GMT"}, 0},
		{"negative", map[string]string{"Retry-After": "-5"}, 0},
		{"garbage", map[string]string{"Retry-After": "tomorrow"}, 0},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0},
		{"huge capped", map[string]string{"Retry-After": "1e30"}, maxRetryAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.h {
				h.Set(k, v)
			}
			if got := RetryAfter(h, now); got != tt.want {
				t.Errorf("RetryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseCount(t *testing.T) {
	tests := []struct {
		v           string
		zeroUnknown bool
		want        int64
	}{
		{"", false, -1}, {"59", false, 59}, {"0", false, 0}, {"0", true, -1},
		{"-1", false, -1}, {"abc", false, -1}, {" 12 ", false, 12}, {"12.0", false, 12},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.v != "" {
			h.Set("X", tt.v)
		}
		if got := ParseCount(h, "X", tt.zeroUnknown); got != tt.want {
			t.Errorf("ParseCount(%q, %v) = %d, want %d", tt.v, tt.zeroUnknown, got, tt.want)
		}
	}
}

func TestRequestAppendBody(t *testing.T) {
	body := []byte(`{"model":"alias","messages":[]}`)
	r := &Request{Model: `real"model`, Body: body, ModelStart: 9, ModelEnd: 16}
	got := string(r.AppendBody(nil))
	if want := `{"model":"real\"model","messages":[]}`; got != want {
		t.Errorf("AppendBody = %s, want %s", got, want)
	}
	r.ModelStart, r.ModelEnd = 0, 0
	if got := string(r.AppendBody(nil)); got != string(body) {
		t.Errorf("without model span got %s", got)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransportError(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	deadline, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	firstToken, cancel3 := context.WithCancelCause(context.Background())
	cancel3(&outcome.Error{Kind: outcome.Timeout, Message: "no first token"})
	// The attempt's own context (internal/reqctx), whose cause
	// context.Cause cannot see.
	rcCanceled, rcDeadline, rcFirstToken := &reqctx.Ctx{}, &reqctx.Ctx{}, &reqctx.Ctx{}
	rcCanceled.Cancel(nil)
	rcDeadline.SetDeadline(time.Now().Add(-time.Second))
	rcFirstToken.Cancel(&outcome.Error{Kind: outcome.Timeout, Message: "no first token"})

	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want outcome.Kind
	}{
		{"reset", context.Background(), syscall.ECONNRESET, outcome.Network},
		{"refused", context.Background(), syscall.ECONNREFUSED, outcome.Network},
		{"net timeout", context.Background(), timeoutErr{}, outcome.Timeout},
		{"client canceled", canceled, context.Canceled, outcome.Canceled},
		{"deadline", deadline, context.DeadlineExceeded, outcome.Timeout},
		{"proxy cause", firstToken, context.Canceled, outcome.Timeout},
		{"already classified", context.Background(), &outcome.Error{Kind: outcome.Auth}, outcome.Auth},
		{"reqctx client canceled", rcCanceled, context.Canceled, outcome.Canceled},
		{"reqctx deadline", rcDeadline, context.DeadlineExceeded, outcome.Timeout},
		{"reqctx proxy cause", rcFirstToken, context.Canceled, outcome.Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := TransportError(tt.ctx, "calling x", tt.err)
			if got := outcome.KindOf(err); got != tt.want {
				t.Errorf("kind = %v, want %v (%v)", got, tt.want, err)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("cause lost: %v", err)
			}
		})
	}
}

func TestParseBaseURL(t *testing.T) {
	tests := []struct {
		raw, def, want, err string
	}{
		{"", "https://api.example.com/v1", "https://api.example.com/v1", ""},
		{" http://127.0.0.1:11434/v1 ", "", "http://127.0.0.1:11434/v1", ""},
		{"ftp://x", "", "", "scheme must be http or https"},
		{"https://", "", "", "no host"},
		{"https://user:pass@host", "", "", "credentials belong in api_key_env"},
		{"https://host/v1?key=x", "", "", "must not have a query"},
		{"https://host/#frag", "", "", "must not have a query or fragment"},
		{"::nope", "", "", "base_url:"},
	}
	for _, tt := range tests {
		u, err := ParseBaseURL(tt.raw, tt.def)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "base_url: ") {
				t.Errorf("%q: error %v, want one naming base_url and %q", tt.raw, err, tt.err)
			}
			continue
		}
		if err != nil || u.String() != tt.want {
			t.Errorf("%q: got %v, %v; want %s", tt.raw, u, err, tt.want)
		}
	}
}

// modelOps serves chat for every model and messages for "m-native" only.
type modelOps struct{}

func (modelOps) Do(context.Context, *Request) (*Response, error) { return nil, nil }
func (modelOps) Supports(op Op) bool                             { return op == OpChat || op == OpMessages }
func (modelOps) SupportsModel(op Op, model string) bool {
	return op == OpChat || model == "m-native"
}

// plainOps serves chat only, for any model.
type plainOps struct{ modelOps }

func (plainOps) Supports(op Op) bool { return op == OpChat }

func TestServes(t *testing.T) {
	for _, tt := range []struct {
		a     Adapter
		op    Op
		model string
		want  bool
	}{
		{modelOps{}, OpChat, "m", true},
		{modelOps{}, OpMessages, "m-native", true},
		{modelOps{}, OpMessages, "m", false},
		{modelOps{}, OpEmbeddings, "m-native", false}, // Supports says no first
		{plainOps{}, OpChat, "m", true},
		{plainOps{}, OpMessages, "m-native", false},
	} {
		if got := Serves(tt.a, tt.op, tt.model); got != tt.want {
			t.Errorf("Serves(%T, %s, %s): got %v, want %v", tt.a, tt.op, tt.model, got, tt.want)
		}
	}
}

type headerCatcher struct{ got http.Header }

func (c *headerCatcher) RoundTrip(r *http.Request) (*http.Response, error) {
	c.got = r.Header.Clone()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// TestSendCarriesTheAttemptsTraceContext: the span the request's context
// carries (the attempt's) goes to the provider as traceparent; without
// one, no header is added.
func TestSendCarriesTheAttemptsTraceContext(t *testing.T) {
	tr, err := tracing.New(tracing.Config{OTLPEndpoint: "http://127.0.0.1:1", SampleRatio: 1}, tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Shutdown(context.Background()) }()
	in := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	ctx, r := tr.Start(context.Background(), in, "chat", "")
	actx, _ := r.Attempt(ctx, tracing.Try{Op: "chat", Model: "m"})
	_, attempt := tracing.IDs(actx)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"attempt span", actx, "00-0af7651916cd43dd8448eb211c80319c-" + attempt + "-01"},
		{"tracing off", context.Background(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &headerCatcher{}
			req, _ := http.NewRequestWithContext(tc.ctx, http.MethodPost, "http://provider.invalid/v1/chat/completions", http.NoBody)
			resp, err := Send(&http.Client{Transport: rt}, req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := rt.got.Get("traceparent"); got != tc.want {
				t.Errorf("traceparent %q, want %q", got, tc.want)
			}
		})
	}
}
