package proxy

import (
	"net/http"
	"strings"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// serveModels answers GET /v1/models: the configured names as configured
// (patterns included) that the client's key may call (a pattern when it
// serves some name the key allows: issue 31, finding 10), in the shape of
// the dialect that claims the request (the OpenAI list by default).
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	d := s.claimant(r)
	q := s.begin(w, r, d, r.Method+" "+r.Pattern)
	defer q.End()
	if !q.Authorize() {
		return
	}
	names := q.Listed()
	if d.Models != nil {
		q.Answer(answer.Result{JSON: d.Models(names, q.st.Created)})
		return
	}
	list := openaiwire.ModelList{Object: openaiwire.ObjectList, Data: make([]openaiwire.Model, 0, len(names))}
	for _, n := range names {
		list.Data = append(list.Data, model(n, q.st.Created))
	}
	b, _ := openaiwire.Append(nil, &list)
	q.Answer(answer.Result{JSON: append(b, '\n')})
}

// Listed is the model list an authorized request's key may see: the
// configured names as configured (patterns included) that its key may
// call (a pattern when it serves some name the key allows: issue 31,
// finding 10).
func (q Request) Listed() []string {
	names := q.st.Models.Names()
	k := q.Ex.Key
	if k.Limits().Models == nil {
		return names
	}
	listed := make([]string, 0, len(names))
	for _, n := range names {
		if k.Lists(n) {
			listed = append(listed, n)
		}
	}
	return listed
}

// serveModel answers GET /v1/models/{model}: a name a configured model
// serves (a pattern's included), else 404.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request) {
	d := s.claimant(r)
	q := s.begin(w, r, d, r.Method+" "+r.Pattern)
	defer q.End()
	if !q.Authorize() {
		return
	}
	name := r.PathValue("model")
	if aerr := q.UseModel(name); aerr != nil {
		q.Answer(answer.Result{Err: aerr})
		return
	}
	if d.Model != nil {
		q.Answer(answer.Result{JSON: d.Model(name, q.st.Created)})
		return
	}
	m := model(name, q.st.Created)
	b, _ := openaiwire.Append(nil, &m)
	q.Answer(answer.Result{JSON: append(b, '\n')})
}

func model(name string, created int64) openaiwire.Model {
	return openaiwire.Model{ID: name, Object: openaiwire.ObjectModel, Created: created, OwnedBy: "llmrouter"}
}

// serveNotFound answers every request no route serves: 404, or 405 with
// Allow when the path is a route's under another method, in the shape
// of the dialect the path belongs to (or that claims the request). HEAD /
// (a client's start-up check) gets an empty 200.
func (s *Server) serveNotFound(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" && r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	d, methods := s.owner(r.URL.Path)
	if r.URL.Path == "/v1/models" {
		methods = []string{http.MethodGet}
	}
	if d == nil {
		d = s.claimant(r)
	}
	q := s.begin(w, r, d, r.Method+" "+r.Pattern)
	defer q.End()
	// The body of an unknown route is not read: the answer ends the
	// connection.
	e := &apierror.Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "not_found",
		Message: "unknown route " + r.Method + " " + apierror.Quote(r.URL.Path), EndConn: r.ContentLength != 0}
	if len(methods) > 0 {
		allow := strings.Join(methods, ", ")
		w.Header().Set("Allow", allow)
		e.Status, e.Code, e.Message = http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path+": use "+allow
	}
	q.Answer(answer.Result{Err: e})
}
