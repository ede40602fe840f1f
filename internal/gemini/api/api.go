package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
)

// API is the api label of the Gemini API's requests.
const API = "gemini"

// The methods of POST /v1beta/models/{model}:{method}.
const (
	methodGenerate = "generateContent"
	methodStream   = "streamGenerateContent"
	methodCount    = "countTokens"
)

// Server serves the Gemini API's routes on a front door.
type Server struct {
	log *slog.Logger
}

// New returns the Gemini API; it logs on log (nil discards).
func New(log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{log: log}
}

// Dialect is the Gemini API's dialect on the front door
// (docs/ARCHITECTURE.md, "Front doors").
func (s *Server) Dialect() *proxy.Dialect {
	// Google's SDKs call v1beta, or v1 when asked (the Gen AI JS SDK
	// with a base URL of its own): GET /v1/models is the OpenAI list's
	// route too, answered in Google's shape for a request this dialect
	// claims.
	return &proxy.Dialect{API: API, Shape: shape{}, Routes: []proxy.Route{
		{Pattern: "POST /v1beta/models/{call...}", Serve: s.serveCall},
		{Pattern: "POST /v1/models/{call...}", Serve: s.serveCall},
		{Pattern: "GET /v1beta/models", Serve: s.serveModels},
		{Pattern: "GET /v1beta/models/{model...}", Serve: s.serveModel},
	}, Claims: claims, Models: models, Model: model}
}

// claims: a request under /v1beta/, or carrying Google's key header or
// query parameter, is a Gemini client's: a shared route (GET /v1/models,
// an unknown path) answers it in Google's shape.
func claims(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/v1beta/") || r.Header.Get("X-Goog-Api-Key") != "" ||
		strings.Contains(r.URL.RawQuery, "key=") && r.URL.Query().Get("key") != ""
}

// serveCall handles POST /v1beta/models/{model}:{method}: generateContent
// and streamGenerateContent through the attempt loop, countTokens the
// router's own; any other method is a 404, as Google answers it.
func (s *Server) serveCall(q proxy.Request, w http.ResponseWriter, r *http.Request) {
	call := r.PathValue("call")
	i := strings.LastIndexByte(call, ':')
	if i < 0 {
		s.notFound(q, r)
		return
	}
	model, method := call[:i], call[i+1:]
	switch method {
	case methodGenerate, methodStream:
		stream := method == methodStream
		array := stream && r.URL.Query().Get("alt") != "sse"
		q.Read(func(q proxy.Request, r *http.Request, body []byte) (proxy.Call, *apierror.Error) {
			return s.readGenerate(q, r, body, model, stream, array)
		})
	case methodCount:
		s.serveCount(q, model)
	default:
		s.notFound(q, r)
	}
}

// notFound answers a method the Gemini API does not have here, after the
// key check (an unknown client learns nothing of the routes).
func (s *Server) notFound(q proxy.Request, r *http.Request) {
	if !q.Authorize() {
		return
	}
	q.Answer(answer.Result{Err: &apierror.Error{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "not_found",
		Message: "unknown method " + apierror.Quote(r.URL.Path) + ": the router serves generateContent, streamGenerateContent and countTokens",
		EndConn: r.ContentLength != 0}})
}

// readGenerate reads generateContent (streamGenerateContent when stream;
// array: its JSON array form) (docs/ARCHITECTURE.md, "Gemini API"):
// checked as Google checks it; sent natively to the model's gemini targets
// and Google's models on vertex, and translated onto chat completions for
// the others.
func (s *Server) readGenerate(q proxy.Request, r *http.Request, body []byte, model string, stream, array bool) (proxy.Call, *apierror.Error) {
	if aerr := intake.Check(body); aerr != nil {
		return proxy.Call{}, aerr
	}
	d, aerr := decode(body, false)
	if aerr != nil {
		return proxy.Call{}, aerr
	}
	if aerr := q.UseModel(model); aerr != nil {
		return proxy.Call{}, aerr
	}
	req := q.Ex.NewRequest()
	*req = provider.Request{Op: provider.OpGemini, Body: body, Stream: stream}
	var tr *translation
	if !allNative(q, q.Ex.Model) {
		tr = translate(d, model, stream)
		req.Alt = &provider.Request{Op: provider.OpChat, Body: tr.body, ModelStart: tr.modelStart, ModelEnd: tr.modelEnd,
			Stream: stream, IncludeUsage: stream}
	}
	shape := func(res answer.Result) answer.Result {
		sv := res.Served
		switch {
		case sv == nil:
			return res
		case sv.Req.Op == provider.OpGemini:
			if sv.Resp.Stream != nil {
				res.Framer = &native{form{array: array}}
			}
		case sv.Resp.Stream != nil:
			res.Framer = &events{form: form{array: array}, t: tr}
		default:
			b, err := tr.answer(sv.Resp.Body)
			if err != nil {
				sv.Done(outcome.OK)
				return answer.Result{Err: &apierror.Error{Status: http.StatusBadGateway, Type: "api_error", Code: "upstream_error",
					Message: "the provider's answer could not be read as a chat completion: " + err.Error()}}
			}
			sv.Resp.Body = b
		}
		return res
	}
	c := proxy.Call{Req: req, Tokens: intake.EstimateTokens(body, d.maxTokens), MaxTokens: d.maxTokens, Shape: shape}
	if q.Affinity() {
		c.Affinity = identity(r.Header, d)
	}
	return c, nil
}

// allNative reports whether every target of m takes the Gemini API
// natively: then nothing is translated.
func allNative(q proxy.Request, m *route.Model) bool {
	for _, tg := range m.Targets {
		if p := q.Provider(tg.Provider); p == nil || !provider.Serves(p.Adapter, provider.OpGemini, tg.Model) {
			return false
		}
	}
	return true
}

// identity is a Gemini request's conversation identity
// (docs/ARCHITECTURE.md, "Affinity"): the session headers, else the hash
// of its opening (system instruction and first user turn).
func identity(h http.Header, d request) affinity.ID {
	if id := affinity.FromHeaders(h); id.Key != 0 {
		return id
	}
	var o affinity.Openings
	o.Begin(texts(d.doc.Get("systemInstruction.parts")))
	d.doc.Get("contents").ForEach(func(_, c gjson.Result) bool {
		role := c.Get("role").Str
		if role == "" {
			role = "user"
		}
		return o.Add(role, func(yield func(string)) {
			c.Get("parts").ForEach(func(_, p gjson.Result) bool {
				if t := p.Get("text"); t.Exists() {
					yield(t.Str)
				}
				return true
			})
		})
	})
	return o.ID()
}

// serveCount handles POST /v1beta/models/{model}:countTokens: the
// router's own estimate of the contents' tokens, {"totalTokens": N},
// within the key's checks and with no provider call, so that a count
// costs no provider request and never a 429 an SDK would retry.
func (s *Server) serveCount(q proxy.Request, model string) {
	body := q.Admit()
	if body == nil {
		return
	}
	defer q.Free(body)
	if aerr := intake.Check(body.B); aerr != nil {
		q.Answer(answer.Result{Err: aerr})
		return
	}
	if _, aerr := decode(body.B, true); aerr != nil {
		q.Answer(answer.Result{Err: aerr})
		return
	}
	if aerr := q.UseModel(model); aerr != nil {
		q.Answer(answer.Result{Err: aerr})
		return
	}
	n := intake.EstimateTokens(body.B, 1) - 1
	b := append(make([]byte, 0, 32), `{"totalTokens":`...)
	b = strconv.AppendInt(b, n, 10)
	q.Answer(answer.Result{JSON: append(b, "}\n"...)})
}

// serveModels answers GET /v1beta/models: the models the client's key may
// call, in Google's list shape.
func (s *Server) serveModels(q proxy.Request, _ http.ResponseWriter, _ *http.Request) {
	if !q.Authorize() {
		return
	}
	q.Answer(answer.Result{JSON: models(q.Listed(), 0)})
}

// models writes the model list in Google's shape.
func models(names []string, _ int64) []byte {
	b := append(make([]byte, 0, 64+len(names)*160), `{"models":[`...)
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendModel(b, n)
	}
	return append(b, "]}\n"...)
}

// model writes one model in Google's shape.
func model(name string, _ int64) []byte { return append(appendModel(nil, name), '\n') }

// serveModel answers GET /v1beta/models/{model}: a name a configured model
// serves, else 404 (403 for one the key may not call).
func (s *Server) serveModel(q proxy.Request, _ http.ResponseWriter, r *http.Request) {
	if !q.Authorize() {
		return
	}
	name := r.PathValue("model")
	if aerr := q.UseModel(name); aerr != nil {
		q.Answer(answer.Result{Err: aerr})
		return
	}
	q.Answer(answer.Result{JSON: model(name, 0)})
}

// appendModel appends one Model in Google's shape.
func appendModel(b []byte, name string) []byte {
	b = append(b, `{"name":`...)
	b = str(b, "models/"+name)
	b = append(b, `,"displayName":`...)
	b = str(b, name)
	return append(b, `,"supportedGenerationMethods":["generateContent","streamGenerateContent","countTokens"]}`...)
}
