package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmrouter/llmrouter/internal/warm/record"
)

// stateVersion is the version of State's layout this router writes. It
// reads versions 1 (stats and learned limit sizes only) and 2.
//
// Version 2 added per provider a fingerprint of its configuration, the
// breaker, the buckets and their blocks, the adaptive throttle's window,
// the quota block and the disabled targets (docs/ARCHITECTURE.md, "Warm
// restart").
const stateVersion = 2

// State is what the router has learned, for warm restarts
// (docs/ARCHITECTURE.md, "Warm restart").
type State struct {
	Version int `json:"version"`
	// SavedAt is when the state was exported, wall clock; Writer names
	// the process that saved it (host and pid), so that an operator can
	// tell two routers writing one file apart. Both are for logs only.
	SavedAt time.Time `json:"saved_at,omitzero"`
	Writer  string    `json:"writer,omitempty"`
	// Providers are the providers' states by name.
	Providers map[string]record.State `json:"providers"`
}

// ErrStateVersion is matched (errors.Is) by DecodeState's and
// RestoreState's refusal of a State of a version this router cannot read
// (newer than it, or none).
var ErrStateVersion = errors.New("unsupported state version")

// DecodeState decodes a state file's content. It reads the version first,
// so a newer router's file is refused as such (ErrStateVersion), whatever
// its layout, rather than misread.
func DecodeState(data []byte) (State, error) {
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return State{}, fmt.Errorf("decoding state: %w", err)
	}
	if err := checkVersion(head.Version); err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, fmt.Errorf("decoding state version %d: %w", head.Version, err)
	}
	return st, nil
}

func checkVersion(v int) error {
	switch {
	case v > stateVersion:
		return fmt.Errorf("state version %d is newer than this router's %d: %w", v, stateVersion, ErrStateVersion)
	case v < 1:
		return fmt.Errorf("state version %d: %w", v, ErrStateVersion)
	}
	return nil
}

// ExportState captures the learned state at now (time.Now(): monotonic).
func (s *Server) ExportState(now time.Time) State {
	st := s.st.Load()
	out := State{Version: stateVersion, SavedAt: now.Round(0), Providers: make(map[string]record.State, len(st.order))}
	for _, p := range st.order {
		out.Providers[p.Name] = p.Up.Export(now)
	}
	return out
}

// StateChanged returns a channel that receives soon after anything worth
// keeping across a restart changed (pool.Pool.Changed): a state-file
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

// Restored is what RestoreState did.
type Restored struct {
	// Providers are the providers that took their saved state, in config
	// order.
	Providers []string
	// Fresh are the providers the state had an entry for that started
	// fresh anyway, each with why (an *upstream.ChangedError).
	Fresh map[string]error
}

// RestoreState loads learned state, exported at any time before now
// (possibly by another process), into the providers that still exist by
// name; call it before serving. A provider whose configuration changed
// since the save starts fresh (Restored.Fresh says why); a disabled target
// that is no longer one of the provider's targets stays enabled. A State
// of a version this router cannot read restores nothing and returns an
// error matching ErrStateVersion.
func (s *Server) RestoreState(now time.Time, in State) (Restored, error) {
	if err := checkVersion(in.Version); err != nil {
		return Restored{}, err
	}
	st := s.st.Load()
	targets := make(map[string]map[string]bool, len(st.order)) // provider → its target models
	for _, name := range st.models.Names() {
		for _, t := range st.models.Lookup(name).Targets {
			if targets[t.Provider] == nil {
				targets[t.Provider] = make(map[string]bool)
			}
			targets[t.Provider][t.Model] = true
		}
	}
	var out Restored
	for _, p := range st.order {
		ps, ok := in.Providers[p.Name]
		if !ok {
			continue
		}
		models := targets[p.Name]
		if err := p.Up.Restore(now, ps, func(m string) bool { return models[m] }); err != nil {
			if out.Fresh == nil {
				out.Fresh = make(map[string]error)
			}
			out.Fresh[p.Name] = err
			continue
		}
		out.Providers = append(out.Providers, p.Name)
	}
	return out, nil
}
