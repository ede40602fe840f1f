package fleet

import "github.com/redis/go-redis/v9"

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
// The budgets follow internal/ratelimit's rules (docs/ARCHITECTURE.md,
// "Rate buckets"), spent by the whole fleet.

const prelude = `
local P = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local H = {}
local flat = redis.call('HGETALL', P)
for i = 1, #flat, 2 do H[flat[i]] = tonumber(flat[i + 1]) or 0 end
local out = {}
local function num(f, d) local v = H[f]; if v == nil then return d end; return v end
local function set(f, v) H[f] = v; out[#out + 1] = f; out[#out + 1] = tostring(v) end
local function del(f) if H[f] ~= nil then H[f] = nil; redis.call('HDEL', P, f) end end
local WINDOW = 60000
local function provcap(d, cfg)
  local a = num(d .. '.cap', 0)
  if a > 0 then return a end
  return cfg
end
local function cap(d, cfg)
  local a = num(d .. '.cap', 0)
  if cfg > 0 and a > 0 then return math.min(cfg, a) end
  if cfg > 0 then return cfg end
  return a
end
local function provrate(d, c)
  local r = num(d .. '.rate', 0)
  if r > 0 then return r end
  return c / WINDOW
end
local function levelat(level, at, c, rate)
  local dt = now - at
  if dt > 0 then level = level + dt * rate end
  return math.min(level, c)
end
local function flush(ttl)
  if #out > 0 then redis.call('HSET', P, unpack(out)) end
  local far = 0
  for _, f in ipairs({'b.ou', 'ra', 'q.until', 'q.next', 'r.blk', 't.blk'}) do
    far = math.max(far, num(f, 0) - now)
  end
  redis.call('PEXPIRE', P, math.max(ttl, far + 60000))
end
local function view(code, wait, check)
  local st = num('b.st', 0)
  local left = 0
  if st == 2 then left = math.max(0, num('b.ou', 0) - now) end
  local qleft = 0
  if num('q.on', 0) == 1 then
    qleft = math.max(0, num('q.next', 0) - now)
    local qu = num('q.until', 0)
    if qu > 0 then qleft = math.min(qleft, math.max(0, qu - now)) end
  end
  return {code, math.max(0, math.ceil(wait)), num('b.gen', 0), st, left, num('b.tr', 0), num('b.tk', 0),
    num('q.on', 0), qleft, check, num('tg.gen', 0)}
end
`

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
var admitScript = redis.NewScript(prelude + `
local tokens, cfg, lease, ttl = tonumber(ARGV[1]), {r = tonumber(ARGV[2]), t = tonumber(ARGV[3])}, tonumber(ARGV[4]), tonumber(ARGV[5])
if num('b.st', 0) == 2 then return view(1, num('b.ou', 0) - now, 0) end
local check = 0
if num('q.on', 0) == 1 then
  local qu = num('q.until', 0)
  if qu > 0 and now >= qu then
    del('q.on'); del('q.until'); del('q.next'); del('q.chk')
  elseif num('q.chk', 0) <= now and now >= num('q.next', 0) then
    check = 1
  else
    local w = num('q.next', 0) - now
    if qu > 0 then w = math.min(w, qu - now) end
    return view(4, w, 0)
  end
end
local need = {r = 1, t = tokens}
local c = cap('t', cfg.t)
if c > 0 and tokens > c then return view(3, 0, 0) end
local wait = math.max(0, num('ra', 0) - now)
local lv = {}
for _, d in ipairs({'r', 't'}) do
  wait = math.max(wait, num(d .. '.blk', 0) - now)
  local cf = cfg[d]
  if cf > 0 then
    local rate = cf / WINDOW
    local l = levelat(num(d .. '.clvl', cf), num(d .. '.cat', now), cf, rate)
    lv[d .. '.c'] = l
    if l < need[d] then wait = math.max(wait, (need[d] - l) / rate) end
  end
  if H[d .. '.lvl'] ~= nil then
    local pc = provcap(d, cf)
    local rate = provrate(d, pc)
    local l = levelat(num(d .. '.lvl', 0), num(d .. '.at', now), pc, rate)
    lv[d .. '.p'] = l
    if l < need[d] then wait = math.max(wait, (need[d] - l) / rate) end
  end
end
if wait > 0 then return view(2, wait, 0) end
for _, d in ipairs({'r', 't'}) do
  if need[d] > 0 then
    if lv[d .. '.c'] ~= nil then set(d .. '.clvl', lv[d .. '.c'] - need[d]); set(d .. '.cat', now) end
    if lv[d .. '.p'] ~= nil then set(d .. '.lvl', lv[d .. '.p'] - need[d]); set(d .. '.at', now) end
  end
end
if check == 1 then set('q.chk', now + lease) end
flush(ttl)
return view(0, 0, check)
`)

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
var recordScript = redis.NewScript(prelude + `
local A = {}
for i = 1, #ARGV do A[i] = tonumber(ARGV[i]) end
local cfg = {r = A[13], t = A[14]}
local function stale(d, rem)
  if num(d .. '.lat', 0) == 0 or now >= num(d .. '.lrs', 0) then return false end
  local refill = 0
  local c = provcap(d, cfg[d])
  if c > 0 then refill = provrate(d, c) * (now - num(d .. '.lat', 0)) end
  return rem > num(d .. '.last', 0) + refill + 0.5
end
local function observe(d, limit, rem, reset)
  if limit > 0 then set(d .. '.cap', limit) end
  local c = provcap(d, cfg[d])
  if rem > 0 and stale(d, rem) then rem = -1; reset = 0 end
  if rem >= 0 then
    set(d .. '.last', rem); set(d .. '.lat', now)
    if reset > 0 then set(d .. '.lrs', now + reset) else set(d .. '.lrs', now + WINDOW) end
  end
  if c > 0 and rem >= 0 and rem < c and reset > 0 then set(d .. '.rate', (c - rem) / reset) end
  if c > 0 then
    if rem >= 0 then
      set(d .. '.lvl', math.min(rem, c)); set(d .. '.at', now)
    elseif limit > 0 then
      local rate = provrate(d, c)
      local l = c
      if H[d .. '.lvl'] ~= nil then l = levelat(num(d .. '.lvl', 0), num(d .. '.at', now), c, rate) end
      set(d .. '.lvl', l); set(d .. '.at', now)
    end
  end
  if rem == 0 then
    if reset > 0 then set(d .. '.blk', math.max(num(d .. '.blk', 0), now + reset))
    elseif c <= 0 then set(d .. '.blk', math.max(num(d .. '.blk', 0), now + WINDOW)) end
  end
end
observe('r', A[15], A[16], A[17])
observe('t', A[18], A[19], A[20])
if A[21] > 0 then set('ra', math.max(num('ra', 0), now + A[21])) end
if A[1] == 1 then flush(A[26]); return view(0, 0, 0) end
if A[12] ~= 0 then
  for _, b in ipairs({{'t.clvl', 't.cat', cfg.t}, {'t.lvl', 't.at', provcap('t', cfg.t)}}) do
    if H[b[1]] ~= nil and b[3] > 0 then
      local rate = b[3] / WINDOW
      if b[1] == 't.lvl' then rate = provrate('t', b[3]) end
      local l = levelat(num(b[1], 0), num(b[2], now), b[3], rate) - A[12]
      set(b[1], math.min(math.max(l, -b[3]), b[3])); set(b[2], now)
    end
  end
end
if A[11] > 0 then set('lk', A[11]) end
if A[22] == 1 then
  set('q.on', 1); set('q.next', now + A[25]); set('q.chk', 0)
  if A[23] > 0 then set('q.until', now + A[23]) else del('q.until') end
elseif A[24] == 1 then
  if A[3] >= 0 then del('q.on'); del('q.until'); del('q.next'); del('q.chk')
  else set('q.chk', 0) end
end
local health = A[3]
if health >= 0 and A[2] == num('b.gen', 0) and num('b.st', 0) == 0 then
  local width = math.max(1, math.floor(A[10] / 10))
  local slot = math.floor(now / width)
  for f, _ in pairs(H) do
    local n = tonumber(string.match(f, '^w%.[sf](%d+)$'))
    if n ~= nil and n <= slot - 10 then del(f) end
  end
  local trip = false
  if health == 0 then
    set('w.s' .. slot, num('w.s' .. slot, 0) + 1); set('w.cf', 0)
  elseif A[27] == 1 then
    trip = true
  else
    set('w.f' .. slot, num('w.f' .. slot, 0) + 1)
    local cf = num('w.cf', 0)
    if now - num('w.ca', 0) > A[10] then cf = 0 end
    cf = cf + 1
    set('w.cf', cf); set('w.ca', now)
    if A[7] > 0 and cf >= A[7] then trip = true end
    if not trip and A[8] > 0 then
      local s, f = 0, 0
      for k, v in pairs(H) do
        local kind, n = string.match(k, '^w%.([sf])(%d+)$')
        if n ~= nil and tonumber(n) > slot - 10 then
          if kind == 's' then s = s + v else f = f + v end
        end
      end
      if s + f >= math.max(A[9], 1) and f / (s + f) >= A[8] then trip = true end
    end
  end
  if trip then
    local tr = num('b.tr', 0) + 1
    set('b.tr', tr); set('b.tk', health); set('b.st', 2); set('b.gen', num('b.gen', 0) + 1)
    set('b.ou', now + math.min(A[6], A[4] * math.pow(A[5], tr - 1)))
    for f, _ in pairs(H) do if string.sub(f, 1, 2) == 'w.' then del(f) end end
  end
end
flush(A[26])
return view(0, 0, 0)
`)

// probeDone applies the fleet's probe verdict and frees the lock (KEYS[2])
// if this process still holds it. ARGV: token, ok (1/0), kind, base
// cooldown ms, multiplier, max ms, ttl ms.
var probeDoneScript = redis.NewScript(prelude + `
local ok, kind = tonumber(ARGV[2]), tonumber(ARGV[3])
if ok == 1 then
  set('b.st', 0); set('b.tr', 0); set('b.ou', 0); set('b.tk', 0); set('b.gen', num('b.gen', 0) + 1)
  for f, _ in pairs(H) do if string.sub(f, 1, 2) == 'w.' then del(f) end end
elseif num('b.st', 0) == 2 then
  local tr = num('b.tr', 0) + 1
  set('lk', kind); set('b.tr', tr); set('b.tk', kind); set('b.gen', num('b.gen', 0) + 1)
  set('b.ou', now + math.min(tonumber(ARGV[6]), tonumber(ARGV[4]) * math.pow(tonumber(ARGV[5]), tr - 1)))
end
flush(tonumber(ARGV[7]))
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return view(0, 0, 0)
`)

// probeStart takes the probe lock (KEYS[2]) only if a probe is due: the
// breaker is open, its cooldown over, and nobody holds the lock. A replica
// whose view is a moment old must not probe again right after another's
// verdict. ARGV: token, lock ms. The reply's check element is 1 when this
// process won.
var probeStartScript = redis.NewScript(prelude + `
if num('b.st', 0) ~= 2 or num('b.ou', 0) > now then return view(0, 0, 0) end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return view(0, 0, 1) end
return view(0, 0, 0)
`)

// viewScript reads the provider's state; it writes nothing.
var viewScript = redis.NewScript(prelude + `return view(0, 0, 0)`)

// enableScript lifts the quota block and every disabled target (KEYS[2]),
// bumping the targets' generation so every replica rereads them.
var enableScript = redis.NewScript(prelude + `
del('q.on'); del('q.until'); del('q.next'); del('q.chk')
redis.call('DEL', KEYS[2])
set('tg.gen', num('tg.gen', 0) + 1)
flush(tonumber(ARGV[1]))
return view(0, 0, 0)
`)

// disableScript adds a disabled target (KEYS[2]). ARGV: model, message,
// ttl ms.
var disableScript = redis.NewScript(prelude + `
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
set('tg.gen', num('tg.gen', 0) + 1)
flush(tonumber(ARGV[3]))
return view(0, 0, 0)
`)
