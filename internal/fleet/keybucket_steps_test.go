package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/redistest"
)

// TestKeyBucketSteps: a client key's RPM/TPM (docs/ARCHITECTURE.md,
// "Fleet": one rule, one table), testdata/keybucket_steps.json against
// internal/ratelimit's Limiter as a key uses it (Reserve; Reconcile with
// the usage reported, nothing when none; Cancel for a request never sent)
// and against the fleet's keyAdmit and keyAdjust scripts on a real
// redis-server, as internal/clientkeys drives them.
func TestKeyBucketSteps(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		for _, c := range loadSteps(t, "keybucket") {
			goKeyBucket(t, c)
		}
	})
	t.Run("lua", func(t *testing.T) {
		srv := redistest.Start(t)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { rdb.Close() })
		s := newScripts(argClock)
		for n, c := range loadSteps(t, "keybucket") {
			luaKeyBucket(t, rdb, s, fmt.Sprintf("{key:k%d}:rl", n), c)
		}
	})
}

func goKeyBucket(t *testing.T, c stepCase) {
	l := ratelimit.New(c.Config.RPM, c.Config.TPM)
	start := time.Now()
	res := map[string]*ratelimit.Reservation{}
	for i, s := range c.Steps {
		now := start.Add(msOf(s.At))
		var g got
		switch s.Event {
		case "admit":
			res[s.ID], g = reserveStep(t, l, now, s.Tokens)
		case "reconcile":
			res[s.ID].Reconcile(now, s.Used)
		case "cancel":
			res[s.ID].Cancel(now)
		case "look":
		default:
			t.Fatalf("unknown event %q", s.Event)
		}
		s.Want.compare(t, "go", c, i, g)
	}
}

func luaKeyBucket(t *testing.T, rdb *redis.Client, s *scripts, key string, c stepCase) {
	rpm, tpm := c.Config.RPM, c.Config.TPM
	run := func(sc *redis.Script, at int64, args ...any) any {
		t.Helper()
		v, err := sc.Run(context.Background(), rdb, []string{key}, append(args, luaBase+at)...).Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tok := map[string]int64{}
	charged := map[string]bool{}
	for i, st := range c.Steps {
		var g got
		switch st.Event {
		case "admit":
			reply, _ := run(s.keyAdmit, st.At, st.Tokens, rpm, tpm, 0, clientKeyTTL).([]any)
			v, err := parseKeyVerdict(reply)
			if err != nil {
				t.Fatal(err)
			}
			tok[st.ID], charged[st.ID] = st.Tokens, v.Charged
			g.reason = [...]string{"", "limited", "too_large"}[v.Refused]
			g.waitMs = v.Wait.Milliseconds()
		case "reconcile":
			// As clientkeys' Settle: none reported, the estimate stands.
			if charged[st.ID] && st.Used > 0 && st.Used != tok[st.ID] {
				run(s.keyAdjust, st.At, 0, st.Used-tok[st.ID], rpm, tpm, clientKeyTTL)
			}
			charged[st.ID] = false
		case "cancel":
			if charged[st.ID] {
				run(s.keyAdjust, st.At, -1, -tok[st.ID], rpm, tpm, clientKeyTTL)
			}
			charged[st.ID] = false
		case "look":
		default:
			t.Fatalf("unknown event %q", st.Event)
		}
		st.Want.compare(t, "lua", c, i, g)
	}
}
