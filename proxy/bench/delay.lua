-- wrk script: each connection waits WRK_DELAY_MS milliseconds before each
-- request, so that N connections offer about N/(delay+latency) requests/s.
local d = tonumber(os.getenv("WRK_DELAY_MS") or "0")
function delay()
  return d
end
