-- The state of a GCRA key (limits/gcra.go's bucket): the theoretical
-- arrival time (TAT, the instant the bucket is full again) as the digits of
-- Unix nanoseconds, expiring at the TAT; an absent key is a full bucket.
-- Shared by the decisions (gcra.lua) and the leases (lease_gcra.lua).

-- gcra_ahead returns how far the key's TAT is ahead of now in ns, at least
-- 0 (a full bucket, an absent or unreadable key).
local function gcra_ahead(key)
  local v = redis.call('GET', key)
  if v then
    local d = digits(v, 19)
    if d then
      local ahead = (tonumber(string.sub(d, 1, 10)) - sec) * 1e9 + (tonumber(string.sub(d, 11)) - nsec)
      return math.max(0, ahead)
    end
  end
  return 0
end

-- gcra_store writes the TAT ahead ns after now, or deletes the key when
-- ahead is 0 (the bucket is full).
local function gcra_store(key, ahead)
  if ahead <= 0 then
    redis.call('DEL', key)
    return
  end
  local x = nsec + ahead
  local ns = math.fmod(x, 1e9)
  redis.call('SET', key, string.format('%d%09d', sec + (x - ns) / 1e9, ns), 'PX', px(ahead))
end

-- gcra_room is the whole units a bucket of burst units and tolerance tau ns
-- (per_ns units per ns) can still admit with its TAT ahead ns after now.
local function gcra_room(ahead, tau, per_ns, burst)
  if tau - ahead <= 0 then return 0 end
  return math.min(burst, math.floor((tau - ahead) * per_ns + 1e-9))
end
