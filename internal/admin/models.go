package admin

import "github.com/llmrouter/llmrouter/internal/routing"

// ModelStatus is one row of GET /admin/models: a configured model and its
// targets, in tier order as configured.
type ModelStatus struct {
	Name     string         `json:"name"`
	BestTier int            `json:"best_tier"`
	Targets  []TargetStatus `json:"targets"`
}

// TargetStatus is one target of a model and whether it could take a
// request now.
type TargetStatus struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Tier     int    `json:"tier"`
	// Available: its provider's breaker is closed, it is not out of
	// quota, not blocked by an announced budget, and the target is not
	// disabled. Why says what keeps it away when not.
	Available bool   `json:"available"`
	Why       string `json:"why"`
}

// Models returns rt's models, sorted by name, with their targets'
// availability judged on rows (Providers' rows of the same moment).
func Models(rt *routing.Routes, rows []ProviderStatus) []ModelStatus {
	v := rt.View()
	byName := make(map[string]*ProviderStatus, len(rows))
	for i := range rows {
		byName[rows[i].Name] = &rows[i]
	}
	names := v.Models.Names()
	out := make([]ModelStatus, 0, len(names))
	for _, name := range names {
		m := v.Models.Lookup(name)
		if m == nil {
			continue
		}
		row := ModelStatus{Name: name, BestTier: m.BestTier, Targets: make([]TargetStatus, 0, len(m.Targets))}
		for _, tg := range m.Targets {
			ts := TargetStatus{Provider: tg.Provider, Model: tg.Model, Tier: tg.Tier}
			ts.Why = unavailable(byName[tg.Provider], v, tg.Provider, tg.Model)
			ts.Available = ts.Why == ""
			row.Targets = append(row.Targets, ts)
		}
		out = append(out, row)
	}
	return out
}

// unavailable says what keeps the target of provider's model from taking a
// request at the moment of p; "" when nothing does.
func unavailable(p *ProviderStatus, v routing.View, provider, model string) string {
	fp := v.Provider(provider)
	switch {
	case p == nil || fp == nil:
		return "no such provider"
	case fp.Up.TargetOff(model):
		return "target disabled"
	case p.OutOfQuota:
		return "out of quota"
	case p.State == "open":
		return "breaker open"
	case p.State != "closed":
		return "breaker " + p.State
	case p.BlockedSeconds > 0:
		return "rate limited"
	case p.MaxConcurrency > 0 && p.InFlight >= p.MaxConcurrency:
		return "at max_concurrency"
	}
	return ""
}
