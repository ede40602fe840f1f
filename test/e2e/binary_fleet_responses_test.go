package e2e

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oaresp "github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/redistest"
)

// testFleetResponses: two routers sharing one redis-server, each in front
// of its own provider (an OpenAI-compatible one behind A, an Anthropic one
// behind B). A conversation begun on A continues on B through
// previous_response_id: B's provider receives the first turn, GET on B
// returns A's response (docs/ARCHITECTURE.md, "Responses API"). With
// Redis gone, B answers a read of A's response with 503 and Retry-After
// (it may live in Redis; never 404), and a conversation begun on B then
// continues on B from its own memory.
func testFleetResponses(t *testing.T, bin string) {
	srv := redistest.Start(t)
	fa := newLLMFake(t, "pa", openaiAPI)
	fb := newLLMFake(t, "pb", anthropicAPI)
	fa.always(llmReply{text: "Noted: your name is Grace."})
	const answer = "You told me your name is Grace."
	fb.always(llmReply{text: answer})
	bf := func(f *llmFake) *binFake { return &binFake{upstream: &upstream{name: f.name, d: f.d, srv: f.srv}} }
	a := startRouter(t, bin, binConfig{top: fleetTop(srv.URL()), providers: []binProvider{{fake: bf(fa), typ: "openai_compatible"}}})
	b := startRouter(t, bin, binConfig{top: fleetTop(srv.URL()), providers: []binProvider{{fake: bf(fb), typ: "anthropic"}}})
	defer a.stop()
	defer b.stop()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	client := func(p *routerProc) oai.Client {
		return oai.NewClient(option.WithBaseURL(p.api+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0), option.WithHTTPClient(hc))
	}
	ca, cb := client(a), client(b)
	ctx, cancel := context.WithTimeout(context.Background(), 3*hangBound)
	defer cancel()

	first, err := ca.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Store: oai.Bool(true), Input: userText("My name is Grace.")})
	if err != nil || first.OutputText() != "Noted: your name is Grace." || !gjson.Get(first.RawJSON(), "store").Bool() {
		t.Fatalf("turn 1 on A: %v %+v", err, first)
	}
	second, err := cb.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(first.ID),
		Input: userText("What is my name?")})
	if err != nil || second.OutputText() != answer {
		t.Fatalf("turn 2 on B continuing A's %s: %v %+v", first.ID, err, second)
	}
	got := fb.received()
	if len(got) != 1 {
		t.Fatalf("B's provider got %d requests", len(got))
	}
	want := "user: My name is Grace. | assistant: Noted: your name is Grace. | user: What is my name?"
	if m := join(fb.messages(got[0])); m != want {
		t.Errorf("B's provider got\n%s\nwant\n%s", m, want)
	}
	again, err := cb.Responses.Get(ctx, first.ID, oaresp.ResponseGetParams{})
	if err != nil || again.ID != first.ID || again.OutputText() != first.OutputText() {
		t.Errorf("GET on B of A's response: %v %+v", err, again)
	}
	// And back: A continues B's turn.
	fa.always(llmReply{text: "Grace, still."})
	third, err := ca.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(second.ID),
		Input: userText("Again?")})
	if err != nil || third.OutputText() != "Grace, still." {
		t.Fatalf("turn 3 on A continuing B's %s: %v %+v", second.ID, err, third)
	}
	if rs := fa.received(); len(rs) != 2 || join(fa.messages(rs[1])) != want+" | assistant: "+answer+" | user: Again?" {
		t.Errorf("A's provider got %d requests, the last: %s", len(rs), join(fa.messages(rs[len(rs)-1])))
	}

	srv.Stop()
	var apiErr *oai.Error
	_, err = cb.Responses.Get(ctx, first.ID, oaresp.ResponseGetParams{})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable ||
		apiErr.Response.Header.Get("Retry-After") == "" {
		t.Errorf("GET with Redis down: %v, want 503 with Retry-After (never 404)", err)
	}
	if !eventually(5*time.Second, func() bool { return b.metricValue(t, "llmrouter_shared_state_up") == 0 }) {
		t.Error("B: shared_state_up not 0 with Redis down")
	}
	fb.always(llmReply{text: "Hello, Ada."})
	local, err := cb.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", Input: userText("I am Ada.")})
	if err != nil || !gjson.Get(local.RawJSON(), "store").Bool() {
		t.Fatalf("a first turn on B with Redis down: %v %+v", err, local)
	}
	if _, err := cb.Responses.New(ctx, oaresp.ResponseNewParams{Model: "m", PreviousResponseID: oai.String(local.ID),
		Input: userText("Who am I?")}); err != nil {
		t.Errorf("continuing on B, with Redis down, a conversation begun there: %v", err)
	}
	rs := fb.received()
	if m := join(fb.messages(rs[len(rs)-1])); m != "user: I am Ada. | assistant: Hello, Ada. | user: Who am I?" {
		t.Errorf("B's provider got %s", m)
	}
}
