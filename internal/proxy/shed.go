package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/shed"
)

// shed applies priority shedding (internal/shed) when more than
// shed_open_fraction of the providers are open. A refusal is the answer to
// give; release, when not nil, frees the request's slot.
func (s *Server) shed(ctx context.Context, r *http.Request, st *routing.State) (release func(), refusal *apierror.Error) {
	// The canonical form: Get canonicalises any other, one allocation.
	prio, ok := shed.ParsePriority(r.Header.Get("X-Llmrouter-Priority"))
	if !ok {
		return nil, apierror.BadRequest("", "X-LLMRouter-Priority must be high, normal or low")
	}
	share, reopen := st.OpenShare(s.now())
	release, ok = s.shedGate.Admit(ctx, prio, share > st.Routing.ShedOpenFraction)
	if ok {
		return release, nil
	}
	s.m.shed.WithLabelValues(string(prio)).Inc()
	return nil, &apierror.Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
		Message: "most providers are unavailable; " + string(prio) + " priority requests are shed, retry later", RetryAfter: max(reopen, time.Second)}
}
