package proxy

import (
	"net/http"

	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/responses"
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
		s.answer(w, ex, result{err: refusal(rerr)})
		return
	}
	if ex.Model = st.models.Lookup(d.Model); ex.Model == nil {
		s.answer(w, ex, result{err: modelNotFound(d.Model)})
		return
	}
	turn, rerr := responses.NewTurn(d, s.stored, s.now)
	if rerr != nil {
		s.answer(w, ex, result{err: refusal(rerr)})
		return
	}
	if int64(len(turn.Chat)) > st.limits.MaxBodyBytes {
		// A chain grows with every turn; the conversation it expands to is
		// held to the body limit like any request.
		s.answer(w, ex, result{err: &intake.Error{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Code: "request_too_large", Param: "previous_response_id",
			Message: "the conversation, with the earlier turns previous_response_id brings in, is larger than limits.max_body_bytes"}})
		return
	}
	req := &provider.Request{
		Op: provider.OpChat, Body: turn.Chat, ModelStart: turn.ModelStart, ModelEnd: turn.ModelEnd,
		Stream: turn.Stream(), IncludeUsage: turn.Stream(),
	}
	// The chat answer becomes a Response (stored), a stream the Responses
	// events.
	s.dispatch(w, r, ex, st, req, intake.EstimateTokens(turn.Chat, turn.MaxTokens()), func(res result) result {
		sv := res.served
		if sv == nil {
			return res
		}
		if sv.Resp.Stream != nil {
			res.framer = turn.Events()
		} else if b, err := turn.Answer(sv.Resp.Body); err == nil {
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
// router stored, for responses.ttl; an id it does not hold is a 404.
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
		if !s.stored.Delete(s.now(), id) {
			s.answer(w, ex, result{err: refusal(responses.NotFound(id))})
			return
		}
		b, _ := openaiwire.Append(nil, &responses.Deleted{ID: id, Object: responses.ObjectResponse, Deleted: true})
		s.answer(w, ex, result{json: append(b, '\n')})
		return
	}
	b := s.stored.Response(s.now(), id)
	if b == nil {
		s.answer(w, ex, result{err: refusal(responses.NotFound(id))})
		return
	}
	s.answer(w, ex, result{json: b})
}

// refusal is the error answer for a request internal/responses refused.
func refusal(e *responses.Error) *intake.Error {
	return &intake.Error{Status: e.Status, Type: "invalid_request_error", Code: e.Code, Param: e.Param, Message: e.Message}
}
