package proxy

import (
	"context"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// Request is one client request on the front door, as a dialect's route
// sees it: the routing state it keeps from its start, its exchange, and
// the front door's steps. Every path out of a route answers exactly once:
// a Read route by returning (the front door answers), a Serve route
// through Answer, or through Authorize refusing.
type Request struct {
	// Ex is the request's exchange: its attempts, the model once looked
	// up (Model), its api label and error shape.
	Ex *answer.Exchange
	s  *Server
	st *routing.State
	w  http.ResponseWriter
	r  *http.Request
}

// begin starts a request of dialect d on the routing state in force; its
// answer says X-Request-ID. With tracing on it is a span, continuing the
// client's trace, named after its model, or after route when route is not
// "" (a route the attempt loop does not serve); the request's context
// carries it. The caller defers End.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, d *Dialect, route string) Request {
	st := s.routes.Load()
	ex := s.out.NewExchange(w, r, 0, st.Limits.ClientWriteTimeout)
	ex.API, ex.Shape, ex.Prices = d.API, d.Shape, st.Prices
	if s.trace != nil {
		var ctx context.Context
		ctx, ex.Trace = s.trace.Start(r.Context(), r.Header, d.API, route)
		r = r.WithContext(ctx)
	}
	return Request{Ex: ex, s: s, st: st, w: w, r: r}
}

// End records the answered request: its log line and its metrics.
func (q Request) End() { q.s.out.Log(q.r, q.Ex) }

// Authorize answers 401 to a client without an accepted key, and then
// reports false; the request's body is not read. Otherwise the key it
// came with (named, or the anonymous one) is the exchange's.
func (q Request) Authorize() bool {
	name, ok := q.st.Keys.Identify(q.r)
	if !ok {
		q.s.out.Answer(q.w, q.Ex, answer.Unauthorized(q.r))
		return false
	}
	q.Ex.Key = q.st.Clients.Lookup(name)
	q.Ex.Trace.SetKey(q.Ex.Key.Name())
	return true
}

// Answer writes res, the request's one answer.
func (q Request) Answer(res answer.Result) { q.s.out.Answer(q.w, q.Ex, res) }

// UseModel looks name up in the request's model table (exact names
// first, then patterns) and makes it the request's model; the error is
// the 404 for a model not configured, or the 403 for one the client's
// key may not call (auth.keys[].models).
func (q Request) UseModel(name string) *apierror.Error {
	q.Ex.Requested = cutModel(name)
	if q.Ex.Model = q.st.Models.Lookup(name); q.Ex.Model == nil {
		return answer.ModelNotFound(name)
	}
	q.Ex.Trace.Model(name, q.Ex.Model.Name)
	if !q.Ex.Key.Allows(name) {
		return answer.ModelNotAllowed(name, q.Ex.Key.Name())
	}
	return nil
}

// Provider returns the named provider of the request's routing state; nil
// when there is none (a reload removed it).
func (q Request) Provider(name string) *failover.Provider { return q.st.Providers[name] }

// Affinity reports whether conversation affinity applies to the request
// (docs/ARCHITECTURE.md, "Affinity"): routing.affinity is on and its
// model (UseModel first) has more than one target to choose from. A
// dialect reads the request's identity (Call.Affinity) only then.
func (q Request) Affinity() bool {
	return q.st.Routing.Affinity.Enabled && q.Ex.Model != nil && len(q.Ex.Model.Targets) > 1
}

// MaxBodyBytes is the request's limits.max_body_bytes.
func (q Request) MaxBodyBytes() int64 { return q.st.Limits.MaxBodyBytes }

// Admit, for a Serve route, authenticates the client and reads its body
// within the limits; nil means the request has been answered (401, or the
// body's refusal). The caller frees the body (Free).
func (q Request) Admit() *intake.Body { return q.admit() }

// Free gives back a body Admit read.
func (q Request) Free(b *intake.Body) { q.s.bodies.Free(b) }

// Now is the moment on the routing state's clock.
func (q Request) Now() time.Time { return q.s.now() }

// admit is Admit.
func (q Request) admit() *intake.Body {
	if !q.Authorize() {
		return nil
	}
	l := q.st.Limits
	body, aerr := q.s.bodies.Read(q.w, q.r, intake.Limits{MaxBody: l.MaxBodyBytes, Budget: l.BodyBufferBytes, ReadTimeout: l.BodyReadTimeout})
	if aerr != nil {
		q.Answer(answer.Result{Err: aerr})
		return nil
	}
	return body
}

// maxRequested bounds the requested model the log line names: a client's
// words, logged with every request.
const maxRequested = 256

// cutModel is name cut to maxRequested bytes, at the start of a
// character; it does not allocate.
func cutModel(name string) string {
	if len(name) <= maxRequested {
		return name
	}
	n := maxRequested
	for n > 0 && !utf8.RuneStart(name[n]) {
		n--
	}
	return name[:n]
}
