-- wrk script for a paced load: before each request a connection waits a random
-- 0…2×WRK_DELAY_MS milliseconds (mean WRK_DELAY_MS), so that N connections offer
-- about N/(WRK_DELAY_MS+latency) requests/s. The randomness keeps connections
-- from firing in step, which would measure bursts instead of requests.
local threads = 0

function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

function init(args)
  math.randomseed(os.time() * 1000 + (id or 0) * 7919)
end

local d = tonumber(os.getenv("WRK_DELAY_MS") or "0")

function delay()
  return math.random(0, 2 * d)
end
