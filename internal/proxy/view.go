package proxy

import (
	"time"

	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/route"
)

// View is the routing state in force at one moment, as the state file
// (internal/warm) and the admin listener read it; requests never do.
type View struct {
	// Providers are the providers in config order, each with its runtime
	// (Up).
	Providers []*failover.Provider
	// Models is the model table.
	Models *route.Table
	// Weights are the score weights (routing.score_weights).
	Weights route.Weights
	// At is the moment, on the front door's clock (Options.Now).
	At time.Time
	st *state
}

// View returns the routing state in force now.
func (s *Server) View() View {
	st := s.st.Load()
	return View{Providers: st.order, Models: st.models, Weights: st.weights, At: s.now(), st: st}
}

// Provider returns the provider named name; nil when there is none.
func (v View) Provider(name string) *failover.Provider { return v.st.providers[name] }

// OpenShare is the share of providers whose breaker is open at v.At, and
// the earliest time one of them will probe again: what priority shedding
// decides on.
func (v View) OpenShare() (float64, time.Duration) { return v.st.openShare(v.At) }

// StateChanged returns a channel that receives soon after anything worth
// keeping across a restart changed (pool.Pool.Changed): a state-file
// saver waits on it to save within a moment rather than at its next tick.
func (s *Server) StateChanged() <-chan struct{} { return s.set.Changed() }
