package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oaresp "github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/responses/store"
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
	rr := newResponsesRouterWith(t, func(o *proxy.Options) { o.Store = fs }, tiered{f: oc})
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
