-- touch: waiting users are present; their abandonment clock restarts at now.
-- ARGV: user ids
-- Replies: {'ok', touched} | {'event_not_found'}
-- KEYS: config, waiting, seen (ops.go)
local abandon = redis.call('HGET', K_CONFIG, 'abandon_ms')
if not abandon then return {'event_not_found'} end
if num(abandon) <= 0 then return {'ok', 0} end
local _, now = clock()
local touched = 0
for i = 1, #ARGV, 1000 do
  local last = math.min(i + 999, #ARGV)
  local scores = redis.call('ZMSCORE', K_WAITING, unpack(ARGV, i, last))
  local z = {}
  for j = 1, #scores do
    if scores[j] then
      z[#z + 1] = now
      z[#z + 1] = ARGV[i + j - 1]
    end
  end
  if #z > 0 then
    redis.call('ZADD', K_SEEN, unpack(z))
    touched = touched + #z / 2
  end
end
return {'ok', touched}
