package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/llmrouter/llmrouter/internal/affinity"
	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/relay"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/chat"
	responsesnative "github.com/llmrouter/llmrouter/internal/responses/native"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/turn"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
	"github.com/llmrouter/llmrouter/internal/route"
)

// readResponses reads POST /v1/responses (docs/ARCHITECTURE.md,
// "Responses API"). To the model's openai and azure targets the request
// goes natively (internal/responses/native): every field as sent, the
// router's own previous_response_id chain and item_references expanded
// into input. To the others (provider.Request.Alt: the attempt loop
// picks per target) it goes as one chat completions request
// (internal/responses/chat), built-in tools and reasoning items left
// out, which then takes the chat path unchanged; the provider's chat
// answer is turned into a Response before anything is written, a stream
// into the Responses events by the relay. A request only a provider's
// own Responses API can honour (a forced built-in tool, background…) goes
// to the native targets only; a model with none gets the 400 naming the
// field.
//
// The body check (intake.Check) is made by Decode's walk.
func (s *Server) readResponses(q proxy.Request, r *http.Request, body []byte) (proxy.Call, *apierror.Error) {
	return s.read(q, r, body, nil)
}

// read is readResponses for a connection (nil: a POST): a WebSocket
// connection's turns continue its latest response whatever its store flag
// (docs/ARCHITECTURE.md, "Responses API over WebSocket").
func (s *Server) read(q proxy.Request, r *http.Request, body []byte, cn *conn) (proxy.Call, *apierror.Error) {
	ex := q.Ex
	d, rerr := responses.Decode(body)
	if rerr != nil {
		return proxy.Call{}, s.refusalOf(ex, body, rerr)
	}
	if aerr := q.UseModel(d.Model); aerr != nil {
		return proxy.Call{}, aerr
	}
	native, translated := servesNatively(q, ex.Model), !allNative(q, ex.Model)
	if d.Native != nil {
		if !native {
			return proxy.Call{}, s.refusal(ex, d.Native)
		}
		translated = false // only a native target can serve it
	}
	d.NativeTarget = native
	tn, rerr := turn.New(r.Context(), d, cn.store(s.stored), s.now)
	if rerr != nil {
		return proxy.Call{}, s.refusal(ex, rerr)
	}
	if cn != nil {
		tn.Remember(cn.remember)
	}
	if tn.Unresolved() {
		translated = false // what it names is the native provider's
	}
	var (
		req  *provider.Request
		nc   *responsesnative.Call
		tr   *chat.Translation
		size int
	)
	if native {
		if nc, rerr = responsesnative.Prepare(tn, body); rerr != nil {
			return proxy.Call{}, s.refusal(ex, rerr)
		}
		req = q.Ex.NewRequest()
		*req = provider.Request{Op: provider.OpResponses, Body: nc.Body, ModelStart: nc.ModelStart, ModelEnd: nc.ModelEnd, Stream: tn.Stream()}
		size = len(nc.Body)
	}
	if translated {
		if tr, rerr = chat.Translate(tn); rerr != nil {
			return proxy.Call{}, s.refusal(ex, rerr)
		}
		creq := q.Ex.NewRequest()
		*creq = provider.Request{Op: provider.OpChat, Body: tr.Body, ModelStart: tr.ModelStart, ModelEnd: tr.ModelEnd,
			Stream: tn.Stream(), IncludeUsage: tn.Stream()}
		if req == nil {
			req = creq
		} else {
			req.Alt = creq // for the targets that are not openai or azure: the attempt loop picks per target
		}
		size = max(size, len(tr.Body))
	}
	if int64(size) > q.MaxBodyBytes() {
		// A chain grows with every turn; the conversation it expands to is
		// held to the body limit like any request.
		return proxy.Call{}, &apierror.Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Code: "request_too_large", Param: "previous_response_id",
			Message: "the conversation, with the earlier turns previous_response_id brings in, is larger than limits.max_body_bytes"}
	}
	// The provider's answer becomes the client's Response (stored), a
	// stream the Responses events.
	shape := func(res answer.Result) answer.Result {
		sv := res.Served
		if sv == nil {
			return res
		}
		events, reshape, what := func() relay.Framer { return tr.Events() }, func(b []byte, _ string) ([]byte, error) { return tr.Answer(b) }, "a chat completion"
		if sv.Req.Op == provider.OpResponses {
			events, reshape, what = func() relay.Framer { return nc.Events() }, nc.Answer, "a response"
		}
		if sv.Resp.Stream != nil {
			res.Framer = events()
		} else if b, err := reshape(sv.Resp.Body, sv.Provider.Name); err == nil {
			sv.Resp.Body = b
		} else {
			sv.Done(outcome.OK)
			res = answer.Result{Err: &apierror.Error{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
				Message: "the provider's answer could not be read as " + what + ": " + err.Error()}}
		}
		return res
	}
	// The translation and the native request may view the client's body
	// until the answer is written.
	c := proxy.Call{Req: req, Tokens: intake.EstimateTokens(req.Body, tn.MaxTokens()), MaxTokens: tn.MaxTokens(), Shape: shape, Hold: true,
		After: func() { s.storeFailed(ex, tn) }}
	if q.Affinity() {
		c.Affinity = identity(r.Header, tn)
	}
	return c, nil
}

// identity is a Responses API request's conversation identity
// (docs/ARCHITECTURE.md, "Affinity"): the session headers, else
// prompt_cache_key, else the opening of the conversation the turn
// continues, rebuilt from its previous_response_id chain (or sent whole):
// its instructions and its items up to the first user message. A turn
// continuing a response the router does not hold (a native provider's)
// has none: its opening is not known here.
func identity(h http.Header, tn *turn.Turn) affinity.ID {
	if id := affinity.FromHeaders(h); id.Key != 0 {
		return id
	}
	d := tn.Decoded()
	if k := d.Request.PromptCacheKey; k != nil && *k != "" {
		return affinity.Named(*k)
	}
	if p := d.Request.PreviousResponseID; p != nil && *p != "" && tn.Prev() == nil {
		return affinity.ID{}
	}
	var o affinity.Openings
	system := ""
	if in := d.Request.Instructions; in != nil {
		system = *in
	}
	o.Begin(system)
	for _, it := range tn.Conversation() {
		role := it.Role
		if role == "" {
			role = it.Type
		}
		if !o.Add(role, func(yield func(string)) {
			if it.Parts == nil {
				yield(it.Text)
			}
			for _, p := range it.Parts {
				if p.Text != "" {
					yield(p.Text)
				} else {
					yield(p.Type)
				}
			}
		}) {
			break
		}
	}
	return o.ID()
}

// servesNatively reports whether a target of m can take the Responses API
// natively (an openai or azure provider): only those serve a request that
// needs it.
func servesNatively(q proxy.Request, m *route.Model) bool {
	for _, tg := range m.Targets {
		if provider.Serves(q.Provider(tg.Provider).Adapter, provider.OpResponses, tg.Model) {
			return true
		}
	}
	return false
}

// allNative reports whether every target of m takes the Responses API
// natively: then nothing is translated.
func allNative(q proxy.Request, m *route.Model) bool {
	for _, tg := range m.Targets {
		if p := q.Provider(tg.Provider); p == nil || !provider.Serves(p.Adapter, provider.OpResponses, tg.Model) {
			return false
		}
	}
	return true
}

// serveStoredResponse handles GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items and POST /v1/responses/{id}/cancel: what
// the router stored, for responses.ttl; an id it does not hold is a 404,
// a store that cannot answer a 503. A response its provider still runs
// in the background is the provider's: the request goes to it.
// sub is what the path names below the id: "", input_items or cancel.
func (s *Server) serveStoredResponse(q proxy.Request, w http.ResponseWriter, r *http.Request, sub string) {
	ex := q.Ex
	if !q.Authorize() {
		return
	}
	id := r.PathValue("id")
	rec, err := s.stored.Get(r.Context(), id)
	if err != nil {
		q.Answer(answer.Result{Err: s.storeError(ex, id, err)})
		return
	}
	if rec.Owner != "" {
		q.Answer(s.forward(w, r, q, rec, sub))
		return
	}
	switch {
	case sub == "input_items":
		b, rerr := turn.InputItems(rec, r.URL.Query())
		if rerr != nil {
			q.Answer(answer.Result{Err: s.refusal(ex, rerr)})
			return
		}
		q.Answer(answer.Result{JSON: b})
	case sub == "cancel":
		q.Answer(answer.Result{Err: s.refusal(ex, responses.BadRequest("", "Response with id '%s' is not running in the background: "+
			"only background responses can be cancelled.", responses.Cut(id)))})
	case r.Method == http.MethodDelete:
		if err := s.stored.Delete(r.Context(), id); err != nil {
			q.Answer(answer.Result{Err: s.storeError(ex, id, err)})
			return
		}
		b, _ := openaiwire.Append(nil, &wire.Deleted{ID: id, Object: wire.ObjectResponse, Deleted: true})
		q.Answer(answer.Result{JSON: append(b, '\n')})
	default:
		q.Answer(answer.Result{JSON: rec.Response})
	}
}

// forward sends a request about rec, a response its provider runs in the
// background (rec.Owner), to that provider, and returns what it answered:
// its 2xx body, its client error passed through, or a 502. A GET that
// shows the response finished replaces the record with the whole
// response, so it can be continued; a DELETE the provider accepted
// removes it. Forwarded requests bypass the provider's admission
// (breaker, buckets): they are free, and about a response it is working
// on.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, q proxy.Request, rec *store.Record, sub string) answer.Result {
	ex := q.Ex
	p := q.Provider(rec.Owner)
	var f provider.ResponseFetcher
	if p != nil {
		f, _ = p.Adapter.(provider.ResponseFetcher)
	}
	if f == nil {
		// Its provider left the config: nobody can read it any more.
		return answer.Result{Err: s.refusal(ex, responses.NotFound(rec.ID))}
	}
	answer.SetProvider(w.Header(), p.Name)
	path := url.PathEscape(rec.ID)
	if sub != "" {
		path += "/" + sub
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.Config.Timeout)
	defer cancel()
	resp, err := f.FetchResponse(ctx, r.Method, path, r.URL.RawQuery)
	if err != nil {
		var oe *outcome.Error
		if !errors.As(err, &oe) {
			oe = &outcome.Error{Kind: outcome.KindOf(err), Message: err.Error()}
		}
		switch {
		case r.Context().Err() != nil:
			return answer.Result{Gone: true}
		case oe.Kind == outcome.ClientError || oe.Kind == outcome.TargetMissing:
			c := *oe
			c.Message = p.Up.Redact(c.Message)
			return answer.Result{Err: answer.ClientError(&c), Provider: p.Name}
		}
		return answer.Result{Err: &apierror.Error{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
			Message: "the provider running the response in the background failed (" + oe.Kind.String() + "): " + p.Up.Redact(oe.Message)}}
	}
	switch {
	case r.Method == http.MethodGet && sub == "":
		if done := responsesnative.Finished(rec, resp.Body); done != nil {
			if err := s.stored.Put(context.WithoutCancel(r.Context()), done); err != nil {
				s.storeWarn.Do(func() {
					s.log.Warn("a finished background response could not be stored (thinned: one of several)", "request_id", ex.ID,
						"response_id", rec.ID, "error", err.Error())
				})
			}
		}
	case r.Method == http.MethodDelete:
		// The provider's answer is the client's; a failure here shows at
		// the store's next read.
		_ = s.stored.Delete(context.WithoutCancel(r.Context()), rec.ID)
	}
	return answer.Result{JSON: resp.Body}
}

// storeError is the answer for a store's failure to read or delete id:
// OpenAI's 404 when it holds nothing, else a 503.
func (s *Server) storeError(ex *answer.Exchange, id string, err error) *apierror.Error {
	if errors.Is(err, store.ErrNotFound) {
		return s.refusal(ex, responses.NotFound(id))
	}
	return s.refusal(ex, responses.Unavailable("", err))
}

// refusalOf is the refusal of a body Decode refused: the bounded check's
// (intake.Check) when the body fails it, as the check came first when it
// was a pass of its own (its status, type and message: which limit), else
// Decode's. Decode's walk stops at its first problem, so the check runs
// over the whole body again, on this path only.
func (s *Server) refusalOf(ex *answer.Exchange, body []byte, e *responses.Error) *apierror.Error {
	if aerr := intake.Check(body); aerr != nil {
		return aerr
	}
	return s.refusal(ex, e)
}

// refusal is the error answer for a request internal/responses refused;
// a store that could not answer is logged.
func (s *Server) refusal(ex *answer.Exchange, e *responses.Error) *apierror.Error {
	if e.Cause != nil {
		s.storeWarn.Do(func() {
			s.log.Warn("the store of responses could not answer (thinned: one of several)", "request_id", ex.ID, "error", e.Cause.Error())
		})
	}
	typ := e.Type
	if typ == "" {
		typ = "invalid_request_error"
	}
	return &apierror.Error{Status: e.Status, Type: typ, Code: e.Code, Param: e.Param, Message: e.Message, RetryAfter: e.RetryAfter}
}

// storeFailed logs an answer the store refused to keep (it said store:
// false to the client).
func (s *Server) storeFailed(ex *answer.Exchange, t *turn.Turn) {
	if err := t.StoreErr(); err != nil {
		s.storeWarn.Do(func() {
			s.log.Warn("response answered but not stored (thinned: one of several)", "request_id", ex.ID, "response_id", t.ID(), "error", err.Error())
		})
	}
}
