package proxy

import (
	"context"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// walk runs the request's attempts (internal/failover) and shapes how
// they ended into the result answer writes.
func (s *Server) walk(ctx context.Context, ex *answer.Exchange, st *routing.State, req *provider.Request, tokens int64) answer.Result {
	pol := failover.Policy{Config: st.Routing}
	if st.Domains {
		pol.DomainDown = st.DomainDown(s.now())
	}
	res := s.loop.Walk(ctx, &ex.Run, &pol, st.Provider, req, tokens)
	switch {
	case res.Served != nil:
		// A stream some candidate could continue keeps what that takes
		// (docs/ARCHITECTURE.md, "Streaming": rescue).
		s.loop.Rescuable(ctx, &ex.Run, &pol, tokens, res.Served)
		return answer.Result{Served: res.Served}
	case res.ClientError != nil:
		return answer.Result{Err: answer.ClientError(res.ClientError), Provider: res.Provider}
	case res.Gone:
		return answer.Result{Gone: true}
	}
	return answer.Unserved(ex, res.DeadlinePassed)
}
