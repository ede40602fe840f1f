package fleet

import (
	_ "embed"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The shared state of one provider is one Redis hash, KEYS[1]
// (<prefix>{<name>}:<fingerprint>), plus a probe lock and a hash of
// disabled targets beside it, all in one Cluster slot (the {<name>} hash
// tag). Every script reads the time from Redis (TIME), so the fleet shares
// one clock whatever the replicas' clocks say; durations cross the wire
// in milliseconds, relative to that clock.
//
// Fields of the hash:
//
//	b.st b.ou b.tr b.tk b.gen  breaker: 0 closed / 2 open (half-open once
//	                           b.ou passed), open until, consecutive trips,
//	                           trip kind, generation
//	w.cf w.ca w.s<n> w.f<n>    closed window: consecutive failures and
//	                           the last one's time; successes and failures
//	                           per tenth of the window (slot n)
//	lk                         the last failure kind
//	ra                         Retry-After: nothing passes before it
//	q.on q.until q.next q.chk  quota block: on, the provider's reset (0
//	                           unknown), next check, the check's lease
//	tg.gen                     disabled targets' generation
//	<d>.cap <d>.rate <d>.lvl <d>.at <d>.blk <d>.last <d>.lat <d>.lrs
//	<d>.clvl <d>.cat           budget d (r requests, t tokens): announced
//	                           limit, learned refill per ms, the provider
//	                           bucket's level and its time, the remaining-0
//	                           block, the last announced remaining, when,
//	                           and its reset (stale-news check); the
//	                           configured ceiling's bucket level and time
//
// Each mechanism's rules are one Lua file in lua/ (state.lua: the hash
// and the reply; breaker.lua, buckets.lua, quota.lua, spend.lua: the rules, each the
// twin of its Go original and tested against it by a step table in
// testdata, docs/ARCHITECTURE.md "Fleet"); a script below is those files
// plus its own few lines, behind the clock chunk that defines now.

var (
	//go:embed lua/state.lua
	stateLua string
	//go:embed lua/breaker.lua
	breakerLua string
	//go:embed lua/buckets.lua
	bucketsLua string
	//go:embed lua/quota.lua
	quotaLua string
	//go:embed lua/spend.lua
	spendLua string
)

// redisClock reads the time from Redis: one clock for the whole fleet.
const redisClock = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// scripts are the fleet's scripts on one clock.
type scripts struct {
	admit, record, probeStart, probeDone, view, enable, disable *redis.Script
	keyAdmit, keyAdjust, keySpend                               *redis.Script
}

// prod are the scripts on Redis's clock, built on first use (a router
// without shared_state never hashes them: 230 KB and the SHA-1 of each at
// start otherwise).
var prod = sync.OnceValue(func() *scripts { return newScripts(redisClock) })

// newScripts builds the scripts on clock, a chunk that defines now (ms).
func newScripts(clock string) *scripts {
	lib := clock + stateLua + breakerLua + bucketsLua + quotaLua
	s := func(body string) *redis.Script { return redis.NewScript(lib + body) }
	// A key's scripts need the buckets alone.
	k := func(body string) *redis.Script {
		return redis.NewScript(clock + stateLua + bucketsLua + spendLua + body)
	}
	return &scripts{admit: s(admitBody), record: s(recordBody), probeStart: s(probeStartBody),
		probeDone: s(probeDoneBody), view: s(viewBody), enable: s(enableBody), disable: s(disableBody),
		keyAdmit: k(keyAdmitBody), keyAdjust: k(keyAdjustBody), keySpend: redis.NewScript(spendLua + keySpendBody)}
}

// Reply codes of admit (the first element of every reply).
const (
	codeOK       = 0
	codeOpen     = 1
	codeLimited  = 2
	codeTooLarge = 3
	codeQuota    = 4
)

// admit decides one attempt: ARGV tokens, rpm, tpm (configured ceilings,
// 0 none), quota check lease ms, ttl ms.
const admitBody = `
local tokens, cfg, lease, ttl = tonumber(ARGV[1]), {r = tonumber(ARGV[2]), t = tonumber(ARGV[3])}, tonumber(ARGV[4]), tonumber(ARGV[5])
local w = breaker_open()
if w ~= nil then return view(1, w, 0) end
local qw, check = quota_admit()
if qw ~= nil then return view(4, qw, 0) end
if buckets_too_large(tokens, cfg) then return view(3, 0, 0) end
local wait, lv, need = buckets_wait(tokens, cfg)
if wait > 0 then return view(2, wait, 0) end
buckets_take(lv, need)
if check == 1 then quota_lease(lease) end
flush(ttl)
return view(0, 0, check)
`

// record applies one attempt's lesson. ARGV:
//
//	1 observe-only (1/0)      2 gen                   3 health (-1: counts nothing)
//	4 base cooldown ms        5 multiplier            6 max cooldown ms
//	7 consecutive             8 ratio                 9 min requests
//	10 window ms              11 last kind (0 none)   12 tokens delta
//	13 rpm  14 tpm            15-17 requests limit, remaining, reset ms
//	18-20 tokens limit, remaining, reset ms           21 Retry-After block ms
//	22 quota (1/0)            23 quota reset ms       24 quota check (1/0)
//	25 quota recheck ms       26 ttl ms               27 instant-trip kind (1/0)
const recordBody = `
local A = {}
for i = 1, #ARGV do A[i] = tonumber(ARGV[i]) end
local cfg = {r = A[13], t = A[14]}
-- The usage correction comes before the answer's own announcement, as in
-- internal/ratelimit (Reconcile, then Observe): the provider's count
-- already holds this answer's usage and must not be charged it again.
buckets_adjust(cfg, A[12])
buckets_observe('r', cfg, A[15], A[16], A[17])
buckets_observe('t', cfg, A[18], A[19], A[20])
buckets_retry_after(A[21])
if A[1] == 1 then flush(A[26]); return view(0, 0, 0) end
if A[11] > 0 then set('lk', A[11]) end
quota_record(A[22], A[23], A[24], A[3], A[25])
breaker_record(A[2], A[3], A[27], A[4], A[5], A[6], A[7], A[8], A[9], A[10])
flush(A[26])
return view(0, 0, 0)
`

// probeDone applies the fleet's probe verdict and frees the lock (KEYS[2])
// if this process still holds it. ARGV: token, ok (1/0), kind, base
// cooldown ms, multiplier, max ms, ttl ms.
const probeDoneBody = `
breaker_probed(tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
flush(tonumber(ARGV[7]))
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return view(0, 0, 0)
`

// probeStart takes the probe lock (KEYS[2]) only if a probe is due: the
// breaker is open, its cooldown over, and nobody holds the lock. A replica
// whose view is a moment old must not probe again right after another's
// verdict. ARGV: token, lock ms. The reply's check element is 1 when this
// process won.
const probeStartBody = `
if not breaker_probe_due() then return view(0, 0, 0) end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return view(0, 0, 1) end
return view(0, 0, 0)
`

// viewScript reads the provider's state; it writes nothing.
const viewBody = `return view(0, 0, 0)`

// enableScript lifts the quota block and every disabled target (KEYS[2]),
// bumping the targets' generation so every replica rereads them.
const enableBody = `
quota_lift()
redis.call('DEL', KEYS[2])
set('tg.gen', num('tg.gen', 0) + 1)
flush(tonumber(ARGV[1]))
return view(0, 0, 0)
`

// disableScript adds a disabled target (KEYS[2]). ARGV: model, message,
// ttl ms.
const disableBody = `
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
set('tg.gen', num('tg.gen', 0) + 1)
flush(tonumber(ARGV[3]))
return view(0, 0, 0)
`

// A client key's fleet-wide RPM/TPM (docs/ARCHITECTURE.md, "Client keys
// and spend") are the configured ceilings of buckets.lua (the rule of
// internal/ratelimit's Limiter as a key uses it: no provider headers), in
// the key's own hash KEYS[1] (<prefix>{key:<name>}:rl:<rpm>:<tpm>), beside
// its spend, KEYS[2] when the key has a budget (the same {key:<name>}
// slot). Tested against the Go limiter by testdata/keybucket_steps.json.

// Reply codes of keyAdmit beside codeOK, codeLimited and codeTooLarge.
const codeBudget = 5

// keyAdmit is a key's one round trip at admission: it reads the key's
// spend (KEYS[2], when given) and charges one request and ARGV tokens to
// its buckets, all or nothing, unless they would have to wait (limited),
// could never hold them (too large), or the spend has reached the budget
// (ARGV limit, nano-dollars; 0 none): then nothing is charged. ARGV:
// tokens, rpm, tpm, limit, ttl ms. Reply: code, wait ms, spend (a string:
// nano-dollars exceed a double's integers), charged (1/0), and the
// requests and tokens left in the buckets (-1: no such limit).
const keyAdmitBody = `
local tokens, cfg, ttl = tonumber(ARGV[1]), {r = tonumber(ARGV[2]), t = tonumber(ARGV[3])}, tonumber(ARGV[5])
local spend = '0'
if #KEYS > 1 then spend = redis.call('GET', KEYS[2]) or '0' end
local function left(d)
  if cfg[d] <= 0 then return -1 end
  return math.floor(levelat(num(d .. '.clvl', cfg[d]), num(d .. '.cat', now), cfg[d], cfg[d] / WINDOW))
end
local function reply(code, wait, charged) return {code, math.ceil(wait), spend, charged, left('r'), left('t')} end
if cfg.r <= 0 and cfg.t <= 0 then return reply(0, 0, 0) end
if buckets_too_large(tokens, cfg) then return reply(3, 0, 0) end
local wait, lv, need = buckets_wait(tokens, cfg)
if wait > 0 then return reply(2, wait, 0) end
if spend_reached(spend, ARGV[4]) then return reply(5, 0, 0) end
buckets_take(lv, need)
flush(ttl)
return reply(0, 0, 1)
`

// keySpend adds ARGV amount (nano-dollars, at least 0) to a key's spend
// number KEYS[1], saturating (spend.lua). Reply: the number after it (a
// string: nano-dollars exceed a double's integers).
const keySpendBody = `return spend_add(KEYS[1], ARGV[1])`

// keyAdjust corrects a key's charge: ARGV requests and tokens more
// (negative: given back, as a cancel or an overestimate does), rpm, tpm,
// ttl ms. Queued, never on the request path.
const keyAdjustBody = `
local cfg = {r = tonumber(ARGV[3]), t = tonumber(ARGV[4])}
buckets_adjust_dim('r', cfg, tonumber(ARGV[1]))
buckets_adjust_dim('t', cfg, tonumber(ARGV[2]))
flush(tonumber(ARGV[5]))
return 0
`
