-- The state of a fixed window key (limits/fixedwindow.go): the window's
-- index modulo 9e8 (9 digits) and its count (10 digits) as one integer,
-- expiring at the end of the window; an absent key is an empty window.
-- Shared by the decisions (fixed.lua) and the leases (lease_fw.lua).

-- fw_count returns the key's count in the window tagged tag (0 if the key
-- is absent, unreadable, or of another window).
local function fw_count(key, tag)
  local v = redis.call('GET', key)
  if v then
    local d = digits(v, 19)
    if d and tonumber(string.sub(d, 1, 9)) == tag then return tonumber(string.sub(d, 10)) end
  end
  return 0
end

-- fw_store writes count for the window tagged tag, which ends left ns from
-- now, or deletes the key when the count is 0.
local function fw_store(key, tag, count, left)
  if count <= 0 then
    redis.call('DEL', key)
    return
  end
  redis.call('SET', key, compact(string.format('%09d%010d', tag, count)), 'PX', px(left))
end
