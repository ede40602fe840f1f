-- The provider's hash, KEYS[1], read whole into H; set() and del() change
-- H and queue the write; flush() writes and sets the expiry; view() is the
-- reply every script ends with (see scripts.go). `now` (ms) is defined
-- before this chunk: Redis's TIME in production, an argument in the step
-- tables' tests (docs/ARCHITECTURE.md, "Fleet").
local P = KEYS[1]
local H = {}
local flat = redis.call('HGETALL', P)
for i = 1, #flat, 2 do H[flat[i]] = tonumber(flat[i + 1]) or 0 end
local out = {}
local function num(f, d) local v = H[f]; if v == nil then return d end; return v end
local function set(f, v) H[f] = v; out[#out + 1] = f; out[#out + 1] = tostring(v) end
local function del(f) if H[f] ~= nil then H[f] = nil; redis.call('HDEL', P, f) end end
local WINDOW = 60000
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
