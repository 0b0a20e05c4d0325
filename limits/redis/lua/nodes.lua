-- The node registry: a sorted set of node ids, each scored by the Redis
-- time in ms until which its last beat keeps it alive (the beat's time
-- plus that node's own ttl, so that nodes with different heartbeats keep
-- each other: a node scored by its beat's time and dropped after the
-- beating node's ttl was dropped by any node with a shorter heartbeat). A
-- node beats, the lapsed entries are dropped, and the live ones are
-- counted; the set expires with its last live entry.
-- (Preceded by a clock: sec, nsec and ttl_scale, see clock.lua.)
--
-- KEYS[1]  the registry
-- ARGV[1]  this node's id
-- ARGV[2]  ttl: how long a beat keeps this node alive, in ms
-- ARGV[3]  "1" when the node leaves (its entry is removed)
local ms = sec * 1000 + math.floor(nsec / 1e6)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', ms))
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ms + ttl, ARGV[1])
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then
  redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(last[2]) - ms) * ttl_scale)
end
return redis.call('ZCARD', KEYS[1])
