package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/messages"
	"github.com/llmrouter/llmrouter/internal/messages/chat"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
)

// API is the api label of the Messages API's requests.
const API = "messages"

// Server serves the Messages API's routes on a front door.
type Server struct {
	log *slog.Logger
}

// New returns the Messages API; it logs on log (nil discards).
func New(log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{log: log}
}

// Dialect is the Messages API's dialect on the front door
// (docs/ARCHITECTURE.md, "Front doors").
func (s *Server) Dialect() *proxy.Dialect {
	return &proxy.Dialect{API: API, Shape: shape{}, Routes: []proxy.Route{
		{Pattern: "POST /v1/messages", Read: s.readMessages},
		{Pattern: "POST /v1/messages/count_tokens", Serve: s.serveCountTokens},
	}, Claims: claims, Models: models, Model: model}
}

// claims: a request to a shared route (the models list, an unknown path)
// that carries anthropic-version is an Anthropic client's.
func claims(r *http.Request) bool {
	return r.Header.Get("Anthropic-Version") != "" || strings.HasPrefix(r.URL.Path, "/v1/messages")
}

// refusal turns internal/messages' refusal into the router's error value.
func refusal(e *messages.Error) *apierror.Error {
	return &apierror.Error{Status: e.Status, Type: e.Type, Code: e.Type, Message: e.Message}
}

// refusalOf is the refusal of a body Decode refused: the bounded check's
// (intake.Check) when the body fails it, as the check came first when it
// was a walk of its own (its status, type and message: which limit), else
// the walk's. The walk stops at its first problem, so the check runs
// over the whole body again, on this path only.
func refusalOf(body []byte, merr *messages.Error) *apierror.Error {
	if aerr := intake.Check(body); aerr != nil {
		return aerr
	}
	return refusal(merr)
}

// readMessages reads POST /v1/messages (docs/ARCHITECTURE.md, "Anthropic
// Messages API"): checked as Anthropic checks it; sent natively to the
// model's Anthropic-format targets and translated onto chat completions
// for the others.
func (s *Server) readMessages(q proxy.Request, r *http.Request, body []byte) (proxy.Call, *apierror.Error) {
	if merr := messages.CheckBetas(betas(r.Header)); merr != nil {
		return proxy.Call{}, refusal(merr)
	}
	// One walk checks the body (jsonscan's bounded check) and reads what
	// the router, the translation, the estimate and the affinity identity
	// need (messages.Form).
	f, merr := messages.DecodeForm(body)
	if merr != nil {
		return proxy.Call{}, refusalOf(body, merr)
	}
	m := f.Request
	if aerr := q.UseModel(m.Model); aerr != nil {
		return proxy.Call{}, aerr
	}
	req := withHeaders(r.Header, provider.Request{Op: provider.OpMessages, Body: body, ModelStart: m.ModelStart, ModelEnd: m.ModelEnd,
		Stream: m.Stream})
	var tr *chat.Translation
	if !allNative(q, q.Ex.Model) {
		var merr *messages.Error
		if tr, merr = chat.TranslateForm(body, f); merr != nil {
			return proxy.Call{}, refusal(merr)
		}
		req.Alt = &provider.Request{Op: provider.OpChat, Body: tr.Body, ModelStart: tr.ModelStart, ModelEnd: tr.ModelEnd,
			Stream: tr.Stream, IncludeUsage: tr.Stream}
	}
	shape := func(res answer.Result) answer.Result {
		sv := res.Served
		switch {
		case sv == nil:
			return res
		case sv.Req.Op == provider.OpMessages:
			if sv.Resp.Stream != nil {
				res.Framer = nativeEvents{}
			}
		case sv.Resp.Stream != nil:
			res.Framer = tr.Events()
		default:
			b, err := tr.Answer(sv.Resp.Body)
			if err != nil {
				sv.Done(outcome.OK)
				return answer.Result{Err: &apierror.Error{Status: http.StatusBadGateway, Type: "api_error", Code: "upstream_error",
					Message: "the provider's answer could not be read as a chat completion: " + err.Error()}}
			}
			sv.Resp.Body = b
		}
		return res
	}
	c := proxy.Call{Req: req, Tokens: intake.EstimateTokens(body, m.MaxTokens), MaxTokens: m.MaxTokens, Shape: shape}
	if q.Affinity() {
		c.Affinity = identity(r.Header, m)
	}
	return c, nil
}

// identity is a Messages request's conversation identity
// (docs/ARCHITECTURE.md, "Affinity"): the session headers
// (x-claude-code-session-id is Claude Code's), else metadata.user_id,
// else the hash of its opening (system prompt and first user turn).
func identity(h http.Header, m messages.Request) affinity.ID {
	if id := affinity.FromHeaders(h); id.Key != 0 {
		return id
	}
	if m.UserID != "" {
		return affinity.Named(m.UserID)
	}
	return affinity.Opening(m.System, m.Messages)
}

// betas are the client's anthropic-beta values, as sent (several headers
// joined with commas, the form Anthropic reads).
func betas(h http.Header) string {
	vs := h.Values("Anthropic-Beta")
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	return strings.Join(vs, ",")
}

// allNative reports whether every target of m takes the Messages API
// natively: then nothing is translated.
func allNative(q proxy.Request, m *route.Model) bool {
	for _, tg := range m.Targets {
		if p := q.Provider(tg.Provider); p == nil || !provider.Serves(p.Adapter, provider.OpMessages, tg.Model) {
			return false
		}
	}
	return true
}

// serveCountTokens handles POST /v1/messages/count_tokens: the first
// Anthropic-format target of the model that is not open counts (a free
// call, outside the attempt loop and the provider's buckets, but holding
// one of the key's RPM and a permit of the provider's bulkhead); a model
// with none, a key or a bulkhead with nothing to give now, a count that
// fails for any reason but the request's own fault, or a provider without
// the route (404, 405, 501: remembered until a reload, NoCountTokens),
// gets the router's estimate at once: never a 429, which an SDK would
// retry (issue 31, finding 7).
func (s *Server) serveCountTokens(q proxy.Request, w http.ResponseWriter, r *http.Request) {
	body := q.Admit()
	if body == nil {
		return
	}
	defer q.Free(body)
	if merr := messages.CheckBetas(betas(r.Header)); merr != nil {
		q.Answer(answer.Result{Err: refusal(merr)})
		return
	}
	f, merr := messages.DecodeCountForm(body.B)
	if merr != nil {
		q.Answer(answer.Result{Err: refusalOf(body.B, merr)})
		return
	}
	m := f.Request
	if aerr := q.UseModel(m.Model); aerr != nil {
		q.Answer(answer.Result{Err: aerr})
		return
	}
	now := q.Now()
	if !q.Ex.Key.Charge(r.Context(), now) {
		q.Answer(answer.Result{JSON: countJSON(f.InputTokens)})
		return
	}
	for _, tg := range q.Ex.Model.Targets {
		p := q.Provider(tg.Provider)
		if p == nil {
			continue
		}
		tc, ok := p.Adapter.(provider.TokenCounter)
		if !ok {
			continue
		}
		if open, _ := p.Up.IsOpen(now); open || p.Up.TargetOff(tg.Model) || p.NoCountTokens.Load() {
			continue
		}
		release, ok := p.Up.Hold()
		if !ok {
			break // the provider is busy with real requests: the estimate
		}
		req := withHeaders(r.Header, provider.Request{Op: provider.OpMessages, Model: tg.Model, Body: body.B,
			ModelStart: m.ModelStart, ModelEnd: m.ModelEnd})
		ctx, cancel := context.WithTimeout(r.Context(), p.Config.Timeout)
		resp, err := tc.CountTokens(ctx, req)
		cancel()
		release()
		if err == nil {
			answer.SetProvider(w.Header(), p.Name)
			q.Answer(answer.Result{JSON: resp.Body})
			return
		}
		var oe *outcome.Error
		if errors.As(err, &oe) && noRoute(oe.Status) && oe.Suspect == outcome.OK {
			// An Anthropic-compatible server without the route: its 404
			// says nothing about the request. Remembered until a reload.
			if !p.NoCountTokens.Swap(true) {
				s.log.Info("provider has no count_tokens; the router estimates for it until a reload", "provider", p.Name,
					"status", oe.Status)
			}
			break
		}
		if errors.As(err, &oe) && oe.Kind == outcome.ClientError && oe.Suspect == outcome.OK {
			c := *oe
			c.Message = p.Up.Redact(c.Message)
			if c.Body != nil {
				c.Body = []byte(p.Up.Redact(string(c.Body)))
			}
			q.Answer(answer.Result{Err: answer.ClientError(&c), Provider: p.Name})
			return
		}
		if r.Context().Err() != nil {
			q.Answer(answer.Result{Gone: true})
			return
		}
		s.log.Debug("count_tokens failed; answering the router's estimate", "request_id", q.Ex.ID, "provider", p.Name,
			"kind", outcome.KindOf(err).String())
		break
	}
	q.Answer(answer.Result{JSON: countJSON(f.InputTokens)})
}

// noRoute reports whether a count_tokens answer's status says the
// provider has no such route: 404, 405 or 501.
func noRoute(status int) bool {
	return status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented
}

// typeOf reads a payload's "type" the slow way.
func typeOf(p []byte) string { return gjson.GetBytes(p, "type").Str }
