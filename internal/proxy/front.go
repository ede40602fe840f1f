package proxy

import (
	"net/http"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
)

// Request is one client request served through the front door by a
// handler of another package (the Responses API's, internal/responses/api):
// the routing state it keeps from its start, its exchange, and the front
// door's steps (client authentication, the body within the limits, the
// attempts, the one answer). Every path out of the handler answers exactly
// once, through Answer or Dispatch, or through Authorize or Admit refusing.
type Request struct {
	// Ex is the request's exchange: its attempts, the model once looked
	// up (Model), its api label.
	Ex *answer.Exchange
	s  *Server
	st *state
	w  http.ResponseWriter
	r  *http.Request
}

// Begin starts a request of api (its metrics' api label) on the routing
// state in force; its answer says X-Request-ID. The handler defers End.
func (s *Server) Begin(w http.ResponseWriter, r *http.Request, api string) Request {
	st := s.st.Load()
	q := Request{Ex: s.newExchange(r, w, st, provider.OpChat), s: s, st: st, w: w, r: r}
	q.Ex.API = api
	return q
}

// End records the answered request: its log line and its metrics.
func (q Request) End() { q.s.out.Log(q.r, q.Ex) }

// Authorize answers 401 to a client without an accepted key, and then
// reports false; the request's body is not read.
func (q Request) Authorize() bool {
	if !q.st.keys.Allow(q.r) {
		q.s.out.Answer(q.w, q.Ex, answer.Unauthorized(q.r))
		return false
	}
	return true
}

// Admit authenticates the client and reads its body within the limits;
// nil means the request has been answered (401, or the body's refusal).
// The caller frees the body (Free).
func (q Request) Admit() *intake.Body { return q.s.admit(q.w, q.r, q.Ex, q.st) }

// Free gives back a body Admit read.
func (q Request) Free(b *intake.Body) { q.s.bodies.Free(b) }

// Answer writes res, the request's one answer.
func (q Request) Answer(res answer.Result) { q.s.out.Answer(q.w, q.Ex, res) }

// Dispatch runs req's attempts within the request's deadline and priority
// shedding, lets shape (when not nil) adapt the result, and answers
// (docs/ARCHITECTURE.md, "Request path"): the path a chat request takes.
func (q Request) Dispatch(req *provider.Request, tokens int64, shape func(answer.Result) answer.Result) {
	q.s.dispatch(q.w, q.r, q.Ex, q.st, req, tokens, shape, nil)
}

// Model looks name up in the request's model table: nil when no model has
// that name.
func (q Request) Model(name string) *route.Model { return q.st.models.Lookup(name) }

// Provider returns the named provider of the request's routing state; nil
// when there is none (a reload removed it).
func (q Request) Provider(name string) *failover.Provider { return q.st.providers[name] }

// MaxBodyBytes is the request's limits.max_body_bytes.
func (q Request) MaxBodyBytes() int64 { return q.st.limits.MaxBodyBytes }
