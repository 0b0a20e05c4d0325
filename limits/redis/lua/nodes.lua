-- The node registry: a sorted set of node ids scored by their last
-- heartbeat in Redis milliseconds. A node beats, stale entries are dropped,
-- and the live ones are counted; the set expires when every node is gone.
--
-- KEYS[1]  the registry
-- ARGV[1]  this node's id
-- ARGV[2]  ttl: how long a beat keeps a node alive, in ms
-- ARGV[3]  "1" when the node leaves (its entry is removed)
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ms - ttl)
if ARGV[3] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ms, ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ttl)
return redis.call('ZCARD', KEYS[1])
