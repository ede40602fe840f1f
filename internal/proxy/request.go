package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// exchange is one client request: its attempts (failover.Run) and what
// the answer, the log line and the metrics need.
type exchange struct {
	failover.Run
	start  time.Time
	status int // what the client got; 0 until answered
	served string
	// overhead is the router's own time up to the commit point; ttft the
	// time to the first byte of a stream; committed once either is set.
	overhead, ttft time.Duration
	committed      bool
	// writeTimeout bounds each write to the client (limits).
	writeTimeout time.Duration
	// api is the api label when it is not the operation's name (the
	// Responses API is sent as chat).
	api string
}

func (s *Server) newExchange(r *http.Request, w http.ResponseWriter, st *state, op provider.Op) *exchange {
	ex := &exchange{Run: failover.Run{ID: s.requestID(r), Op: op}, start: time.Now(), writeTimeout: st.limits.ClientWriteTimeout}
	setHeader(w.Header(), hdrRequestID, ex.ID)
	return ex
}

// serveOp handles one OpenAI operation end to end: every path out of it
// goes through answer exactly once.
func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, op provider.Op) {
	st := s.st.Load()
	ex := s.newExchange(r, w, st, op)
	defer s.logRequest(r, ex)
	body := s.admit(w, r, ex, st)
	if body == nil {
		return
	}
	defer s.bodies.Free(body)
	f, ierr := intake.Parse(op, body.B)
	if ierr != nil {
		s.answer(w, ex, result{err: ierr})
		return
	}
	if ex.Model = st.models.Lookup(f.Model); ex.Model == nil {
		s.answer(w, ex, result{err: modelNotFound(f.Model)})
		return
	}
	req := &provider.Request{
		Op: op, Body: body.B, ModelStart: f.ModelStart, ModelEnd: f.ModelEnd,
		Stream: f.Stream, IncludeUsage: f.IncludeUsage,
	}
	s.dispatch(w, r, ex, st, req, intake.EstimateTokens(req.Body, f.MaxTokens), nil)
}

// dispatch runs req's attempts within the request's deadline and priority
// shedding, lets shape (when not nil) adapt the result, and answers. The
// deadline and the shedding slot last until the answer is written (a
// stream's end).
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, ex *exchange, st *state, req *provider.Request, tokens int64, shape func(result) result) {
	ctx, cancel := context.WithTimeout(r.Context(), st.limits.RequestTimeout)
	defer cancel()
	release, ierr := s.shed(ctx, r, st)
	if ierr != nil {
		s.answer(w, ex, result{err: ierr})
		return
	}
	if release != nil {
		defer release()
	}
	res := s.walk(ctx, ex, st, req, tokens)
	if shape != nil {
		res = shape(res)
	}
	s.answer(w, ex, res)
}

// admit authenticates the client and reads its body within the limits;
// nil means the request has been answered (401, or the body's refusal).
// The caller frees the body.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, ex *exchange, st *state) *intake.Body {
	if !st.authorized(r) {
		s.answer(w, ex, unauthorized(r))
		return nil
	}
	body, ierr := s.bodies.Read(w, r, st.bodyLimits())
	if ierr != nil {
		s.answer(w, ex, result{err: ierr})
		return nil
	}
	return body
}

// bodyLimits are the limits a request body is read within.
func (st *state) bodyLimits() intake.Limits {
	return intake.Limits{MaxBody: st.limits.MaxBodyBytes, Budget: st.limits.BodyBufferBytes, ReadTimeout: st.limits.BodyReadTimeout}
}

// unauthorized is the 401 for a missing or wrong client key; a body the
// client sent is not read.
func unauthorized(r *http.Request) result {
	return result{err: &intake.Error{Status: http.StatusUnauthorized, Type: "authentication_error", Code: "invalid_api_key",
		Message: "missing or invalid API key: send Authorization: Bearer <key>", EndConn: r.ContentLength != 0}}
}

func modelNotFound(name string) *intake.Error {
	return &intake.Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "model_not_found", Param: "model",
		Message: "the model " + intake.Quote(name) + " does not exist"}
}
