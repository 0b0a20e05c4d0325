-- The fixed window of limits.FixedWindow: windows of t ns aligned to the
-- Unix epoch; a request is admitted if the window's count plus n stays
-- within the limit.
--
-- KEYS[1]  the key; it holds the window's index modulo 9e8 (9 digits) and
--          its count (10 digits) as one integer, and expires at the end of
--          the window: an absent key is an empty window.
-- ARGV[1]  t: the window in ns, from 1 ms to 2^52 ns
-- ARGV[2]  limit: units per window, below 1e10
-- ARGV[3]  n: the cost of this request in units; 0 only reports the state
local t, limit, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local r, idx = position(t)
local tag = math.fmod(idx, 9e8)
local count = 0
local v = redis.call('GET', KEYS[1])
if v then
  local d = digits(v, 19)
  if d and tonumber(string.sub(d, 1, 9)) == tag then count = tonumber(string.sub(d, 10)) end
end
local ok, retry = false, 0
if n == 0 then
  ok = true
elseif n > limit then
  retry = -1
elseif count + n <= limit then
  ok, count = true, count + n
  redis.call('SET', KEYS[1], compact(string.format('%09d%010d', tag, count)), 'PX', px(t - r))
else
  retry = t - r
end
local reset = 0
if count > 0 then reset = t - r end
return reply(ok, math.max(0, limit - count), retry, reset)
