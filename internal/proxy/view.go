package proxy

import (
	"time"

	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/upstream"
)

// View is the routing state in force at one moment, as the state file
// (internal/warm) and the admin listener read it; requests never do.
type View struct {
	// Providers are the providers in config order, each with its runtime
	// (Up).
	Providers []*failover.Provider
	// Models is the model table.
	Models *route.Table
	st     *state
}

// View returns the routing state in force now.
func (s *Server) View() View {
	st := s.st.Load()
	return View{Providers: st.order, Models: st.models, st: st}
}

// Provider returns the provider named name; nil when there is none.
func (v View) Provider(name string) *failover.Provider { return v.st.providers[name] }

// StateChanged returns a channel that receives soon after anything worth
// keeping across a restart changed (upstream.Set.Changed): a state-file
// saver waits on it to save within a moment rather than at its next tick.
func (s *Server) StateChanged() <-chan struct{} { return s.set.Changed() }

// ProviderStatus is one row of GET /admin/providers.
type ProviderStatus = upstream.Status

// scores returns every provider's score (latency relative to the fastest
// provider overall), in config order.
func (s *Server) scores(st *state, now time.Time) []route.Score {
	m := &route.Model{}
	for _, p := range st.order {
		m.Targets = append(m.Targets, route.Target{Provider: p.Name})
	}
	hs := make([]route.Health, len(st.order))
	for i, p := range st.order {
		hs[i] = p.Up.Health(now)
	}
	out := make([]route.Score, len(st.order))
	for i := range st.order {
		out[i] = st.weights.ScoreOf(m, func(j int) route.Health { return hs[j] }, i)
	}
	return out
}

// Providers returns the live per-provider status, in config order.
func (s *Server) Providers() []ProviderStatus {
	st := s.st.Load()
	now := s.now()
	out := make([]ProviderStatus, 0, len(st.order))
	scores := s.scores(st, now)
	for i, p := range st.order {
		row := p.Up.Status(now)
		row.Score = scores[i]
		out = append(out, row)
	}
	return out
}
