-- The quota block (internal/quota; docs/ARCHITECTURE.md, "Quota"), on
-- fields q.*: on, the provider's reset (0 unknown), the next check, the
-- check's lease. Tested against the Go block by testdata/quota_steps.json.

local function quota_lift() del('q.on'); del('q.until'); del('q.next'); del('q.chk') end

-- quota_admit returns wait (ms, nil when the attempt may go) and check (1:
-- this attempt is the fleet's check). Past the named reset the block
-- lifts; at the recheck time one attempt at a time checks.
local function quota_admit()
  if num('q.on', 0) ~= 1 then return nil, 0 end
  local qu = num('q.until', 0)
  if qu > 0 and now >= qu then
    quota_lift()
    return nil, 0
  end
  if num('q.chk', 0) <= now and now >= num('q.next', 0) then return nil, 1 end
  local w = num('q.next', 0) - now
  if qu > 0 then w = math.min(w, qu - now) end
  return w, 0
end

-- quota_lease holds the check for lease ms: nobody else checks meanwhile.
local function quota_lease(lease) set('q.chk', now + lease) end

-- quota_record: a quota answer (reset ms, 0 unknown) puts the block on;
-- the check's other answer lifts it if it counts (health >= 0), else gives
-- the turn back.
local function quota_record(quota, reset, check, health, recheck)
  if quota == 1 then
    set('q.on', 1); set('q.next', now + recheck); set('q.chk', 0)
    if reset > 0 then set('q.until', now + reset) else del('q.until') end
  elseif check == 1 then
    if health >= 0 then quota_lift() else set('q.chk', 0) end
  end
end
