-- The breaker's rules (internal/breaker; docs/ARCHITECTURE.md, "Breaker"),
-- on fields b.* (state 0 closed / 2 open, half-open once b.ou passed) and
-- the closed window w.*. Tested against the Go breaker by
-- testdata/breaker_steps.json.

-- breaker_cooldown is the trips-th consecutive trip's cooldown from base.
local function breaker_cooldown(base, mult, maxms, trips)
  return math.min(maxms, base * math.pow(mult, trips - 1))
end

-- breaker_open reports the wait (ms) of an open or half-open breaker, nil
-- when closed.
local function breaker_open()
  if num('b.st', 0) == 2 then return num('b.ou', 0) - now end
  return nil
end

local function breaker_clear_window()
  for f, _ in pairs(H) do if string.sub(f, 1, 2) == 'w.' then del(f) end end
end

-- breaker_record counts one outcome (health: 0 success, > 0 a failure's
-- kind, < 0 nothing) of an attempt admitted in generation gen; an outcome
-- from before the latest trip or close, or of an open breaker, changes
-- nothing. instant: the kind trips at once (auth, quota).
local function breaker_record(gen, health, instant, base, mult, maxms, consec, ratio, minreq, window)
  if health < 0 or gen ~= num('b.gen', 0) or num('b.st', 0) ~= 0 then return end
  local width = math.max(1, math.floor(window / 10))
  local slot = math.floor(now / width)
  for f, _ in pairs(H) do
    local n = tonumber(string.match(f, '^w%.[sf](%d+)$'))
    if n ~= nil and n <= slot - 10 then del(f) end
  end
  local trip = false
  if health == 0 then
    set('w.s' .. slot, num('w.s' .. slot, 0) + 1); set('w.cf', 0)
  elseif instant == 1 then
    trip = true
  else
    set('w.f' .. slot, num('w.f' .. slot, 0) + 1)
    local cf = num('w.cf', 0)
    if now - num('w.ca', 0) > window then cf = 0 end
    cf = cf + 1
    set('w.cf', cf); set('w.ca', now)
    if consec > 0 and cf >= consec then trip = true end
    if not trip and ratio > 0 then
      local s, f = 0, 0
      for k, v in pairs(H) do
        local kind, n = string.match(k, '^w%.([sf])(%d+)$')
        if n ~= nil and tonumber(n) > slot - 10 then
          if kind == 's' then s = s + v else f = f + v end
        end
      end
      if s + f >= math.max(minreq, 1) and f / (s + f) >= ratio then trip = true end
    end
  end
  if trip then
    local tr = num('b.tr', 0) + 1
    set('b.tr', tr); set('b.tk', health); set('b.st', 2); set('b.gen', num('b.gen', 0) + 1)
    set('b.ou', now + breaker_cooldown(base, mult, maxms, tr))
    breaker_clear_window()
  end
end

-- breaker_probed applies a probe's verdict: ok closes; a failure of kind
-- reopens a breaker that is still open, with the grown cooldown.
local function breaker_probed(ok, kind, base, mult, maxms)
  if ok == 1 then
    set('b.st', 0); set('b.tr', 0); set('b.ou', 0); set('b.tk', 0); set('b.gen', num('b.gen', 0) + 1)
    breaker_clear_window()
  elseif num('b.st', 0) == 2 then
    local tr = num('b.tr', 0) + 1
    set('lk', kind); set('b.tr', tr); set('b.tk', kind); set('b.gen', num('b.gen', 0) + 1)
    set('b.ou', now + breaker_cooldown(base, mult, maxms, tr))
  end
end

-- breaker_probe_due: open and its cooldown over.
local function breaker_probe_due()
  return num('b.st', 0) == 2 and num('b.ou', 0) <= now
end
