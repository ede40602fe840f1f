package warm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/budget"
	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// keysRoutes is routing state with one provider and the named key "team"
// of a $50 daily budget.
func keysRoutes(t *testing.T, period string) *routing.Routes {
	t.Helper()
	table, err := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "p", Model: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := routing.New(routing.Options{Providers: []provider.Descriptor{{Name: "p", Type: "fake", Adapter: &fake{do: ok(`{}`)}}},
		Models: table, Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: time.Minute},
		NamedKeys: []routing.ClientKey{{Named: clientkeysNamed("team"), Limits: clientkeys.Limits{BudgetUSD: 50, BudgetPeriod: period}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

// TestKeysSpendSurvives: a key's spend this period is in the state file
// and restored into a router whose key has a budget of the same period;
// a file of a router before the keys section restores no spend, and a
// changed period starts at 0.
func TestKeysSpendSurvives(t *testing.T) {
	a := keysRoutes(t, "day")
	k := a.Load().Clients.Lookup("team")
	for range 3 {
		tk, r := k.Admit(context.Background(), nil, 0, 1)
		if r != nil {
			t.Fatal(r)
		}
		k.Settle(time.Now(), tk, 0, 5)
	}
	st := Export(a, time.Now())
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	b := keysRoutes(t, "day")
	r, err := Restore(b, time.Now(), back)
	if err != nil || len(r.Keys) != 1 {
		t.Fatalf("restored %+v, %v; want the key team", r, err)
	}
	if got := keyRow(b, "team"); got != 15 {
		t.Errorf("restored spend %g, want 15", got)
	}
	c := keysRoutes(t, "week")
	if r, _ := Restore(c, time.Now(), back); len(r.Keys) != 0 || keyRow(c, "team") != 0 {
		t.Errorf("a key whose period changed took the saved spend")
	}
	old, err := Decode([]byte(`{"version":2,"providers":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := keysRoutes(t, "day")
	if r, err := Restore(d, time.Now(), old); err != nil || len(r.Keys) != 0 {
		t.Errorf("a file without keys: %+v, %v", r, err)
	}
}

// keyRow is the named key's spend this period, in dollars.
func keyRow(rt *routing.Routes, name string) float64 {
	saved := rt.View().Clients.Export(time.Now())
	return budget.USD(saved[name].Spend)
}

func clientkeysNamed(name string) clientauth.Named {
	return clientauth.Named{Name: name, Hash: sha256.Sum256([]byte(name))}
}
