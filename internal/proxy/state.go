package proxy

import (
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/stats"
)

// stateVersion is the version of State's layout; a file of another
// version is ignored.
const stateVersion = 1

// State is what the router has learned, for warm restarts: per provider
// its windowed stats and the request and token limits in force.
type State struct {
	Version   int                      `json:"version"`
	Providers map[string]ProviderState `json:"providers"`
}

// ProviderState is one provider's learned state.
type ProviderState struct {
	Stats         stats.Persisted `json:"stats"`
	RequestsLimit int64           `json:"requests_limit,omitempty"`
	TokensLimit   int64           `json:"tokens_limit,omitempty"`
}

// ExportState captures the learned state at now.
func (s *Server) ExportState(now time.Time) State {
	st := s.st.Load()
	out := State{Version: stateVersion, Providers: make(map[string]ProviderState, len(st.order))}
	for _, u := range st.order {
		l := u.guard.Snapshot(now).Limits
		out.Providers[u.Name] = ProviderState{Stats: u.stats.Export(now), RequestsLimit: l.RequestsLimit, TokensLimit: l.TokensLimit}
	}
	return out
}

// RestoreState loads learned state for the providers that still exist (by
// name) and reports how many it restored. A state of another version
// restores nothing.
func (s *Server) RestoreState(now time.Time, in State) int {
	if in.Version != stateVersion {
		return 0
	}
	st := s.st.Load()
	n := 0
	for _, u := range st.order {
		p, ok := in.Providers[u.Name]
		if !ok {
			continue
		}
		u.stats.Restore(now, p.Stats)
		rl := outcome.UnknownRateLimit
		if p.RequestsLimit > 0 {
			rl.LimitRequests = p.RequestsLimit
		}
		if p.TokensLimit > 0 {
			rl.LimitTokens = p.TokensLimit
		}
		u.guard.Learn(now, rl)
		n++
	}
	return n
}
