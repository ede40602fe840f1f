package proxy

import (
	"time"

	"github.com/llmrouter/llmrouter/internal/upstream"
)

// stateVersion is the version of State's layout; a file of another
// version is ignored.
const stateVersion = 1

// State is what the router has learned, for warm restarts: per provider
// its windowed stats and the request and token limits in force.
type State struct {
	Version   int                       `json:"version"`
	Providers map[string]upstream.State `json:"providers"`
}

// ExportState captures the learned state at now.
func (s *Server) ExportState(now time.Time) State {
	st := s.st.Load()
	out := State{Version: stateVersion, Providers: make(map[string]upstream.State, len(st.order))}
	for _, p := range st.order {
		out.Providers[p.Name] = p.Up.Export(now)
	}
	return out
}

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

// RestoreState loads learned state for the providers that still exist (by
// name) and reports how many it restored. A state of another version
// restores nothing.
func (s *Server) RestoreState(now time.Time, in State) int {
	if in.Version != stateVersion {
		return 0
	}
	st := s.st.Load()
	n := 0
	for _, p := range st.order {
		if ps, ok := in.Providers[p.Name]; ok {
			p.Up.Restore(now, ps)
			n++
		}
	}
	return n
}
