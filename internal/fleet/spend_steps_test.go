package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/budget"
	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/redistest"
)

// spendCase is one story of a key's spend number: additions (a request's
// cost settled) and admissions, each with the number or the verdict
// wanted.
type spendCase struct {
	Name  string      `json:"name"`
	Limit budget.Nano `json:"limit"`
	Steps []struct {
		Event  string      `json:"event"` // add or admit
		Amount budget.Nano `json:"amount"`
		Spend  budget.Nano `json:"spend"` // add: the number after it
		Want   string      `json:"want"`  // admit: admitted or exceeded
	} `json:"steps"`
}

// TestSpendSteps: a client key's spend (docs/ARCHITECTURE.md, "Fleet":
// one rule, one table), testdata/spend_steps.json against internal/budget
// (Settle adds a cost, Reserve decides) and against the fleet's keySpend
// and keyAdmit scripts on a real redis-server, as internal/fleet drives
// them. Nano-dollars pass a double's integers, and a cost of MaxInt64
// (issue 31) must saturate the number in both, not wrap it or fail.
func TestSpendSteps(t *testing.T) {
	b, err := os.ReadFile("testdata/spend_steps.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []spendCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	t.Run("go", func(t *testing.T) {
		now := time.Date(2025, 6, 4, 10, 0, 0, 0, time.UTC)
		for _, c := range cases {
			bud := budget.New(c.Limit, budget.Total)
			for i, st := range c.Steps {
				switch st.Event {
				case "add":
					bud.Settle(now, budget.Reservation{}, st.Amount)
					if got := bud.Snapshot(now).Spend; got != st.Spend {
						t.Errorf("%s: step %d: spend %d, want %d", c.Name, i, got, st.Spend)
					}
				case "admit":
					d := bud.Reserve(now, 0)
					got := map[budget.Verdict]string{budget.Admitted: "admitted", budget.Exceeded: "exceeded", budget.Wait: "wait"}[d.Verdict]
					if got != st.Want {
						t.Errorf("%s: step %d: %s, want %s", c.Name, i, got, st.Want)
					}
					if d.Verdict == budget.Admitted {
						bud.Settle(now, d.Reservation, 0)
					}
				default:
					t.Fatalf("unknown event %q", st.Event)
				}
			}
		}
	})
	t.Run("lua", func(t *testing.T) {
		srv := redistest.Start(t)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { rdb.Close() })
		s := newScripts(argClock)
		ctx := context.Background()
		for n, c := range cases {
			keys := []string{fmt.Sprintf("{key:k%d}:rl", n), fmt.Sprintf("{key:k%d}:spend", n)}
			for i, st := range c.Steps {
				switch st.Event {
				case "add":
					v, err := s.keySpend.Run(ctx, rdb, keys[1:], st.Amount).Text()
					if err != nil {
						t.Fatalf("%s: step %d: %v", c.Name, i, err)
					}
					if got, err := strconv.ParseInt(v, 10, 64); err != nil || got != st.Spend {
						t.Errorf("%s: step %d: spend %s, want %d", c.Name, i, v, st.Spend)
					}
				case "admit":
					// rpm 1000: keyAdmit runs its buckets and reads the spend.
					reply, err := s.keyAdmit.Run(ctx, rdb, keys, 0, 1000, 0, c.Limit, clientKeyTTL, luaBase).Slice()
					if err != nil {
						t.Fatal(err)
					}
					v, err := parseKeyVerdict(reply)
					if err != nil {
						t.Fatal(err)
					}
					got := map[clientkeys.Reason]string{0: "admitted", clientkeys.Budget: "exceeded"}[v.Refused]
					if got != st.Want {
						t.Errorf("%s: step %d: %s (spend %d), want %s", c.Name, i, got, v.Spend, st.Want)
					}
				}
			}
		}
	})
}
