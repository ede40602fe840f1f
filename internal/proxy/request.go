package proxy

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// serve handles one request of a Read route end to end: every path out
// of it goes through the answer writer exactly once.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, d *Dialect, read func(Request, *http.Request, []byte) (Call, *apierror.Error)) {
	q := s.begin(w, r, d, "")
	defer q.End()
	q.Read(read)
}

// Read, for a Serve route, serves the request as a Read route does with
// read: the client's key, its body within the limits, read, the attempts
// and the one answer (a route that serves several operations under one
// pattern: the Gemini API's {model}:{method}).
func (q Request) Read(read func(Request, *http.Request, []byte) (Call, *apierror.Error)) {
	body := q.admit()
	if body == nil {
		return
	}
	q.Dispatch(body, read)
}

// Dispatch, for a Serve route, serves a body Admit read as Read does
// (read, the attempts and the one answer), and frees it: a route that
// looks at the body before it decides (a WebSocket message that may be a
// warm-up answered without a provider).
func (q Request) Dispatch(body *intake.Body, read func(Request, *http.Request, []byte) (Call, *apierror.Error)) {
	s, r := q.s, q.r // r's context carries the request's span
	// The body is freed once: by dispatch as soon as the attempts are over
	// (it then clears req.Body), or here on any other way out, a panic
	// included (a leaked body would shrink limits.body_buffer_bytes for
	// good).
	var c Call
	defer func() {
		if c.Req == nil || c.Req.Body != nil || c.Hold {
			s.bodies.Free(body)
		}
	}()
	c, aerr := read(q, r, body.B)
	if aerr != nil {
		c = Call{}
		q.Answer(answer.Result{Err: aerr})
		return
	}
	if c.After != nil {
		defer c.After()
	}
	if c.Hold {
		s.dispatch(q, c, nil)
		return
	}
	s.dispatch(q, c, body)
}

// dispatch runs c's attempts within the request's deadline and priority
// shedding, lets c.Shape (when not nil) adapt the result, and answers. The
// deadline and the shedding slot last until the answer is written (a
// stream's end). body, when not nil, is the client's body that c.Req.Body
// views: it is freed as soon as the attempts are over, before the answer
// is written, and c.Req.Body cleared to say so, so that a stream does not
// hold its request's buffer (and its share of limits.body_buffer_bytes)
// for its whole life (docs/ARCHITECTURE.md, "Memory"), unless a
// continuation may need it (a stream that may be rescued).
func (s *Server) dispatch(q Request, c Call, body *intake.Body) {
	// One reqctx.Ctx, in the exchange, linked to the server's own request
	// context without a children map or closures, and its one timer, which
	// the attempts' timeouts ride (docs/ARCHITECTURE.md, "Request
	// contexts").
	ctx := &q.Ex.Timeout
	ctx.Init(q.r.Context())
	ctx.SetDeadline(time.Now().Add(q.st.Limits.RequestTimeout))
	defer ctx.Cancel(nil)
	release, aerr := s.shed(ctx, q.r, q.st)
	if aerr != nil {
		q.Answer(answer.Result{Err: aerr})
		return
	}
	if release != nil {
		defer release()
	}
	// The client key's own limits (docs/ARCHITECTURE.md, "Client keys
	// and spend"): its ticket is settled once the answer has ended, a
	// stream's end included, with what the provider reported.
	key := q.Ex.Key
	var estimate float64
	if key.HasBudget() {
		estimate = estimateCost(q.st, q.Ex.Model, c)
	}
	tk, refusal := key.Admit(ctx, s.now, c.Tokens, estimate)
	if refusal != nil {
		q.Ex.Trace.Refused("", refusal.Reason.String(), refusal.Wait)
		q.Answer(keyRefusal(ctx, key, refusal))
		return
	}
	defer func() { key.Settle(s.now(), tk, q.Ex.Usage.Total(), q.Ex.Cost) }()
	q.Ex.Op, q.Ex.Affinity, q.Ex.MaxTokens = c.Req.Op, c.Affinity, c.MaxTokens
	if c.Req.Op != provider.OpEmbeddings {
		// The prompt estimate decides which context windows the request
		// fits (docs/ARCHITECTURE.md, "Context windows"); an embedding's
		// limit is per input, not per batch.
		q.Ex.Prompt = max(c.Tokens-intake.CompletionBudget(c.MaxTokens), 0)
	}
	res := s.walk(ctx, q.Ex, q.st, c.Req, c.Tokens)
	// A stream that may be rescued keeps the body its continuation is
	// built from until its end (serve frees it then).
	if body != nil && (res.Served == nil || !res.Served.CanRescue()) {
		c.Req.Body = nil
		s.bodies.Free(body)
	}
	if c.Shape != nil {
		res = c.Shape(res)
	}
	q.Answer(res)
}

// keyRefusal is the answer to a request its client key's limits refused.
func keyRefusal(ctx context.Context, key *clientkeys.Key, r *clientkeys.Refusal) answer.Result {
	switch r.Reason {
	case clientkeys.TooLarge:
		return answer.Result{Err: answer.KeyTooLarge(key.Name())}
	case clientkeys.Budget:
		return answer.Result{Err: answer.BudgetExceeded(key.Name(), r.Wait)}
	case clientkeys.Deadline:
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return answer.Result{Gone: true}
		}
		return answer.Result{Err: answer.BudgetWaitTimeout(key.Name())}
	}
	return answer.Result{Err: answer.KeyRateLimited(key.Name(), r.Wait)}
}

// estimateCost is what c is expected to cost, reserved against its client
// key's budget: its prompt estimate and completion budget at the prices
// of the model's best tier (the dearest target there, since the ranking
// is not drawn yet).
func estimateCost(st *routing.State, m *route.Model, c Call) float64 {
	out := intake.CompletionBudget(c.MaxTokens)
	prompt := c.Tokens - out
	var est float64
	for _, tg := range m.Targets {
		if tg.Tier != m.BestTier {
			continue
		}
		p, _ := st.Prices.Lookup(tg.Provider, tg.Model)
		est = max(est, p.Estimate(prompt, out))
	}
	return est
}
