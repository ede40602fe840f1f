package e2e

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oaresp "github.com/openai/openai-go/v3/responses"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/responses/api"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// flakyStore is a store of responses that can be switched down, as a
// store across the network (Redis) can be: every call then fails with
// errStoreDown.
type flakyStore struct {
	*store.Memory
	down atomic.Bool
}

var errStoreDown = errors.New("store down: connection refused")

func (f *flakyStore) Get(ctx context.Context, id string) (*store.Record, error) {
	if f.down.Load() {
		return nil, errStoreDown
	}
	return f.Memory.Get(ctx, id)
}

func (f *flakyStore) Put(ctx context.Context, r *store.Record) error {
	if f.down.Load() {
		return errStoreDown
	}
	return f.Memory.Put(ctx, r)
}

func (f *flakyStore) Delete(ctx context.Context, id string) error {
	if f.down.Load() {
		return errStoreDown
	}
	return f.Memory.Delete(ctx, id)
}

// TestResponsesStoreDown: a store of responses that cannot answer never
// makes the router serve a conversation without its history: a
// continuation gets 503 service_unavailable with Retry-After and reaches
// no provider; GET and DELETE get the same 503, not a 404; an answer the
// store could not keep is still served, saying store: false
// (docs/ARCHITECTURE.md, "Responses API").
func TestResponsesStoreDown(t *testing.T) {
	ctx := context.Background()
	oc := newLLMFake(t, "local", openaiAPI)
	oc.always(llmReply{text: "Hi Ada."})
	fs := &flakyStore{Memory: store.NewMemory(store.Config{}, nil)}
	rr := newResponsesRouterWith(t, func(_ *routing.Options, o *api.Options) { o.Store = fs }, tiered{f: oc})
	first, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("I am Ada.")})
	if err != nil || !gjson.Get(first.RawJSON(), "store").Bool() {
		t.Fatalf("first turn: %v, %s", err, first.RawJSON())
	}

	fs.down.Store(true)
	calls := len(oc.received())
	var hdr http.Header
	_, err = rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(first.ID),
		Input: userText("What is my name?")}, option.WithMiddleware(headerInto(&hdr)))
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "service_unavailable" || apiErr.Param != "previous_response_id" ||
		apiErr.Type != "server_error" || hdr.Get("Retry-After") == "" {
		t.Errorf("continuation with the store down: got %v (Retry-After %q), want 503 service_unavailable naming previous_response_id",
			err, hdr.Get("Retry-After"))
	}
	if strings.Contains(apiErr.Message, "connection refused") {
		t.Errorf("the store's own error reached the client: %q", apiErr.Message)
	}
	if n := len(oc.received()); n != calls {
		t.Errorf("the provider got %d requests with the store down, want none", n-calls)
	}
	for name, op := range map[string]func() error{
		"GET":    func() error { _, err := rr.client.Responses.Get(ctx, first.ID, oaresp.ResponseGetParams{}); return err },
		"DELETE": func() error { return rr.client.Responses.Delete(ctx, first.ID) },
	} {
		if err := op(); !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
			t.Errorf("%s with the store down: got %v, want 503", name, err)
		}
	}

	unstored, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("hello")})
	if err != nil || unstored.OutputText() != "Hi Ada." || gjson.Get(unstored.RawJSON(), "store").Bool() {
		t.Errorf("a turn the store could not keep: %v, %s; want served with store false", err, unstored.RawJSON())
	}

	fs.down.Store(false)
	second, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(first.ID),
		Input: userText("What is my name?")})
	if err != nil || second.OutputText() != "Hi Ada." {
		t.Fatalf("continuation after the store came back: %v", err)
	}
	got := oc.received()
	if m := join(oc.messages(got[len(got)-1])); m != "user: I am Ada. | assistant: Hi Ada. | user: What is my name?" {
		t.Errorf("provider got %s", m)
	}
}

// TestResponsesStoredGauges: llmrouter_responses_stored and
// llmrouter_responses_stored_bytes exist from start-up at 0, count a
// stored response and its bytes, leave out a store: false one, and fall
// back to 0 when it is deleted (docs/ARCHITECTURE.md, "Metrics").
func TestResponsesStoredGauges(t *testing.T) {
	ctx := context.Background()
	oc := newLLMFake(t, "local", openaiAPI)
	rr := newResponsesRouter(t, tiered{f: oc})
	read := func() (n, bytes float64) {
		t.Helper()
		return gauge(t, rr.reg, "llmrouter_responses_stored"), gauge(t, rr.reg, "llmrouter_responses_stored_bytes")
	}
	if n, b := read(); n != 0 || b != 0 {
		t.Errorf("at start-up: stored %v, bytes %v; want both present at 0", n, b)
	}
	resp, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("hello")})
	if err != nil {
		t.Fatal(err)
	}
	n, b := read()
	if n != 1 || b < float64(len(resp.RawJSON())) {
		t.Errorf("after one response: stored %v, bytes %v; want 1 and at least its %d bytes of JSON", n, b, len(resp.RawJSON()))
	}
	if _, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("x"), Store: oai.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	if n2, b2 := read(); n2 != n || b2 != b {
		t.Errorf("after a store: false response: stored %v, bytes %v; want unchanged %v, %v", n2, b2, n, b)
	}
	if err := rr.client.Responses.Delete(ctx, resp.ID); err != nil {
		t.Fatal(err)
	}
	if n, b := read(); n != 0 || b != 0 {
		t.Errorf("after DELETE: stored %v, bytes %v; want 0, 0", n, b)
	}
}

// gauge is the value of an unlabelled gauge; the test fails when the
// registry has no such series.
func gauge(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

// TestResponsesTooLargeToStore: with responses.max_bytes below what one
// response takes, the response is served, says store: false, is not
// stored (GET is a 404) and a warning is logged.
func TestResponsesTooLargeToStore(t *testing.T) {
	ctx := context.Background()
	oc := newLLMFake(t, "local", openaiAPI)
	var logs lockedBuffer
	rr := newResponsesRouterWith(t, func(p *routing.Options, o *api.Options) {
		o.Config = store.Config{MaxBytes: 256}
		p.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o.Logger = p.Logger
	}, tiered{f: oc})
	resp, err := rr.client.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("hello")})
	if err != nil || resp.OutputText() != "hello from local" || gjson.Get(resp.RawJSON(), "store").Bool() {
		t.Fatalf("got %v %s; want served with store false", err, resp.RawJSON())
	}
	var apiErr *oai.Error
	if _, err := rr.client.Responses.Get(ctx, resp.ID, oaresp.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("GET: %v, want 404", err)
	}
	// The warning follows the answer: wait for it.
	if !eventually(hangBound, func() bool {
		return strings.Contains(logs.String(), "not stored") && strings.Contains(logs.String(), "responses.max_bytes")
	}) {
		t.Errorf("no warning naming responses.max_bytes in the log:\n%s", logs.String())
	}
}
