-- A client key's spend (docs/ARCHITECTURE.md, "Client keys and spend"):
-- one integer of nano-dollars per key and period, the twin of
-- internal/budget's spend (tested against it by testdata/spend_steps.json).
-- Nano-dollars pass a double's exact integers (2^53), and Lua's numbers
-- are doubles: the number is compared as a decimal string and added by
-- INCRBY, saturating at 2^63-1 as internal/budget does (issue 31: a cost
-- of MaxInt64 made the next INCRBY fail, and with it the shared state).

local SPEND_MAX = '9223372036854775807'

-- spend_reached reports whether the spend s has reached the limit l, both
-- decimal integers as strings (GET's and ARGV's); a limit of 0 or less is
-- none.
local function spend_reached(s, l)
  if string.sub(l, 1, 1) == '-' or l == '0' then return false end
  if string.sub(s, 1, 1) == '-' then return false end
  if #s ~= #l then return #s > #l end
  return s >= l
end

-- spend_add adds amount (a decimal string, at least 0) to the number at
-- key and returns the number after it, as a string.
local function spend_add(key, amount)
  local r = redis.pcall('INCRBY', key, amount)
  if type(r) == 'table' and r.err then
    if not string.find(r.err, 'overflow', 1, true) then return redis.error_reply(r.err) end
    redis.call('SET', key, SPEND_MAX) -- its expiry is set after, in the same pipeline
  end
  return redis.call('GET', key)
end
