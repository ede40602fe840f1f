package routing

import (
	"time"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
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
	// Clients are the client keys' runtimes.
	Clients *clientkeys.Keys
	// At is the moment, on the routing state's clock (Options.Now).
	At time.Time
	st *State
}

// View returns the routing state in force now.
func (rt *Routes) View() View {
	st := rt.st.Load()
	return View{Providers: st.Order, Models: st.Models, Weights: st.Routing.Weights, Clients: st.Clients, At: rt.now(), st: st}
}

// Provider returns the provider named name; nil when there is none.
func (v View) Provider(name string) *failover.Provider { return v.st.Providers[name] }

// OpenShare is the share of providers whose breaker is open at v.At, and
// the earliest time one of them will probe again: what priority shedding
// decides on.
func (v View) OpenShare() (float64, time.Duration) { return v.st.OpenShare(v.At) }

// OpenShare is the share of providers whose breaker is open at now, and
// the earliest time one of them will probe again.
func (st *State) OpenShare(now time.Time) (float64, time.Duration) {
	if len(st.Order) == 0 {
		return 0, 0
	}
	open := 0
	var soonest time.Duration
	for _, p := range st.Order {
		if isOpen, left := p.Up.IsOpen(now); isOpen {
			open++
			if soonest == 0 || left < soonest {
				soonest = left
			}
		}
	}
	return float64(open) / float64(len(st.Order)), soonest
}

// DomainDown returns, for now, whether another provider of a provider's
// failure domain is down: open, or failing (upstream.Upstream.Down;
// docs/ARCHITECTURE.md, "Selection").
func (st *State) DomainDown(now time.Time) func(string) bool {
	var down map[string][]string // domain → its providers down
	for _, p := range st.Order {
		if d := p.Config.Domain; d != "" && p.Up.Down(now) {
			if down == nil {
				down = make(map[string][]string)
			}
			down[d] = append(down[d], p.Name)
		}
	}
	return func(name string) bool {
		p := st.Providers[name]
		for _, o := range down[p.Config.Domain] {
			if o != name {
				return true
			}
		}
		return false
	}
}
