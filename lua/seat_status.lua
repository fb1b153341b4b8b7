-- seat_status: (re)build the seat status string and an explicit map's seat index from seats.
-- ARGV: none
-- Replies: {'ok', status} | {'event_not_found'}
-- KEYS: config, seats, seatmap, status, seatidx (ops.go)
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local total = num(redis.call('HGET', K_CONFIG, 'total'))
local cur = redis.call('GET', K_STATUS)
local grid = num(redis.call('HGET', K_CONFIG, 'per_row')) > 0
if cur and #cur == total and not string.find(cur, '\0', 1, true)
    and (grid or redis.call('HLEN', K_SEATIDX) == total) then
  return {'ok', cur}
end
local ids = redis.call('LRANGE', K_SEATMAP, 0, -1)
local parts = {}
local CHUNK = 500
for i = 1, #ids, CHUNK do
  local last = math.min(i + CHUNK - 1, #ids)
  local got = redis.call('HMGET', K_SEATS, unpack(ids, i, last))
  local idx = {}
  for j = i, last do
    local p = string.sub(got[j - i + 1] or '', 1, 2)
    local code = 'a'
    if p == 'h:' then code = 'h' elseif p == 's:' then code = 's'
    elseif p == 'r:' then code = 'r' elseif p == 'k:' then code = 'k' end
    parts[#parts + 1] = code
    idx[#idx + 1] = ids[j]
    idx[#idx + 1] = j - 1
  end
  if not grid then redis.call('HSET', K_SEATIDX, unpack(idx)) end
end
local s = table.concat(parts)
redis.call('SET', K_STATUS, s)
return {'ok', s}
