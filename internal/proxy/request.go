package proxy

import (
	"context"
	"net/http"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/provider"
)

func (s *Server) newExchange(r *http.Request, w http.ResponseWriter, st *state, op provider.Op) *answer.Exchange {
	return s.out.NewExchange(w, r, op, st.limits.ClientWriteTimeout)
}

// serveOp handles one OpenAI operation end to end: every path out of it
// goes through the answer writer exactly once.
func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, op provider.Op) {
	st := s.st.Load()
	ex := s.newExchange(r, w, st, op)
	defer s.out.Log(r, ex)
	body := s.admit(w, r, ex, st)
	if body == nil {
		return
	}
	// The body is freed once: by dispatch as soon as the attempts are over
	// (it then clears req.Body), or here on any other way out, a panic
	// included (a leaked body would shrink limits.body_buffer_bytes for
	// good).
	var req *provider.Request
	defer func() {
		if req == nil || req.Body != nil {
			s.bodies.Free(body)
		}
	}()
	f, ierr := intake.Parse(op, body.B)
	if ierr != nil {
		s.out.Answer(w, ex, answer.Result{Err: ierr})
		return
	}
	if ex.Model = st.models.Lookup(f.Model); ex.Model == nil {
		s.out.Answer(w, ex, answer.Result{Err: answer.ModelNotFound(f.Model)})
		return
	}
	req = &provider.Request{
		Op: op, Body: body.B, ModelStart: f.ModelStart, ModelEnd: f.ModelEnd,
		Stream: f.Stream, IncludeUsage: f.IncludeUsage,
	}
	s.dispatch(w, r, ex, st, req, intake.EstimateTokens(req.Body, f.MaxTokens), nil, body)
}

// dispatch runs req's attempts within the request's deadline and priority
// shedding, lets shape (when not nil) adapt the result, and answers. The
// deadline and the shedding slot last until the answer is written (a
// stream's end). body, when not nil, is the client's body that req.Body
// views: it is freed as soon as the attempts are over, before the answer
// is written, and req.Body cleared to say so, so that a stream does not
// hold its request's buffer (and its share of limits.body_buffer_bytes)
// for its whole life (docs/ARCHITECTURE.md, "Memory").
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, ex *answer.Exchange, st *state, req *provider.Request, tokens int64, shape func(answer.Result) answer.Result, body *intake.Body) {
	ctx, cancel := context.WithTimeout(r.Context(), st.limits.RequestTimeout)
	defer cancel()
	release, ierr := s.shed(ctx, r, st)
	if ierr != nil {
		s.out.Answer(w, ex, answer.Result{Err: ierr})
		return
	}
	if release != nil {
		defer release()
	}
	res := s.walk(ctx, ex, st, req, tokens)
	if body != nil {
		req.Body = nil
		s.bodies.Free(body)
	}
	if shape != nil {
		res = shape(res)
	}
	s.out.Answer(w, ex, res)
}

// admit authenticates the client and reads its body within the limits;
// nil means the request has been answered (401, or the body's refusal).
// The caller frees the body.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, ex *answer.Exchange, st *state) *intake.Body {
	if !st.keys.Allow(r) {
		s.out.Answer(w, ex, answer.Unauthorized(r))
		return nil
	}
	body, ierr := s.bodies.Read(w, r, st.bodyLimits())
	if ierr != nil {
		s.out.Answer(w, ex, answer.Result{Err: ierr})
		return nil
	}
	return body
}

// bodyLimits are the limits a request body is read within.
func (st *state) bodyLimits() intake.Limits {
	return intake.Limits{MaxBody: st.limits.MaxBodyBytes, Budget: st.limits.BodyBufferBytes, ReadTimeout: st.limits.BodyReadTimeout}
}
