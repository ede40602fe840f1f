-- The rate buckets (internal/ratelimit; docs/ARCHITECTURE.md, "Rate
-- buckets"), per budget d (r requests, t tokens): <d>.cap announced limit,
-- <d>.rate learned refill per ms, <d>.lvl <d>.at the provider bucket,
-- <d>.blk the remaining-0 block, <d>.last <d>.lat <d>.lrs the last
-- announced remaining, when, and its reset (stale news), <d>.clvl <d>.cat
-- the configured ceiling's bucket; ra the Retry-After block. Tested
-- against the Go limiter by testdata/buckets_steps.json.

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

-- buckets_too_large: tokens exceed the whole token budget.
local function buckets_too_large(tokens, cfg)
  local c = cap('t', cfg.t)
  return c > 0 and tokens > c
end

-- buckets_wait returns how long (ms) until one request and tokens tokens
-- fit every bucket and block, and the levels to charge from.
local function buckets_wait(tokens, cfg)
  local need = {r = 1, t = tokens}
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
  return wait, lv, need
end

-- buckets_take charges need from the levels buckets_wait found: all of
-- it, or (when buckets_wait said wait) none.
local function buckets_take(lv, need)
  for _, d in ipairs({'r', 't'}) do
    if need[d] > 0 then
      if lv[d .. '.c'] ~= nil then set(d .. '.clvl', lv[d .. '.c'] - need[d]); set(d .. '.cat', now) end
      if lv[d .. '.p'] ~= nil then set(d .. '.lvl', lv[d .. '.p'] - need[d]); set(d .. '.at', now) end
    end
  end
end

-- buckets_stale: an announced remaining above the last one plus the
-- refill since, before the last reset, is older news; it is ignored.
local function buckets_stale(d, cfg, rem)
  if num(d .. '.lat', 0) == 0 or now >= num(d .. '.lrs', 0) then return false end
  local refill = 0
  local c = provcap(d, cfg[d])
  if c > 0 then refill = provrate(d, c) * (now - num(d .. '.lat', 0)) end
  return rem > num(d .. '.last', 0) + refill + 0.5
end

-- buckets_observe applies what the provider announced for budget d
-- (limit, remaining, reset ms; < 0 or 0 unknown).
local function buckets_observe(d, cfg, limit, rem, reset)
  if limit > 0 then set(d .. '.cap', limit) end
  local c = provcap(d, cfg[d])
  if rem > 0 and buckets_stale(d, cfg, rem) then rem = -1; reset = 0 end
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

-- buckets_retry_after blocks everything for ms, never shortening a block.
local function buckets_retry_after(ms)
  if ms > 0 then set('ra', math.max(num('ra', 0), now + ms)) end
end

-- buckets_adjust_dim charges delta more units of budget d (gives back
-- when negative): within [-capacity, capacity] of both its buckets, as
-- internal/ratelimit's adjust does.
local function buckets_adjust_dim(d, cfg, delta)
  if delta == 0 then return end
  local cf = cfg[d]
  for _, b in ipairs({{d .. '.clvl', d .. '.cat', cf}, {d .. '.lvl', d .. '.at', provcap(d, cf)}}) do
    if H[b[1]] ~= nil and b[3] > 0 then
      local rate = b[3] / WINDOW
      if b[1] == d .. '.lvl' then rate = provrate(d, b[3]) end
      local l = levelat(num(b[1], 0), num(b[2], now), b[3], rate) - delta
      set(b[1], math.min(math.max(l, -b[3]), b[3])); set(b[2], now)
    end
  end
end

-- buckets_adjust corrects the token charge by delta (usage minus
-- estimate).
local function buckets_adjust(cfg, delta)
  buckets_adjust_dim('t', cfg, delta)
end
