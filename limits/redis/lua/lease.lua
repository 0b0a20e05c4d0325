-- Leases: blocks of a global quota that the nodes take, decide against
-- locally, and give back (see the package doc, "Leased mode"). The stock
-- (lease_gcra.lua, lease_fw.lua) is the quota's state key, the very one the
-- exact decisions use, so leased and exact decisions share one quota.
--
-- Beside it, a hash records the leases of the quota's key: per node, the
-- units it may hold (o: held plus granted at its last renewal), its demand
-- (d, units per second), its expiry (e, ms of Redis time), the stock's
-- window tag when its units were granted (w), its last renewal (t, ms) and
-- the units granted to it in that window (g); and their sums #O (the
-- outstanding units: the over-admission bound) and #D, the live leases #N,
-- and #next, the earliest expiry recorded (no lease expires before it).
-- When #next has passed, the renewal scans the hash, drops the expired
-- leases (their units are not given back: a dead node may have used them)
-- and counts the sums again. The hash lives 3 ttl from its last scan or
-- creation, so a quota every node has left costs nothing.
--
-- A renewal gives back what the node returns, then grants it
--   min(want - held, avail)
-- where avail is the stock; or, while the nodes together want more than
-- the quota's rate (#D above it), at most its fair part, stock_fair of its
-- fraction d / #D of the demand: the shares then follow the demand.
--
-- One call renews the leases of one node on several keys.
-- KEYS[2i-1] the state key of key i; KEYS[2i] its lease hash
-- ARGV[1]    the node's id
-- ARGV[2]    ttl: how long a renewal keeps the lease, in ms
-- ARGV[3]    the renewal period, in ms
-- ARGV[4..5] the quota's amounts (see the stock)
-- ARGV[5i+1..5i+5] for key i: held (units the node still holds), ret (units
--            it gives back, no longer held), d (its demand, units per
--            second), want (the units it asks to hold) and leave ("1": the
--            lease ends after the return)
-- Returns, per key, "grant held outstanding demand avail life" separated by
-- spaces: the units granted, the held units Redis counts (fewer than the
-- node sent when its lease had lapsed: it must drop the others), #O and #D
-- after the renewal, the stock left, and how long the node may use its
-- units in ns (-1: until its lease expires).
local id, ttl, period = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]) / 1000
local now_ms = sec * 1000 + math.floor(nsec / 1e6)

-- lease_parse reads a node's record "o d e w t g".
local function lease_parse(v)
  local o, d, e, w, t, g = string.match(v, '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
  if not o then return 0, 0, 0, -1, 0, 0 end
  return tonumber(o), tonumber(d), tonumber(e), tonumber(w), tonumber(t), tonumber(g)
end

local function int(x) return string.format('%d', x) end

local out = {}
for i = 1, #KEYS / 2 do
  local skey, hkey = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 5 * i
  local held, ret, dem, want = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local leave = ARGV[a + 5] == '1'
  local f = redis.call('HMGET', hkey, id, '#O', '#D', '#N', '#next')
  local mine = f[1]
  local O, D, N, nxt = tonumber(f[2]) or 0, tonumber(f[3]) or 0, tonumber(f[4]) or 0, tonumber(f[5])
  local renew_life = N == 0 -- a new hash, or (below) a scanned one
  if nxt and now_ms >= nxt then
    renew_life = true
    O, D, N, nxt, mine = 0, 0, 0, nil, nil
    local all = redis.call('HGETALL', hkey)
    for j = 1, #all, 2 do
      local name = all[j]
      if string.sub(name, 1, 1) ~= '#' then
        local o, d, e = lease_parse(all[j + 1])
        if e <= now_ms then
          redis.call('HDEL', hkey, name)
        else
          O, D, N = O + o, D + d, N + 1
          if not nxt or e < nxt then nxt = e end
          if name == id then mine = all[j + 1] end
        end
      end
    end
  end
  -- This node's record is replaced; its units count only if its lease is
  -- live and of the stock's current window.
  local valid, dt, granted = false, period, 0
  if mine then
    local o, d, e, w, t, g = lease_parse(mine)
    O, D, N = O - o, D - d, N - 1
    valid = e > now_ms and w == stock_tag
    if valid then
      held = math.max(0, math.min(held, o))
      ret = math.max(0, math.min(ret, o - held))
      dt, granted = math.min(math.max(0, now_ms - t), ttl) / 1000, g
    end
  end
  if not valid then held, ret = 0, 0 end
  local s = stock_open(skey)
  local grant = 0
  local record = {} -- this node's record, written with the sums
  if ret > 0 then s = stock_give(s, ret) end
  if leave then
    redis.call('HDEL', hkey, id)
  else
    D, N = D + dem, N + 1
    local avail = stock_avail(s)
    grant = math.min(want - held, avail)
    if D > stock_rate and D > 0 then
      grant = math.min(grant, math.ceil(stock_fair(dem / D, dt, period, avail, granted)))
    end
    grant = math.max(0, grant)
    if grant > 0 then s = stock_take(s, grant) end
    O = O + held + grant
    local e = now_ms + ttl
    if not nxt or e < nxt then nxt = e end
    record = {id, string.format('%d %d %d %d %d %d', held + grant, dem, e, stock_tag, now_ms, granted + grant)}
  end
  if N > 0 then
    redis.call('HSET', hkey, '#O', int(O), '#D', int(D), '#N', int(N), '#next', int(nxt or now_ms), unpack(record))
    if renew_life then redis.call('PEXPIRE', hkey, px(3 * ttl * 1e6)) end
  else
    redis.call('DEL', hkey)
  end
  if ret > 0 or grant > 0 then stock_save(skey, s) end
  local life = -1
  if stock_life then life = stock_life end
  out[i] = string.format('%d %d %d %d %d %d', grant, held, O, D, stock_avail(s), life)
end
return table.concat(out, ' ')
