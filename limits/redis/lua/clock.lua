-- The clock of every limiter script: the time of the Redis server (TIME),
-- so the clocks of the nodes never matter. sec and nsec are the Unix time's
-- whole seconds and its nanoseconds, kept apart because Lua numbers are
-- doubles, exact only up to 2^53 (about 104 days in nanoseconds).
-- ttl_scale stretches key lifetimes; it is 1 here (see the test clock).
--
-- A script that reads TIME and then writes must be replicated as its
-- effects: Redis 5 and later always do so, older servers are asked to.
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local sec, nsec, ttl_scale = tonumber(time[1]), tonumber(time[2]) * 1000, 1
