-- GCRA, the Generic Cell Rate Algorithm (ITU-T I.371, virtual scheduling):
-- the arithmetic of limits.TokenBucket and limits.LeakyBucket, in integer
-- nanoseconds, step for step as limits/gcra.go does it.
--
-- One call decides on a batch of requests, in order, at one instant.
-- KEYS[i]    the key of request i; it holds the theoretical arrival time
--            (TAT, the instant the bucket is full again) as the digits of
--            Unix nanoseconds, and expires at the TAT: an absent key is a
--            full bucket. A key may appear more than once.
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
  if not wait then
    wait = 0
    local v = redis.call('GET', key)
    if v then
      local d = digits(v, 19)
      if d then
        local ahead = (tonumber(string.sub(d, 1, 10)) - sec) * 1e9 + (tonumber(string.sub(d, 11)) - nsec)
        wait = math.max(0, ahead)
      end
    end
  end
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
  local remaining = 0
  if tau - ahead > 0 then remaining = math.min(burst, math.floor((tau - ahead) * per_ns + 1e-9)) end
  out[i] = reply(ok, remaining, retry, ahead)
end
for j = 1, #changed do
  local key = changed[j]
  local ahead = ahead_of[key]
  local x = nsec + ahead
  local ns = math.fmod(x, 1e9)
  redis.call('SET', key, string.format('%d%09d', sec + (x - ns) / 1e9, ns), 'PX', px(ahead))
end
return table.concat(out, ' ')
