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
-- #next, the earliest expiry recorded (no lease expires before it), #E,
-- the hash's epoch (the Redis time in ms at which it was created), and per
-- node its fallback share (#s:<node>, thousandths of a unit per second)
-- with their sum #S. A Redis
-- that restarted empty (or lost the hash) has a new epoch, which tells the
-- nodes that held leases before to rejoin in step (see lease.go). When
-- #next has passed, the renewal scans the hash, drops the expired leases
-- (their units are not given back: a dead node may have used them) and
-- counts the sums again. The hash lives 3 ttl from its last scan or
-- creation, so a quota every node has left costs nothing.
--
-- A renewal gives back what the node returns, then grants it
--   min(want - held, avail)
-- where avail is the stock. While the nodes together want more than the
-- quota's rate (#D above it), the rate is shared max-min fair: the level L
-- is such that the demands, each cut at L, add up to the rate; a node whose
-- demand is under L is granted as above (it gets its demand), and the
-- others at most their fair part, stock_fair of the fraction L / rate, and
-- no more than leaves a period of the others' demand under L in the stock
-- (their renewals may come just after theirs).
--
-- Each renewal also answers the node's fallback share, the rate it may
-- decide on by itself while it cannot reach Redis: the max-min fair split,
-- by the same rule, of the part of the rate that falls to the nodes holding
-- leases (#N of the nodes, the larger of #N and ARGV[6]: a node without a
-- lease on the key falls back to the equal share), with what they leave
-- split evenly among them, and never more than the others' recorded shares
-- leave of that part: the shares recorded (#S) never add up to more than
-- it, whatever the demands each renewal saw.
--
-- A node that decided by its fallback share while Redis was away reports
-- the units it admitted so (debit): they are taken from the stock (as far
-- as it holds them) before anything is granted, since the stock refilled
-- meanwhile as if nobody had admitted them.
--
-- A renewal whose answer came after its budget was applied here but never
-- reached the node: its grant left the stock, while the node holds again
-- what it gave back and reports its debit again. So each renewal is
-- numbered (seq, increasing on a node), the hash keeps per node the last
-- one applied, by which of the node's limiters (inst: a reload makes a new
-- one beside the old), and what it did (#c:<node>: "inst seq grant ret
-- debit", the units as applied), and each renewal sends the number of the
-- last one its limiter received (acked; a new lease sends a number from
-- before its first renewal). When the last one applied, by the same
-- limiter, is later than that, it is undone first: its grant and debit
-- back to the stock, its return taken out again, the node's record without
-- its grant. A renewal whose number is not above the last one its limiter
-- had applied was overtaken by a later one (it was abandoned): it changes
-- nothing.
--
-- One call renews the leases of one node on several keys.
-- KEYS[2i-1] the state key of key i; KEYS[2i] its lease hash
-- ARGV[1]    the node's id
-- ARGV[2]    ttl: how long a renewal keeps the lease, in ms
-- ARGV[3]    the renewal period, in ms
-- ARGV[4..5] the quota's amounts (see the stock)
-- ARGV[6]    the node count the equal fallback share divides by
-- ARGV[7]    inst: the number of the node's limiter (above)
-- ARGV[10i-2..10i+7] for key i: held (units the node still holds), ret
--            (units it gives back, no longer held), d (its demand, units per
--            second), want (the units it asks to hold), leave ("1": the
--            lease ends after the return), the epoch of the node's last
--            renewal (0: none), debit, the fallback share it decided by
--            (thousandths of a unit per second), seq and acked (above). A
--            node of an earlier epoch that finds no hash (Redis restarted
--            empty) empties the stock before it is granted anything: the
--            units the nodes admitted by their fallback shares meanwhile are
--            not in it, and Redis's fresh burst would add to them. A node of
--            an earlier epoch that finds a later one debits only what its
--            share admitted since that epoch began: what it admitted before
--            was never in this stock (the first node back emptied it), and
--            taking it too ate the refill the nodes back already were owed
--            (a dip of two periods in the lab, after a restart).
-- Returns, per key, "grant held outstanding demand avail life nodes epoch
-- share under" separated by spaces: the units granted, the held units
-- Redis counts (fewer than the node sent when its lease had lapsed: it must
-- drop the others), #O and #D after the renewal, the stock left, how long
-- the node may use its units in ns (-1: until its lease expires), #N, #E,
-- the node's fallback share in thousandths of a unit per second, and 1 if
-- its demand is under the fair level (it is granted its demand), else 0.
local id, ttl, period = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]) / 1000
local nodes, inst = tonumber(ARGV[6]), tonumber(ARGV[7])
local now_ms = sec * 1000 + math.floor(nsec / 1e6)

-- lease_parse reads a node's record "o d e w t g".
local function lease_parse(v)
  local o, d, e, w, t, g = string.match(v, '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
  if not o then return 0, 0, 0, -1, 0, 0 end
  return tonumber(o), tonumber(d), tonumber(e), tonumber(w), tonumber(t), tonumber(g)
end

local function int(x) return string.format('%d', x) end

-- level is the max-min fair level of the demands ds for a capacity c: the
-- demands cut at it add up to c (math.huge when they are all under it).
local function level(ds, c)
  table.sort(ds)
  for k = 1, #ds do
    local cut = c / (#ds - k + 1)
    if ds[k] > cut then return cut end
    c = c - ds[k]
  end
  return math.huge
end

-- demands returns the demands recorded in the hash, this node's being dem.
-- Another node's counts as at least its recorded fallback share: a node
-- whose demand dipped keeps its part until its own renewal gives it up, so
-- the recorded shares, capped by each other (see below), settle at the
-- fair split instead of chasing the demands' noise.
local function demands(hkey, dem)
  local ds, all, recorded, shares = {dem}, redis.call('HGETALL', hkey), {}, {}
  for j = 1, #all, 2 do
    local name = all[j]
    if string.sub(name, 1, 3) == '#s:' then
      shares[string.sub(name, 4)] = (tonumber(all[j + 1]) or 0) / 1000
    elseif string.sub(name, 1, 1) ~= '#' and name ~= id then
      local _, d = lease_parse(all[j + 1])
      recorded[name] = d
    end
  end
  for name, d in pairs(recorded) do
    ds[#ds + 1] = math.max(d, shares[name] or 0)
  end
  return ds
end

-- call_parse reads a node's last renewal applied, "inst seq grant ret
-- debit": nil unless it was inst's.
local function call_parse(v)
  if not v then return nil end
  local n, q, g, r, b = string.match(v, '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
  if not n or tonumber(n) ~= inst then return nil end
  return tonumber(q), tonumber(g), tonumber(r), tonumber(b)
end

-- renew renews the lease of key i and returns its answer.
local function renew(i)
  local skey, hkey = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 10 * i - 3
  local held, ret, dem, want = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local leave, before, debit = ARGV[a + 5] == '1', tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
  local fbshare = tonumber(ARGV[a + 8]) / 1000
  local seq, acked = tonumber(ARGV[a + 9]), tonumber(ARGV[a + 10])
  local sharekey, callkey = '#s:' .. id, '#c:' .. id
  local f = redis.call('HMGET', hkey, id, '#O', '#D', '#N', '#next', '#E', '#S', sharekey, callkey)
  local mine, last = f[1], f[9]
  local O, D, N, nxt = tonumber(f[2]) or 0, tonumber(f[3]) or 0, tonumber(f[4]) or 0, tonumber(f[5])
  local S, myshare = tonumber(f[7]) or 0, tonumber(f[8]) or 0
  local lseq, lgrant, lret, ldebit = call_parse(last)
  if lseq and seq <= lseq then
    return '0 0 0 0 0 -1 0 0 0 0' -- overtaken: abandoned by its node
  end
  local epoch, reseed = tonumber(f[6]), false
  if not epoch then epoch, reseed = now_ms, before ~= 0 end
  if before ~= 0 and before ~= epoch then
    debit = math.min(debit, math.ceil(fbshare * math.max(0, now_ms - epoch) / 1000))
  end
  local renew_life = N == 0 -- a new hash, or (below) a scanned one
  if nxt and now_ms >= nxt then
    renew_life = true
    O, D, N, S, nxt, mine = 0, 0, 0, 0, nil, nil
    local all, shares, calls, live = redis.call('HGETALL', hkey), {}, {}, {}
    for j = 1, #all, 2 do
      local name = all[j]
      local tag = string.sub(name, 1, 3)
      if tag == '#s:' then
        shares[string.sub(name, 4)] = tonumber(all[j + 1]) or 0
      elseif tag == '#c:' then
        calls[#calls + 1] = string.sub(name, 4)
      elseif string.sub(name, 1, 1) ~= '#' then
        local o, d, e = lease_parse(all[j + 1])
        if e <= now_ms then
          redis.call('HDEL', hkey, name)
        else
          O, D, N = O + o, D + d, N + 1
          live[name] = true
          if not nxt or e < nxt then nxt = e end
          if name == id then mine = all[j + 1] end
        end
      end
    end
    for name, sh in pairs(shares) do
      if live[name] then S = S + sh else redis.call('HDEL', hkey, '#s:' .. name) end
    end
    for _, name in ipairs(calls) do
      if not live[name] then redis.call('HDEL', hkey, '#c:' .. name) end
    end
    if not live[id] then myshare, lseq = 0, nil end
  end
  -- This node's record is replaced; its units count only if its lease is
  -- live and of the stock's current window. The last renewal applied, if
  -- the node never received it, is undone on a live record.
  local valid, dt, granted = false, period, 0
  local undo = lseq ~= nil and lseq > acked
  if mine then
    local o, d, e, w, t, g = lease_parse(mine)
    O, D, N = O - o, D - d, N - 1
    valid = e > now_ms and w == stock_tag
    if valid then
      if undo then o, g = math.max(0, o - lgrant + lret), math.max(0, g - lgrant) end
      held = math.max(0, math.min(held, o))
      ret = math.max(0, math.min(ret, o - held))
      dt, granted = math.min(math.max(0, now_ms - t), ttl) / 1000, g
    end
  end
  if not valid then held, ret, undo = 0, 0, false end
  local s = stock_open(skey)
  if reseed then s = stock_take(s, stock_avail(s)) end
  if undo then
    local back = lgrant + ldebit - lret
    if back > 0 then s = stock_give(s, back) elseif back < 0 then s = stock_take(s, -back) end
  end
  local grant, share, under = 0, 0, 1
  local record = {} -- this node's record, written with the sums
  if ret > 0 then s = stock_give(s, ret) end
  if debit > 0 then
    debit = math.min(debit, stock_avail(s))
    if debit > 0 then s = stock_take(s, debit) end
  end
  S = S - myshare
  if leave then
    redis.call('HDEL', hkey, id, sharekey, callkey)
  else
    D, N = D + dem, N + 1
    local avail = stock_avail(s)
    grant = math.min(want - held, avail)
    local ds -- the demands, read once if needed
    if D > stock_rate then
      ds = demands(hkey, dem)
      local L = level(ds, stock_rate)
      if dem >= L then
        -- A node at the level leaves in the stock a period of the demand
        -- of those under it, whose renewals may come next.
        local reserve = 0
        for k = 1, #ds do
          if ds[k] < L then reserve = reserve + ds[k] * period end
        end
        grant = math.min(grant, math.ceil(stock_fair(L / stock_rate, dt, period, avail, granted)), math.floor(avail - reserve))
        under = 0
      end
    end
    grant = math.max(0, grant)
    -- The fallback share: of the rate, the part of the N nodes with a
    -- lease, max-min fair, what they leave split evenly.
    local c = stock_rate * N / math.max(N, nodes)
    if D <= c then
      share = dem + (c - D) / N
    else
      share = math.min(dem, level(ds or demands(hkey, dem), c))
    end
    share = math.max(0, math.min(math.floor(share * 1000), math.floor(c * 1000) - S))
    S = S + share
    if grant > 0 then s = stock_take(s, grant) end
    O = O + held + grant
    local e = now_ms + ttl
    if not nxt or e < nxt then nxt = e end
    record = {id, string.format('%d %d %d %d %d %d', held + grant, dem, e, stock_tag, now_ms, granted + grant), sharekey, int(share),
      callkey, string.format('%d %d %d %d %d', inst, seq, grant, ret, debit)}
  end
  if N > 0 then
    redis.call('HSET', hkey, '#O', int(O), '#D', int(D), '#N', int(N), '#next', int(nxt or now_ms), '#E', int(epoch), '#S', int(S), unpack(record))
    if renew_life then redis.call('PEXPIRE', hkey, px(3 * ttl * 1e6)) end
  else
    redis.call('DEL', hkey)
  end
  if ret > 0 or grant > 0 or reseed or debit > 0 or undo then stock_save(skey, s) end
  local life = -1
  if stock_life then life = stock_life end
  return string.format('%d %d %d %d %d %d %d %d %d %d', grant, held, O, D, stock_avail(s), life, N, epoch, share, under)
end

local out = {}
for i = 1, #KEYS / 2 do out[i] = renew(i) end
return table.concat(out, ' ')
