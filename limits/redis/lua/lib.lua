-- Helpers shared by the limiter scripts; they follow the clock, whose
-- sec, nsec and ttl_scale they read.

-- px is the lifetime in whole milliseconds of a key whose state is fresh
-- again after ns nanoseconds: rounded up, so a key never expires early.
local function px(ns)
  return math.ceil(ns * ttl_scale / 1e6)
end

-- digits returns v left-padded with zeros to width, or nil if v is not a
-- string of at most width decimal digits (a foreign or damaged value, which
-- the scripts treat as a fresh state and overwrite).
local function digits(v, width)
  if #v > width or not string.find(v, '^%d+$') then return nil end
  return string.rep('0', width - #v) .. v
end

-- compact drops leading zeros, so Redis stores the value as an integer
-- (8 bytes inside the key's object) rather than as a string.
local function compact(s)
  return (string.gsub(s, '^0+', ''))
end

-- position returns now modulo the window t and the window's index
-- floor(now / t), both exact for 1 ms <= t <= 2^52 ns: sec * 1e9 is an
-- exact double (1e9 = 1953125 * 2^9), fmod is exact, and the quotient of
-- the whole seconds is off by less than 1/2 before rounding.
local function position(t)
  local a = sec * 1e9
  local ra = math.fmod(a, t)
  local qa = math.floor(a / t - ra / t + 0.5)
  local x = ra + nsec
  local r = math.fmod(x, t)
  return r, qa + (x - r) / t
end

-- reply is the decision as "allowed remaining retry_after reset_after"
-- (durations in ns; retry_after -1 means never).
local function reply(ok, remaining, retry, reset)
  return string.format('%d %d %d %d', ok and 1 or 0, remaining, retry, reset)
end

-- A batch reads each of its keys once, at the key's first request, and
-- writes each key a request changed once, after the batch, with the key's
-- last state: a batch of many requests for one key (a quota without a
-- per-key split, the hottest case) costs Redis one GET and one SET. The
-- scripts keep each key's state in their own tables meanwhile; changed
-- lists the keys to write, in the order of their first change.
local changed = {}
local function change(key)
  if not changed[key] then
    changed[key] = true
    changed[#changed + 1] = key
  end
end
