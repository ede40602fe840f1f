package warm

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmrouter/llmrouter/internal/budget"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/warm/record"
)

// version is the version of State's layout this router writes. It
// reads versions 1 (stats and learned limit sizes only) and 2.
//
// Version 2 added per provider a fingerprint of its configuration, the
// breaker, the buckets and their blocks, the adaptive throttle's window,
// the quota block and the disabled targets (docs/ARCHITECTURE.md, "Warm
// restart"). The client keys' spend (Keys) came later within version 2:
// an optional section that routers without it ignore, so that they still
// read the rest of the file.
const version = 2

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
	// Keys are the named client keys' budgets by name: the spend recorded
	// in their current period (docs/ARCHITECTURE.md, "Client keys and
	// spend"). Absent in files of routers before it.
	Keys map[string]budget.Saved `json:"keys,omitempty"`
}

// ErrVersion is matched (errors.Is) by Decode's and Restore's refusal of
// a State of a version this router cannot read (newer than it, or none).
var ErrVersion = errors.New("unsupported state version")

// Decode decodes a state file's content. It reads the version first,
// so a newer router's file is refused as such (ErrVersion), whatever
// its layout, rather than misread.
func Decode(data []byte) (State, error) {
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
	case v > version:
		return fmt.Errorf("state version %d is newer than this router's %d: %w", v, version, ErrVersion)
	case v < 1:
		return fmt.Errorf("state version %d: %w", v, ErrVersion)
	}
	return nil
}

// Export captures the learned state of rt's providers at now
// (time.Now(): monotonic).
func Export(rt *routing.Routes, now time.Time) State {
	v := rt.View()
	out := State{Version: version, SavedAt: now.Round(0), Providers: make(map[string]record.State, len(v.Providers))}
	for _, p := range v.Providers {
		out.Providers[p.Name] = p.Up.Export(now)
	}
	// Budgets count calendar periods: wall time, as the routing clock's
	// own reading.
	if keys := v.Clients.Export(v.At); len(keys) > 0 {
		out.Keys = keys
	}
	return out
}

// Restored is what Restore did.
type Restored struct {
	// Providers are the providers that took their saved state, in config
	// order.
	Providers []string
	// Fresh are the providers the state had an entry for that started
	// fresh anyway, each with why (an *upstream.ChangedError).
	Fresh map[string]error
	// Keys are the client keys whose spend this period was restored.
	Keys []string
}

// Restore loads learned state, exported at any time before now (possibly
// by another process), into rt's providers that still exist by name;
// call it before serving. A provider whose configuration changed
// since the save starts fresh (Restored.Fresh says why); a disabled target
// that is no longer one of the provider's targets stays enabled. A State
// of a version this router cannot read restores nothing and returns an
// error matching ErrVersion.
func Restore(rt *routing.Routes, now time.Time, in State) (Restored, error) {
	if err := checkVersion(in.Version); err != nil {
		return Restored{}, err
	}
	v := rt.View()
	targets := make(map[string]map[string]bool, len(v.Providers)) // provider → its target models
	for _, name := range v.Models.Names() {
		for _, t := range v.Models.Lookup(name).Targets {
			if targets[t.Provider] == nil {
				targets[t.Provider] = make(map[string]bool)
			}
			targets[t.Provider][t.Model] = true
		}
	}
	var out Restored
	for _, p := range v.Providers {
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
	out.Keys = v.Clients.Restore(v.At, in.Keys)
	return out, nil
}
