-- GCRA, the Generic Cell Rate Algorithm (ITU-T I.371, virtual scheduling):
-- the arithmetic of limits.TokenBucket and limits.LeakyBucket, in integer
-- nanoseconds, step for step as limits/gcra.go does it.
--
-- One call decides on a batch of requests, in order, at one instant.
-- KEYS[i]    the key of request i, holding the TAT (see gcra_state.lua).
--            A key may appear more than once.
-- ARGV[1]    rate in units per second (the shortest decimal form of a
--            float64)
-- ARGV[2]    burst: the capacity in units
-- ARGV[2+i]  n: the cost of request i in units; 0 only reports the state
-- Returns the replies of the requests, separated by spaces.
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local interval, per_ns = 1e9 / rate, rate / 1e9
local tau = math.floor(burst * interval) -- the tolerance: burst intervals
local ahead_of = {} -- key -> max(TAT, now) - now, after its last request
local out = {}
for i = 1, #KEYS do
  local key, n = KEYS[i], tonumber(ARGV[2 + i])
  local wait = ahead_of[key] -- max(TAT, now) - now
  if not wait then wait = gcra_ahead(key) end
  local cost = math.floor(n * interval)
  local ok = n == 0 or (n <= burst and wait + cost <= tau)
  local ahead = wait
  if ok and n > 0 then
    ahead = wait + cost
    change(key)
  end
  ahead_of[key] = ahead
  local retry = 0
  if not ok then
    if n > burst then retry = -1 else retry = math.max(0, wait + cost - tau) end
  end
  out[i] = reply(ok, gcra_room(ahead, tau, per_ns, burst), retry, ahead)
end
for j = 1, #changed do
  gcra_store(changed[j], ahead_of[changed[j]])
end
return table.concat(out, ' ')
