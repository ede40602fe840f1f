package proxy

import (
	"context"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// walk runs the request's attempts (internal/failover) and shapes how
// they ended into the result answer writes.
func (s *Server) walk(ctx context.Context, ex *answer.Exchange, st *state, req *provider.Request, tokens int64) answer.Result {
	pol := failover.Policy{Retry: st.retry, Weights: st.weights}
	if st.domains {
		pol.DomainDown = st.domainDown(s.now())
	}
	res := s.loop.Walk(ctx, &ex.Run, pol, func(name string) *failover.Provider { return st.providers[name] }, req, tokens)
	switch {
	case res.Served != nil:
		return answer.Result{Served: res.Served}
	case res.ClientError != nil:
		return answer.Result{Err: answer.ClientError(res.ClientError), Provider: res.Provider}
	case res.Gone:
		return answer.Result{Gone: true}
	}
	return answer.Unserved(ex, res.DeadlinePassed)
}
