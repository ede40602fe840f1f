package admin

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// TestKeys: GET /admin/keys has one row per named key, in config order:
// the spend this period, the budget and what is left, when it resets,
// the RPM in use; never a secret.
func TestKeys(t *testing.T) {
	sim, err := simulated.New(provider.Config{Name: "p"}, simulated.Config{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "p", Model: "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	named := func(name string) clientauth.Named {
		return clientauth.Named{Name: name, Hash: sha256.Sum256([]byte("secret-" + name))}
	}
	rt, err := routing.New(routing.Options{Providers: []provider.Descriptor{{Name: "p", Type: "simulated", Adapter: sim}}, Models: table,
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: time.Minute},
		NamedKeys: []routing.ClientKey{
			{Named: named("capped"), Limits: clientkeys.Limits{BudgetUSD: 50, BudgetPeriod: "day", RPM: 10, Models: []string{"m"}}},
			{Named: named("free"), Limits: clientkeys.Limits{}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	k := rt.Load().Clients.Lookup("capped")
	tk, r := k.Admit(context.Background(), nil, 10, 1)
	if r != nil {
		t.Fatal(r)
	}
	k.Settle(time.Now(), tk, 10, 12.5)
	h := Handler(Options{Routes: rt, Registry: prometheus.NewRegistry(), Ready: func() bool { return true }})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1:9090/admin/keys", nil))
	var body struct {
		Keys []KeyStatus `json:"keys"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 200 {
		t.Fatalf("%d %v: %s", w.Code, err, w.Body)
	}
	if len(body.Keys) != 2 || body.Keys[0].Name != "capped" || body.Keys[1].Name != "free" {
		t.Fatalf("rows %+v, want capped and free", body.Keys)
	}
	c, f := body.Keys[0], body.Keys[1]
	midnight := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	if c.SpendUSD != 12.5 || c.BudgetUSD != 50 || c.RemainingUSD == nil || *c.RemainingUSD != 37.5 ||
		c.ResetsAt == nil || !c.ResetsAt.Equal(midnight) || c.RPM != 10 || c.RPMInUse != 1 || c.Period != "day" {
		t.Errorf("capped: %+v, want 12.5 of 50 spent, 37.5 left, resets at %s, 1 of 10 rpm", c, midnight)
	}
	if f.BudgetUSD != 0 || f.RemainingUSD != nil || f.RPMInUse != -1 || f.Period != "month" {
		t.Errorf("free: %+v, want no budget, no rpm, the month", f)
	}
	if bytes := w.Body.String(); strings.Contains(bytes, "secret-") {
		t.Errorf("a secret in /admin/keys: %s", bytes)
	}
}
