package proxy

import (
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
}

// View returns the routing state in force now.
func (s *Server) View() View {
	st := s.st.Load()
	return View{Providers: st.order, Models: st.models}
}

// StateChanged returns a channel that receives soon after anything worth
// keeping across a restart changed (upstream.Set.Changed): a state-file
// saver waits on it to save within a moment rather than at its next tick.
func (s *Server) StateChanged() <-chan struct{} { return s.set.Changed() }

// Enabled is what Enable lifted.
type Enabled struct {
	Provider       string   `json:"provider"`
	QuotaLifted    bool     `json:"quota_lifted"`
	TargetsEnabled []string `json:"targets_enabled"`
}

// Enable lifts the named provider's quota block and disabled targets (an
// operator's word that the quota is back or the models exist); false when
// no provider has that name.
func (s *Server) Enable(name string) (Enabled, bool) {
	p := s.st.Load().providers[name]
	if p == nil {
		return Enabled{}, false
	}
	quota, targets := p.Up.Enable()
	if targets == nil {
		targets = []string{}
	}
	return Enabled{Provider: name, QuotaLifted: quota, TargetsEnabled: targets}, true
}
