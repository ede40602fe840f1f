package failover

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// oneChunk is a stream of one content chunk, then its end.
type oneChunk struct{ done bool }

func (s *oneChunk) Next() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	s.done = true
	return []byte(`{"choices":[{"index":0,"delta":{"content":"x"}}]}`), nil
}
func (s *oneChunk) Usage() outcome.Usage { return outcome.Usage{CompletionTokens: 1} }
func (s *oneChunk) Close() error         { return nil }

// TestRescue: who is asked to continue a stream that failed after its
// commit, in what order, and what ends the rescue (docs/ARCHITECTURE.md,
// "Streaming"). Targets: a (tier 0, served the stream), b (tier 0) and c
// (tier 1); by default b and c continue.
func TestRescue(t *testing.T) {
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`
	for _, tc := range []struct {
		name       string
		aContinues bool
		stalled    bool                      // the served attempt ended as a stall
		fails      map[string]*outcome.Error // by target
		err        *outcome.Error
		body       string
		attempts   int // max_attempts
		want       []string
		continued  bool
		refusedB   bool // b is not asked by a later rescue
	}{
		{name: "cut: the failed target first", aContinues: true, err: &outcome.Error{Kind: outcome.Network}, want: []string{"a"}, continued: true},
		{name: "a stall: the others", aContinues: true, stalled: true, err: &outcome.Error{Kind: outcome.Network}, want: []string{"b"}, continued: true},
		{name: "an error event: the others", aContinues: true, err: &outcome.Error{Kind: outcome.Overloaded}, want: []string{"b"}, continued: true},
		{name: "cut, the failed target does not continue", err: &outcome.Error{Kind: outcome.Network}, want: []string{"b"}, continued: true},
		{name: "a refusal ends it and is remembered", err: &outcome.Error{Kind: outcome.Network},
			fails: map[string]*outcome.Error{"b": {Kind: outcome.ClientError, Status: 400, Message: "This model does not support assistant message prefill."}},
			want:  []string{"b"}, refusedB: true},
		{name: "a failure moves on, any tier", err: &outcome.Error{Kind: outcome.Network},
			fails: map[string]*outcome.Error{"b": {Kind: outcome.ServerError, Status: 500}}, want: []string{"b", "c"}, continued: true},
		{name: "the last attempt is kept for the fallback tier", err: &outcome.Error{Kind: outcome.Network}, attempts: 2, want: []string{"c"}, continued: true},
		{name: "attempts spent", err: &outcome.Error{Kind: outcome.Network}, attempts: 2,
			fails: map[string]*outcome.Error{"c": {Kind: outcome.ServerError, Status: 500}}, want: []string{"c"}},
		{name: "structured output", err: &outcome.Error{Kind: outcome.Network},
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"response_format":{"type":"json_schema"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			script := func(name string, fail *outcome.Error) *fake {
				return &fake{do: func(_ context.Context, n int) (*provider.Response, error) {
					if n > 1 || name != "a" {
						asked = append(asked, name)
						if fail != nil {
							return nil, fail
						}
					}
					return &provider.Response{Stream: &oneChunk{}}, nil
				}}
			}
			rg := newRig(t, retryEvery,
				tgt{name: "a", a: script("a", nil), cfg: provider.Config{ContinueFinalMessage: tc.aContinues}},
				tgt{name: "b", a: script("b", tc.fails["b"]), cfg: provider.Config{ContinueFinalMessage: true}},
				tgt{name: "c", tier: 1, a: script("c", tc.fails["c"]), cfg: provider.Config{ContinueFinalMessage: true}})
			rg.pol.Stream.Rescue = true
			if tc.attempts > 0 {
				rg.pol.Retry.MaxAttempts = tc.attempts
			}
			body := tc.body
			if body == "" {
				body = chat
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			// a ranks first: b and c are not a's (the rig's ranking is
			// random within a tier), so a serves.
			rg.provs["b"].Up.DisableTarget("b-model", "not now")
			r := &Run{ID: "req", Op: provider.OpChat, Model: rg.model}
			req := &provider.Request{Op: provider.OpChat, Body: []byte(body), Stream: true}
			res := rg.loop.Walk(ctx, r, &rg.pol, func(name string) *Provider { return rg.provs[name] }, req, 10)
			sv := res.Served
			if sv == nil || sv.Provider.Name != "a" {
				t.Fatalf("served by %q, want a", servedBy(res))
			}
			rg.provs["b"].Up.Enable()
			// b back among the candidates, as if it had been there.
			rg.loop.plan(r, &rg.pol, func(name string) *Provider { return rg.provs[name] }, req, time.Now())
			if !rg.loop.Rescuable(ctx, r, &rg.pol, 10, sv) {
				t.Fatal("not rescuable")
			}
			if tc.stalled {
				sv.rc.Cancel(errStreamIdle)
			}
			_, ok := sv.Rescue(tc.err, "x")
			sv.Done(outcome.OK)
			if ok != tc.continued || !slices.Equal(asked, tc.want) {
				t.Errorf("continued %v, asked %v; want %v, %v", ok, asked, tc.continued, tc.want)
			}
			if len(r.Failures) == 0 || r.Failures[0].Provider != "a" {
				t.Errorf("the failed stream is not among the failures: %+v", r.Failures)
			}
			if got := rg.provs["b"].prefill.refused("b-model"); got != tc.refusedB {
				t.Errorf("b refused: %v, want %v", got, tc.refusedB)
			}
		})
	}
}

// TestContinuationBody: what a continuing target is sent is the request
// with the prefix as the assistant's.
func TestContinuationBody(t *testing.T) {
	req := &provider.Request{Op: provider.OpChat, Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}
	c, ok := req.Continuing("abc")
	if !ok || gjson.GetBytes(c.Body, "messages.1.content").Str != "abc" || gjson.GetBytes(c.Body, "messages.1.role").Str != "assistant" {
		t.Fatalf("got %s", c.Body)
	}
}
