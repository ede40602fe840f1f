package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/quota"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/redistest"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// The step tables (docs/ARCHITECTURE.md, "Fleet": one rule, one table):
// each testdata/<mechanism>_steps.json case runs against the Go mechanism
// (internal/breaker, internal/ratelimit, internal/quota, on an injected
// clock) and against its Lua twin on a real redis-server (the same
// scripts as production, with the clock chunk taking now from the last
// argument), and both must give each step's want.

// stepCase is one scenario of a table.
type stepCase struct {
	Name   string     `json:"name"`
	Config stepConfig `json:"config"`
	Steps  []step     `json:"steps"`
}

type stepConfig struct {
	Consecutive    int     `json:"consecutive"`
	Ratio          float64 `json:"ratio"`
	MinRequests    int     `json:"min_requests"`
	WindowMs       int64   `json:"window_ms"`
	FailureMs      int64   `json:"failure_ms"`
	TimeoutMs      int64   `json:"timeout_ms"`
	RateLimitMs    int64   `json:"rate_limit_ms"`
	Multiplier     float64 `json:"multiplier"`
	MaxMs          int64   `json:"max_ms"`
	RPM            int64   `json:"rpm"`
	TPM            int64   `json:"tpm"`
	QuotaRecheckMs int64   `json:"quota_recheck_ms"`
}

// step is one event at `at` ms from the start, and what must hold after
// it. Events: admit (id; tokens), done (id, kind; retry_after_ms),
// probe (ok, else kind), observe (headers), reconcile (id, used),
// quota (id, reset_ms), answered (id, counts), look (nothing: only want).
type step struct {
	At         int64    `json:"at"`
	Event      string   `json:"event"`
	ID         string   `json:"id"`
	Kind       string   `json:"kind"`
	Tokens     int64    `json:"tokens"`
	Used       int64    `json:"used"`
	OK         bool     `json:"ok"`
	Counts     bool     `json:"counts"`
	RetryAfter int64    `json:"retry_after_ms"`
	ResetMs    int64    `json:"reset_ms"`
	Headers    *headers `json:"headers"`
	Want       want     `json:"want"`
}

type headers struct {
	LimitRequests     int64 `json:"limit_requests"`
	RemainingRequests int64 `json:"remaining_requests"`
	ResetRequestsMs   int64 `json:"reset_requests_ms"`
	LimitTokens       int64 `json:"limit_tokens"`
	RemainingTokens   int64 `json:"remaining_tokens"`
	ResetTokensMs     int64 `json:"reset_tokens_ms"`
	RetryAfterMs      int64 `json:"retry_after_ms"`
}

func (h *headers) rateLimit() outcome.RateLimit {
	rl := outcome.RateLimit{LimitRequests: -1, RemainingRequests: -1, LimitTokens: -1, RemainingTokens: -1}
	if h == nil {
		return rl
	}
	d := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	return outcome.RateLimit{LimitRequests: h.LimitRequests, RemainingRequests: h.RemainingRequests,
		ResetRequests: d(h.ResetRequestsMs), LimitTokens: h.LimitTokens, RemainingTokens: h.RemainingTokens,
		ResetTokens: d(h.ResetTokensMs), RetryAfter: d(h.RetryAfterMs)}
}

// want is what must hold after a step; nil fields are not checked.
// Reason: "" admitted, else open, limited, too_large or quota.
type want struct {
	Reason *string `json:"reason"`
	WaitMs *int64  `json:"wait_ms"`
	Check  *bool   `json:"check"`
	State  *string `json:"state"`
	LeftMs *int64  `json:"left_ms"`
	Trips  *int    `json:"trips"`
	Quota  *bool   `json:"quota"`
	QLeft  *int64  `json:"quota_left_ms"`
}

// got is what one side saw after a step.
type got struct {
	reason string
	waitMs int64
	check  bool
	state  string
	leftMs int64
	trips  int
	quota  bool
	qLeft  int64
}

func (w want) compare(t *testing.T, side string, c stepCase, i int, g got) {
	t.Helper()
	bad := func(what string, want, got any) {
		t.Errorf("%s: %s step %d (%s at %d): %s = %v, want %v", side, c.Name, i, c.Steps[i].Event, c.Steps[i].At, what, got, want)
	}
	if w.Reason != nil && *w.Reason != g.reason {
		bad("reason", *w.Reason, g.reason)
	}
	if w.WaitMs != nil && *w.WaitMs != g.waitMs {
		bad("wait_ms", *w.WaitMs, g.waitMs)
	}
	if w.Check != nil && *w.Check != g.check {
		bad("check", *w.Check, g.check)
	}
	if w.State != nil && *w.State != g.state {
		bad("state", *w.State, g.state)
	}
	if w.LeftMs != nil && *w.LeftMs != g.leftMs {
		bad("left_ms", *w.LeftMs, g.leftMs)
	}
	if w.Trips != nil && *w.Trips != g.trips {
		bad("trips", *w.Trips, g.trips)
	}
	if w.Quota != nil && *w.Quota != g.quota {
		bad("quota", *w.Quota, g.quota)
	}
	if w.QLeft != nil && *w.QLeft != g.qLeft {
		bad("quota_left_ms", *w.QLeft, g.qLeft)
	}
}

func loadSteps(t *testing.T, name string) []stepCase {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + "_steps.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []stepCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func kindOf(t *testing.T, name string) outcome.Kind {
	for _, k := range outcome.Kinds() {
		if k.String() == name {
			return k
		}
	}
	t.Fatalf("unknown kind %q", name)
	return 0
}

func msOf(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// ceilMs rounds a wait up to whole ms, as the scripts reply.
func ceilMs(d time.Duration) int64 {
	return int64(math.Ceil(float64(d) / float64(time.Millisecond)))
}

// described is the provider's settings and policy the case runs under.
func (c stepConfig) described() (provider.Config, shared.Policy) {
	or := func(v, d int64) time.Duration {
		if v == 0 {
			v = d
		}
		return msOf(v)
	}
	b := breaker.DefaultConfig()
	b.FailureThreshold = breaker.Threshold{Consecutive: c.Consecutive, Ratio: c.Ratio, MinRequests: c.MinRequests,
		Window: or(c.WindowMs, 10000)}
	b.Cooldown = breaker.Cooldown{Failure: or(c.FailureMs, 1000), Timeout: or(c.TimeoutMs, 1000),
		RateLimit: or(c.RateLimitMs, 1000), Multiplier: max(c.Multiplier, 1), Max: or(c.MaxMs, 60000)}
	return provider.Config{Name: "p", RPM: c.RPM, TPM: c.TPM}, shared.Policy{Breaker: b, QuotaRecheck: or(c.QuotaRecheckMs, 1000)}
}

// --- Lua ---

// argClock takes now (ms) from the script's last argument.
const argClock = `
local now = tonumber(ARGV[#ARGV])
`

// luaBase is the scripts' time at a case's 0: a whole number of seconds,
// so the breaker window's slots start where the Go window's do.
const luaBase = int64(946684800000)

type luaSide struct {
	t    *testing.T
	rdb  *redis.Client
	s    *scripts
	cfg  provider.Config
	pol  shared.Policy
	key  string
	lock string
	gen  map[string]uint64
	chk  map[string]bool
	tok  map[string]int64
}

func (l *luaSide) run(sc *redis.Script, at int64, keys []string, args ...any) []int64 {
	l.t.Helper()
	v, err := sc.Run(context.Background(), l.rdb, keys, append(args, luaBase+at)...).Int64Slice()
	if err != nil {
		l.t.Fatal(err)
	}
	return v
}

// look is the fleet's view of the provider at `at`.
func (l *luaSide) look(at int64) got {
	return l.reply(l.run(l.s.view, at, []string{l.key}))
}

func (l *luaSide) reply(v []int64) got {
	g := got{waitMs: v[1], leftMs: v[4], trips: int(v[5]), quota: v[7] == 1, qLeft: v[8], check: v[9] == 1}
	g.reason = [...]string{"", "open", "limited", "too_large", "quota"}[v[0]]
	switch {
	case v[3] != 2:
		g.state = "closed"
	case v[4] > 0:
		g.state = "open"
	default:
		g.state = "half_open"
	}
	return g
}

func (l *luaSide) record(at int64, r shared.Record) {
	l.run(l.s.record, at, []string{l.key, l.key + ":targets"}, recordArgs(l.cfg, l.pol, 3600000, r)...)
}

func (l *luaSide) step(s step) got {
	cd := l.pol.Breaker.Cooldown
	switch s.Event {
	case "admit":
		v := l.run(l.s.admit, s.At, []string{l.key}, admitArgs(l.cfg, time.Minute, 3600000, s.Tokens)...)
		l.gen[s.ID], l.chk[s.ID], l.tok[s.ID] = uint64(v[2]), v[9] == 1, s.Tokens
		g := l.reply(v)
		look := l.look(s.At)
		g.state, g.leftMs, g.trips, g.quota, g.qLeft = look.state, look.leftMs, look.trips, look.quota, look.qLeft
		return g
	case "done":
		k := kindOf(l.t, s.Kind)
		l.record(s.At, shared.Record{Gen: l.gen[s.ID], Health: k, LastKind: k,
			Cooldown: cd.For(k, msOf(s.RetryAfter), 1), RateLimit: s.Headers.rateLimit()})
	case "probe":
		token := "t" + strconv.FormatInt(s.At, 10)
		v := l.run(l.s.probeStart, s.At, []string{l.key, l.lock}, token, 1000)
		if v[9] == 1 {
			k := outcome.OK
			if !s.OK {
				k = kindOf(l.t, s.Kind)
			}
			l.run(l.s.probeDone, s.At, []string{l.key, l.lock}, probeDoneArgs(l.pol, 3600000, token, s.OK, k, msOf(s.RetryAfter))...)
		}
	case "observe":
		l.record(s.At, shared.Record{ObserveOnly: true, Health: outcome.Canceled, RateLimit: s.Headers.rateLimit()})
	case "reconcile":
		l.record(s.At, shared.Record{Gen: l.gen[s.ID], Health: outcome.Canceled, TokensDelta: s.Used - l.tok[s.ID],
			RateLimit: s.Headers.rateLimit()})
	case "quota":
		l.record(s.At, shared.Record{Gen: l.gen[s.ID], Health: outcome.Canceled, LastKind: outcome.Quota,
			Quota: true, QuotaReset: msOf(s.ResetMs), QuotaCheck: l.chk[s.ID], RateLimit: s.Headers.rateLimit()})
	case "answered":
		h := outcome.Canceled
		if s.Counts {
			h = outcome.OK
		}
		l.record(s.At, shared.Record{Gen: l.gen[s.ID], Health: h, QuotaCheck: l.chk[s.ID], RateLimit: s.Headers.rateLimit()})
	case "look":
	default:
		l.t.Fatalf("unknown event %q", s.Event)
	}
	return l.look(s.At)
}

// runLua runs every case of table against the Lua twin.
func runLua(t *testing.T, table string) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	s := newScripts(argClock)
	for n, c := range loadSteps(t, table) {
		key := fmt.Sprintf("%s{%d}", table, n)
		cfg, pol := c.Config.described()
		l := &luaSide{t: t, rdb: rdb, s: s, cfg: cfg, pol: pol, key: key, lock: key + ":probe",
			gen: map[string]uint64{}, chk: map[string]bool{}, tok: map[string]int64{}}
		for i, st := range c.Steps {
			st.Want.compare(t, "lua", c, i, l.step(st))
		}
	}
}

// --- Go ---

func TestBreakerSteps(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		for _, c := range loadSteps(t, "breaker") {
			synctest.Test(t, func(t *testing.T) { goBreaker(t, c) })
		}
	})
	t.Run("lua", func(t *testing.T) { runLua(t, "breaker") })
}

// goBreaker runs c against internal/breaker inside a synctest bubble: its
// rolling window and its probes read time.Now().
func goBreaker(t *testing.T, c stepCase) {
	_, pol := c.Config.described()
	b := breaker.New("p", pol.Breaker, breaker.Options{})
	start := time.Now()
	tickets := map[string]breaker.Ticket{}
	for i, s := range c.Steps {
		time.Sleep(time.Until(start.Add(msOf(s.At))))
		now := time.Now()
		var g got
		switch s.Event {
		case "admit":
			tk, err := b.Allow(now)
			tickets[s.ID] = tk
			if oe := (*breaker.OpenError)(nil); errors.As(err, &oe) {
				g.reason, g.waitMs = "open", ceilMs(oe.RetryIn)
			}
		case "done":
			b.Done(now, tickets[s.ID], kindOf(t, s.Kind), msOf(s.RetryAfter))
		case "probe":
			b.Probe(context.Background(), func(context.Context) error {
				if s.OK {
					return nil
				}
				return &outcome.Error{Kind: kindOf(t, s.Kind), RetryAfter: msOf(s.RetryAfter)}
			})
		case "look":
		default:
			t.Fatalf("unknown event %q", s.Event)
		}
		sn := b.Snapshot(now)
		g.state, g.leftMs, g.trips = sn.State.String(), ceilMs(sn.CooldownLeft), sn.ConsecutiveTrips
		s.Want.compare(t, "go", c, i, g)
	}
}

func TestBucketsSteps(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		for _, c := range loadSteps(t, "buckets") {
			goBuckets(t, c)
		}
	})
	t.Run("lua", func(t *testing.T) { runLua(t, "buckets") })
}

// goBuckets runs c against internal/ratelimit's Limiter. An attempt's end
// is what upstream's Release does: reconcile, then observe the headers.
func goBuckets(t *testing.T, c stepCase) {
	l := ratelimit.New(c.Config.RPM, c.Config.TPM)
	start := time.Now()
	res := map[string]*ratelimit.Reservation{}
	for i, s := range c.Steps {
		now := start.Add(msOf(s.At))
		var g got
		switch s.Event {
		case "admit":
			res[s.ID], g = reserveStep(t, l, now, s.Tokens)
		case "reconcile", "done":
			res[s.ID].Reconcile(now, s.Used)
			l.Observe(now, s.Headers.rateLimit())
		case "observe":
			l.Observe(now, s.Headers.rateLimit())
		case "look":
		default:
			t.Fatalf("unknown event %q", s.Event)
		}
		s.Want.compare(t, "go", c, i, g)
	}
}

func TestQuotaSteps(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		for _, c := range loadSteps(t, "quota") {
			goQuota(t, c)
		}
	})
	t.Run("lua", func(t *testing.T) { runLua(t, "quota") })
}

// goQuota runs c against internal/quota's Block.
func goQuota(t *testing.T, c stepCase) {
	_, pol := c.Config.described()
	q := quota.New(pol.QuotaRecheck)
	start := time.Now()
	for i, s := range c.Steps {
		now := start.Add(msOf(s.At))
		var g got
		switch s.Event {
		case "admit":
			on, _ := q.Status(now)
			wait, ok, lifted := q.Admit(now)
			if !ok {
				g.reason, g.waitMs = "quota", ceilMs(wait)
			}
			g.check = on && ok && !lifted
		case "quota":
			q.Quota(now, msOf(s.ResetMs))
		case "answered":
			q.Answered(s.Counts)
		case "look":
		default:
			t.Fatalf("unknown event %q", s.Event)
		}
		var left time.Duration
		g.quota, left = q.Status(now)
		g.qLeft = ceilMs(left)
		s.Want.compare(t, "go", c, i, g)
	}
}

// reserveStep is an admit step on a Go limiter: the reservation, and the
// refusal as the step tables write it (limited with its wait, too_large).
func reserveStep(t *testing.T, l *ratelimit.Limiter, now time.Time, tokens int64) (*ratelimit.Reservation, got) {
	var g got
	r, err := l.Reserve(now, tokens)
	var le *ratelimit.LimitedError
	switch {
	case err == nil:
	case errors.As(err, &le):
		g.reason, g.waitMs = "limited", ceilMs(le.Wait)
	case errors.Is(err, ratelimit.ErrTooLarge):
		g.reason = "too_large"
	default:
		t.Fatal(err)
	}
	return &r, g
}
