package proxy

import (
	"errors"
	"net/http"

	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/chat"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// apiResponses is the api label of the Responses API's requests.
const apiResponses = "responses"

// serveResponses handles POST /v1/responses (docs/ARCHITECTURE.md,
// "Responses API"): the request, its previous_response_id chain and
// item_references become one chat completions request (internal/responses),
// which then takes the chat path unchanged: shedding, ranking, admission,
// failover before the commit point, the one answer writer. The provider's
// chat answer is turned into a Response before anything is written; a
// stream is written as the Responses events by the relay.
func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request) {
	st := s.st.Load()
	ex := s.newExchange(r, w, st, provider.OpChat)
	ex.api = apiResponses
	defer s.logRequest(r, ex)
	body := s.admit(w, r, ex, st)
	if body == nil {
		return
	}
	defer s.bodies.Free(body)
	if ierr := intake.Check(body.B); ierr != nil {
		s.answer(w, ex, result{err: ierr})
		return
	}
	d, rerr := responses.Decode(body.B)
	if rerr != nil {
		s.answer(w, ex, result{err: s.refusal(ex, rerr)})
		return
	}
	if ex.Model = st.models.Lookup(d.Model); ex.Model == nil {
		s.answer(w, ex, result{err: modelNotFound(d.Model)})
		return
	}
	turn, rerr := responses.NewTurn(r.Context(), d, s.stored, s.now)
	if rerr != nil {
		s.answer(w, ex, result{err: s.refusal(ex, rerr)})
		return
	}
	tr, rerr := chat.Translate(turn)
	if rerr != nil {
		s.answer(w, ex, result{err: s.refusal(ex, rerr)})
		return
	}
	if int64(len(tr.Body)) > st.limits.MaxBodyBytes {
		// A chain grows with every turn; the conversation it expands to is
		// held to the body limit like any request.
		s.answer(w, ex, result{err: &intake.Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Code: "request_too_large", Param: "previous_response_id",
			Message: "the conversation, with the earlier turns previous_response_id brings in, is larger than limits.max_body_bytes"}})
		return
	}
	req := &provider.Request{
		Op: provider.OpChat, Body: tr.Body, ModelStart: tr.ModelStart, ModelEnd: tr.ModelEnd,
		Stream: turn.Stream(), IncludeUsage: turn.Stream(),
	}
	defer s.storeFailed(ex, turn)
	// The chat answer becomes a Response (stored), a stream the Responses
	// events.
	s.dispatch(w, r, ex, st, req, intake.EstimateTokens(tr.Body, turn.MaxTokens()), func(res result) result {
		sv := res.served
		if sv == nil {
			return res
		}
		if sv.Resp.Stream != nil {
			res.framer = tr.Events()
		} else if b, err := tr.Answer(sv.Resp.Body); err == nil {
			sv.Resp.Body = b
		} else {
			sv.Done(outcome.OK)
			res = result{err: &intake.Error{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error",
				Message: "the provider's answer could not be read as a chat completion: " + err.Error()}}
		}
		return res
	})
}

// serveStoredResponse handles GET and DELETE /v1/responses/{id}: what the
// router stored, for responses.ttl; an id it does not hold is a 404, a
// store that cannot answer a 503.
func (s *Server) serveStoredResponse(w http.ResponseWriter, r *http.Request) {
	st := s.st.Load()
	ex := s.newExchange(r, w, st, provider.OpChat)
	ex.api = apiResponses
	defer s.logRequest(r, ex)
	if !st.authorized(r) {
		s.answer(w, ex, unauthorized(r))
		return
	}
	id := r.PathValue("id")
	if r.Method == http.MethodDelete {
		if err := s.stored.Delete(r.Context(), id); err != nil {
			s.answer(w, ex, result{err: s.storeError(ex, id, err)})
			return
		}
		b, _ := openaiwire.Append(nil, &wire.Deleted{ID: id, Object: wire.ObjectResponse, Deleted: true})
		s.answer(w, ex, result{json: append(b, '\n')})
		return
	}
	rec, err := s.stored.Get(r.Context(), id)
	if err != nil {
		s.answer(w, ex, result{err: s.storeError(ex, id, err)})
		return
	}
	s.answer(w, ex, result{json: rec.Response})
}

// serveInputItems handles GET /v1/responses/{id}/input_items: the items a
// stored response was given, a page at a time, as OpenAI lists them.
func (s *Server) serveInputItems(w http.ResponseWriter, r *http.Request) {
	st := s.st.Load()
	ex := s.newExchange(r, w, st, provider.OpChat)
	ex.api = apiResponses
	defer s.logRequest(r, ex)
	if !st.authorized(r) {
		s.answer(w, ex, unauthorized(r))
		return
	}
	id := r.PathValue("id")
	rec, err := s.stored.Get(r.Context(), id)
	if err != nil {
		s.answer(w, ex, result{err: s.storeError(ex, id, err)})
		return
	}
	b, rerr := responses.InputItems(rec, r.URL.Query())
	if rerr != nil {
		s.answer(w, ex, result{err: s.refusal(ex, rerr)})
		return
	}
	s.answer(w, ex, result{json: b})
}

// storeError is the answer for a store's failure to read or delete id:
// OpenAI's 404 when it holds nothing, else a 503.
func (s *Server) storeError(ex *exchange, id string, err error) *intake.Error {
	if errors.Is(err, store.ErrNotFound) {
		return s.refusal(ex, responses.NotFound(id))
	}
	return s.refusal(ex, responses.Unavailable("", err))
}

// refusal is the error answer for a request internal/responses refused;
// a store that could not answer is logged.
func (s *Server) refusal(ex *exchange, e *responses.Error) *intake.Error {
	if e.Cause != nil {
		s.storeWarn.Do(func() {
			s.log.Warn("the store of responses could not answer (thinned: one of several)", "request_id", ex.ID, "error", e.Cause.Error())
		})
	}
	typ := e.Type
	if typ == "" {
		typ = "invalid_request_error"
	}
	return &intake.Error{Status: e.Status, Type: typ, Code: e.Code, Param: e.Param, Message: e.Message, RetryAfter: e.RetryAfter}
}

// storeFailed logs an answer the store refused to keep (it said store:
// false to the client).
func (s *Server) storeFailed(ex *exchange, t *responses.Turn) {
	if err := t.StoreErr(); err != nil {
		s.storeWarn.Do(func() {
			s.log.Warn("response answered but not stored (thinned: one of several)", "request_id", ex.ID, "response_id", t.ID(), "error", err.Error())
		})
	}
}
