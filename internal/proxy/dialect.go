package proxy

import (
	"net/http"
	"strings"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Dialect is one front-door API on the seam (docs/ARCHITECTURE.md, "Front
// doors"): its routes, how a route reads a request into the router's own
// (Call), its error shape and its metric label. Everything behind the
// seam (client keys, the body within the limits, shedding, the attempt
// loop, the one answer writer, the log line and metrics) is the front
// door's, the same for every dialect.
type Dialect struct {
	// API is its requests' api label (requests_total{api}): chat,
	// messages, responses…
	API string
	// Shape writes the router's own errors in the API's shape; nil means
	// OpenAI's.
	Shape answer.Shape
	// Routes are its routes.
	Routes []Route
	// Claims, when not nil, says whether a request to a route dialects
	// share (GET /v1/models, an unknown path) is this dialect's: it is
	// then answered in this dialect's shape (a request that carries
	// anthropic-version is the Messages API's).
	Claims func(r *http.Request) bool
	// Models, when not nil, writes the model list (GET /v1/models) for a
	// request the dialect claims: the configured names as configured
	// (patterns included) and the unix time they were loaded.
	Models func(names []string, created int64) []byte
	// Model, when not nil, writes one model (GET /v1/models/{model}) for
	// a request the dialect claims.
	Model func(name string, created int64) []byte
}

// Route is one route of a dialect. Exactly one of Read and Serve is set.
type Route struct {
	// Pattern is its http.ServeMux pattern, method included:
	// "POST /v1/messages".
	Pattern string
	// Read reads an authenticated request's body (read within the
	// limits, and freed by the front door) into the router's request;
	// an error is the request's answer. It may look the model up
	// (Request.UseModel) and must, for a Call to dispatch.
	Read func(q Request, r *http.Request, body []byte) (Call, *apierror.Error)
	// Serve handles a request whole through q (a stored response read):
	// q.Authorize first, then exactly one q.Answer.
	Serve func(q Request, w http.ResponseWriter, r *http.Request)
}

// Call is a request read by its dialect, ready for its attempts.
type Call struct {
	// Req is the request each attempt sends: its Body may view the
	// client's body. When its op is one a target's adapter does not
	// serve, that target is sent Req.Alt.
	Req *provider.Request
	// Tokens is the request's token estimate (buckets, budgets):
	// intake.EstimateTokens of its body and MaxTokens.
	Tokens int64
	// MaxTokens is the completion budget the request set (0: none); the
	// rest of Tokens is the prompt's estimate. A client key's budget
	// reserves both at the model's prices; the attempt loop charges a
	// target with max_output_tokens the budget lowered to it
	// (failover.Run.MaxTokens).
	MaxTokens int64
	// Shape, when not nil, adapts the result before it is answered (a
	// translated answer reshaped, a stream's framer).
	Shape func(answer.Result) answer.Result
	// Hold: Shape reads the client's body, so it is kept until the
	// answer is written; otherwise it is freed as soon as the attempts
	// are over (docs/ARCHITECTURE.md, "Memory").
	Hold bool
	// After, when not nil, runs once the answer is written.
	After func()
	// Affinity is the request's conversation identity
	// (docs/ARCHITECTURE.md, "Affinity"), read by the dialect when
	// Request.Affinity says it is used; the zero ID has none.
	Affinity affinity.ID
}

// chatFamily are the OpenAI operations the front door itself serves.
func chatFamily() []*Dialect {
	op := func(o provider.Op, path string) *Dialect {
		return &Dialect{API: o.String(), Routes: []Route{{Pattern: "POST " + path,
			Read: func(q Request, r *http.Request, body []byte) (Call, *apierror.Error) { return readOp(q, r, o, body) }}}}
	}
	return []*Dialect{
		op(provider.OpChat, "/v1/chat/completions"),
		op(provider.OpCompletions, "/v1/completions"),
		op(provider.OpEmbeddings, "/v1/embeddings"),
	}
}

// readOp reads a request of the OpenAI operation o: the few fields the
// router needs, in one pass, which also keeps a chat request's opening
// (its identity's, hashed when it is used); the body goes to
// OpenAI-family providers unchanged but for the model.
func readOp(q Request, r *http.Request, o provider.Op, body []byte) (Call, *apierror.Error) {
	var (
		opening affinity.Turns
		turn    func(role, content string) bool
	)
	if o == provider.OpChat {
		turn = opening.Turn
	}
	f, aerr := intake.ParseTurns(o, body, turn)
	if aerr != nil {
		return Call{}, aerr
	}
	if aerr := q.UseModel(f.Model); aerr != nil {
		return Call{}, aerr
	}
	req := q.Ex.NewRequest()
	*req = provider.Request{
		Op: o, Body: body, ModelStart: f.ModelStart, ModelEnd: f.ModelEnd,
		Stream: f.Stream, IncludeUsage: f.IncludeUsage,
	}
	c := Call{Req: req, Tokens: intake.EstimateTokens(body, f.MaxTokens), MaxTokens: f.MaxTokens}
	if o != provider.OpEmbeddings && q.Affinity() {
		c.Affinity = chatIdentity(r.Header, o, f, &opening)
	}
	return c, nil
}

// chatIdentity is a chat-family request's conversation identity
// (docs/ARCHITECTURE.md, "Affinity"): the session headers, else
// prompt_cache_key, else (chat) the hash of its opening, as Parse's walk
// kept it.
func chatIdentity(h http.Header, o provider.Op, f intake.Fields, opening *affinity.Turns) affinity.ID {
	if id := affinity.FromHeaders(h); id.Key != 0 {
		return id
	}
	if f.PromptCacheKey != nil {
		return affinity.NamedBytes(f.PromptCacheKey)
	}
	if o == provider.OpChat {
		return opening.ID(f.Messages)
	}
	return affinity.ID{}
}

// Register mounts the chat family, the models list and the dialects ds on
// mux; every path no route serves gets a 404, or a 405 naming the
// methods its path allows, in the shape of the dialect the path is
// (or claims it).
func (s *Server) Register(mux *http.ServeMux, ds ...*Dialect) {
	s.mu.Lock()
	all := append(chatFamily(), ds...)
	s.dialects = all
	s.mu.Unlock()
	apis := make([]string, len(all))
	for i, d := range all {
		apis[i] = d.API
		for _, rt := range d.Routes {
			mux.HandleFunc(rt.Pattern, s.handler(d, rt))
		}
	}
	s.out.APIs(apis...)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /v1/models/{model...}", s.serveModel)
	mux.HandleFunc("/", s.serveNotFound)
}

func (s *Server) handler(d *Dialect, rt Route) http.HandlerFunc {
	if rt.Serve != nil {
		return func(w http.ResponseWriter, r *http.Request) {
			q := s.begin(w, r, d, rt.Pattern)
			defer q.End()
			rt.Serve(q, w, q.r)
		}
	}
	return func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, d, rt.Read) }
}

// claimant is the dialect a request to a shared route belongs to: the
// first that claims it, else the chat family's.
func (s *Server) claimant(r *http.Request) *Dialect {
	s.mu.Lock()
	ds := s.dialects
	s.mu.Unlock()
	for _, d := range ds {
		if d.Claims != nil && d.Claims(r) {
			return d
		}
	}
	if len(ds) == 0 {
		return chatFamily()[0]
	}
	return ds[0]
}

// owner is the dialect whose route's path is path, with the methods
// that path allows; nil when no route has that exact path.
func (s *Server) owner(path string) (*Dialect, []string) {
	s.mu.Lock()
	ds := s.dialects
	s.mu.Unlock()
	var (
		own     *Dialect
		methods []string
	)
	for _, d := range ds {
		for _, rt := range d.Routes {
			method, p, ok := strings.Cut(rt.Pattern, " ")
			if ok && p == path {
				own = d
				methods = append(methods, method)
			}
		}
	}
	return own, methods
}
