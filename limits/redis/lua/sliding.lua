-- The weighted sliding window of limits.SlidingWindow (the sliding window
-- counter): the counts of the current and the previous epoch-aligned window
-- of t ns, and the estimate previous * (t - elapsed) / t + current of the
-- units in the last t, with the same float operations as
-- limits/slidingwindow.go so both decide alike.
--
-- One call decides on a batch of requests, in order, at one instant.
-- KEYS[i]    the key of request i; it holds the current window's index
--            modulo 9 (1 digit), the previous and the current count (9
--            digits each) as one integer, and expires when the estimate is
--            zero: an absent key is an empty window. (A key outlives its
--            window by at most one more, so the index modulo 9 cannot be
--            mistaken.) A key may appear more than once.
-- ARGV[1]    t: the window in ns, from 1 ms to 2^52 ns
-- ARGV[2]    limit: units per window, below 1e9
-- ARGV[2+i]  n: the cost of request i in units; 0 only reports the state
-- Returns the replies of the requests, separated by spaces.
local t, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local r, idx = position(t)
local tag = math.fmod(idx, 9)
local weight = (t - r) / t
local eps = 1e-9 -- float slack so exact boundaries admit
local prev_of, cur_of = {}, {} -- key -> the counts, after its last request
local out = {}
for i = 1, #KEYS do
  local key, n = KEYS[i], tonumber(ARGV[2 + i])
  local prev, cur = prev_of[key], cur_of[key]
  if not prev then
    prev, cur = 0, 0
    local v = redis.call('GET', key)
    if v then
      local d = digits(v, 19)
      if d then
        local was = tonumber(string.sub(d, 1, 1))
        if was == tag then
          prev, cur = tonumber(string.sub(d, 2, 10)), tonumber(string.sub(d, 11))
        elseif math.fmod(was + 1, 9) == tag then
          prev = tonumber(string.sub(d, 11))
        end
      end
    end
  end
  local estimate = prev * weight + cur
  local ok, retry = false, 0
  if n == 0 then
    ok = true
  elseif n > limit then
    retry = -1
  elseif estimate + n <= limit + eps then
    ok, cur, estimate = true, cur + n, estimate + n
    change(key)
  elseif cur + n <= limit then
    -- within this window, once prev * (t - e) / t <= limit - cur - n
    local e = t * (1 - (limit - cur - n) / prev)
    retry = math.max(0, math.ceil(e - eps) - r)
  else
    -- in the next window, once cur * (t - e) / t + n <= limit
    local e = t * (1 - (limit - n) / cur)
    retry = math.max(0, t - r + math.ceil(e - eps))
  end
  prev_of[key], cur_of[key] = prev, cur
  local reset = 0
  if cur > 0 then reset = 2 * t - r elseif prev > 0 then reset = t - r end
  out[i] = reply(ok, math.max(0, math.min(limit, math.floor(limit - estimate + eps))), retry, reset)
end
for j = 1, #changed do
  local key = changed[j]
  redis.call('SET', key, compact(string.format('%d%09d%09d', tag, prev_of[key], cur_of[key])), 'PX', px(2 * t - r))
end
return table.concat(out, ' ')
