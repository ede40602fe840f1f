package clientkeys

import (
	"time"

	"github.com/llmrouter/llmrouter/internal/budget"
)

// Status is one row of GET /admin/keys: a named key's spend this period
// against its budget, and its RPM and TPM in use (docs/ARCHITECTURE.md,
// "Client keys and spend"). It never holds a secret.
type Status struct {
	Name string `json:"name"`
	// Models is the allow-list; empty means every model.
	Models []string `json:"models"`
	// Period is the budget period (day, week, month, total); SpendUSD the
	// spend recorded in it (with shared_state and a budget, the fleet's
	// number as last read, plus this router's since).
	Period   string  `json:"budget_period"`
	SpendUSD float64 `json:"spend_usd"`
	// BudgetUSD is the budget (0: none); RemainingUSD what is left of it
	// (null without a budget); ReservedUSD the estimates of the requests
	// in flight and InFlight how many they are.
	BudgetUSD    float64  `json:"budget_usd"`
	RemainingUSD *float64 `json:"remaining_usd"`
	ReservedUSD  float64  `json:"reserved_usd"`
	InFlight     int      `json:"in_flight"`
	// ResetsAt is when the period ends (UTC); null for total.
	ResetsAt *time.Time `json:"resets_at"`
	// RPM and TPM are the key's limits (0: none); RPMInUse and TPMInUse
	// what the last minute's requests hold of them (-1: no such limit).
	RPM      int64 `json:"rpm"`
	TPM      int64 `json:"tpm"`
	RPMInUse int64 `json:"rpm_in_use"`
	TPMInUse int64 `json:"tpm_in_use"`
	// Shared: the spend is the fleet's number (shared_state, a budget).
	Shared bool `json:"shared"`
}

// Status returns every named key's row at now, in config order.
func (ks *Keys) Status(now time.Time) []Status {
	out := make([]Status, 0, len(ks.Named()))
	for _, k := range ks.Named() {
		row := Status{Name: k.name, Models: k.limits.Models, Period: k.limits.period().String(),
			BudgetUSD: k.limits.BudgetUSD, RPM: k.limits.RPM, TPM: k.limits.TPM, RPMInUse: -1, TPMInUse: -1,
			Shared: k.capped && k.sh != nil}
		if row.Models == nil {
			row.Models = []string{}
		}
		if k.bud != nil {
			snap := k.bud.Snapshot(now)
			row.SpendUSD, row.ReservedUSD, row.InFlight = budget.USD(snap.Spend), budget.USD(snap.Reserved), snap.InFlight
			if k.capped {
				rem := budget.USD(snap.Remaining())
				row.RemainingUSD = &rem
			}
			if !snap.End.IsZero() {
				end := snap.End
				row.ResetsAt = &end
			}
		}
		switch {
		case k.lim != nil && k.sh != nil && k.sh.Up():
			// The fleet's buckets, as this router's last admission saw them.
			if k.limits.RPM > 0 {
				row.RPMInUse = k.fleet.inUse(now, k.limits.RPM, &k.fleet.reqLeft)
			}
			if k.limits.TPM > 0 {
				row.TPMInUse = k.fleet.inUse(now, k.limits.TPM, &k.fleet.tokLeft)
			}
		case k.lim != nil:
			s := k.lim.Snapshot(now)
			if k.limits.RPM > 0 && s.RemainingRequests >= 0 {
				row.RPMInUse = max(s.RequestsLimit-s.RemainingRequests, 0)
			}
			if k.limits.TPM > 0 && s.RemainingTokens >= 0 {
				row.TPMInUse = max(s.TokensLimit-s.RemainingTokens, 0)
			}
		}
		out = append(out, row)
	}
	return out
}
