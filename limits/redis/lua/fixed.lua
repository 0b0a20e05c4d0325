-- The fixed window of limits.FixedWindow: windows of t ns aligned to the
-- Unix epoch; a request is admitted if the window's count plus n stays
-- within the limit.
--
-- One call decides on a batch of requests, in order, at one instant.
-- KEYS[i]    the key of request i, holding the window's count (see
--            fw_state.lua). A key may appear more than once.
-- ARGV[1]    t: the window in ns, from 1 ms to 2^52 ns
-- ARGV[2]    limit: units per window, below 1e10
-- ARGV[2+i]  n: the cost of request i in units; 0 only reports the state
-- Returns the replies of the requests, separated by spaces.
local t, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local r, idx = position(t)
local tag = math.fmod(idx, 9e8)
local count_of = {} -- key -> the window's count, after its last request
local out = {}
for i = 1, #KEYS do
  local key, n = KEYS[i], tonumber(ARGV[2 + i])
  local count = count_of[key]
  if not count then count = fw_count(key, tag) end
  local ok, retry = false, 0
  if n == 0 then
    ok = true
  elseif n > limit then
    retry = -1
  elseif count + n <= limit then
    ok, count = true, count + n
    change(key)
  else
    retry = t - r
  end
  count_of[key] = count
  local reset = 0
  if count > 0 then reset = t - r end
  out[i] = reply(ok, math.max(0, limit - count), retry, reset)
end
for j = 1, #changed do
  fw_store(changed[j], tag, count_of[changed[j]], t - r)
end
return table.concat(out, ' ')
