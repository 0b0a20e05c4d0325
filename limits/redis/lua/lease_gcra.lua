-- The stock of a leased GCRA quota (lease.lua): the bucket's whole tokens.
-- A lease takes k tokens as a request of cost k would (the TAT moves
-- floor(k * interval) ns ahead); tokens given back move it as far back, to
-- the full bucket at most (tokens beyond the capacity are lost, never
-- stored). Granted tokens do not lapse with time: stock_life is nil.
-- ARGV[4]    rate in units per second
-- ARGV[5]    burst: the capacity in units
local rate, burst = tonumber(ARGV[4]), tonumber(ARGV[5])
local interval, per_ns = 1e9 / rate, rate / 1e9
local tau = math.floor(burst * interval)
local stock_tag, stock_life, stock_rate = 0, nil, rate
local function stock_open(key) return gcra_ahead(key) end
local function stock_avail(ahead) return gcra_room(ahead, tau, per_ns, burst) end
local function stock_take(ahead, k) return ahead + math.floor(k * interval) end
local function stock_give(ahead, k) return math.max(0, ahead - math.floor(k * interval)) end
local function stock_save(key, ahead) gcra_store(key, ahead) end
-- stock_fair is what a node with the fraction f of the demand may take
-- when the nodes want more than the rate: f of the refill since its last
-- renewal, dt seconds ago, and f of the stock beyond one period's refill
-- (the initial burst, or what idle nodes left; the rest stays for the
-- other nodes' renewals). Shares then follow the demand whatever the order
-- of the renewals.
local function stock_fair(f, dt, period, avail, granted)
  return f * (rate * dt + math.max(0, avail - rate * period))
end
