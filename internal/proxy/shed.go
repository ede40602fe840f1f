package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/shed"
)

// openShare is the share of providers whose breaker is open at now, and
// the earliest time one of them will probe again.
func (st *state) openShare(now time.Time) (float64, time.Duration) {
	if len(st.order) == 0 {
		return 0, 0
	}
	open := 0
	var soonest time.Duration
	for _, p := range st.order {
		if isOpen, left := p.Up.IsOpen(now); isOpen {
			open++
			if soonest == 0 || left < soonest {
				soonest = left
			}
		}
	}
	return float64(open) / float64(len(st.order)), soonest
}

// shed applies priority shedding (internal/shed) when more than
// shed_open_fraction of the providers are open. A refusal is the answer to
// give; release, when not nil, frees the request's slot.
func (s *Server) shed(ctx context.Context, r *http.Request, st *state) (release func(), refusal *answer.Error) {
	prio, ok := shed.ParsePriority(r.Header.Get("X-LLMRouter-Priority"))
	if !ok {
		return nil, answer.BadRequest("", "X-LLMRouter-Priority must be high, normal or low")
	}
	share, reopen := st.openShare(s.now())
	release, ok = s.shedGate.Admit(ctx, prio, share > st.shedAbove)
	if ok {
		return release, nil
	}
	s.m.shed.WithLabelValues(string(prio)).Inc()
	return nil, &answer.Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
		Message: "most providers are unavailable; " + string(prio) + " priority requests are shed, retry later", RetryAfter: max(reopen, time.Second)}
}
