-- The stock of a leased fixed window quota (lease.lua): the units left in
-- the current window. Tokens are granted from the current window and lapse
-- at its end (stock_life ns from now); a lease of an earlier window holds
-- nothing (its window tag differs).
-- ARGV[4]    t: the window in ns
-- ARGV[5]    limit: units per window
local t, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
local r, idx = position(t)
local stock_tag, stock_life, stock_rate = math.fmod(idx, 9e8), t - r, limit * 1e9 / t
local function stock_open(key) return fw_count(key, stock_tag) end
local function stock_avail(count) return math.max(0, limit - count) end
local function stock_take(count, k) return count + k end
local function stock_give(count, k) return math.max(0, count - k) end
local function stock_save(key, count) fw_store(key, stock_tag, count, stock_life) end
-- stock_fair is what a node with the fraction f of the demand may take
-- when the nodes want more than the limit: f of the window's limit, less
-- what it was granted in this window already.
local function stock_fair(f, dt, period, avail, granted)
  return f * limit - granted
end
