-- mend_outbox: rewrite outbox entries written with a sequence in exponent
-- form under their exact sequence, each only while entry, state and useq are as read.
-- ARGV: 7 per entry: field, value as read, user_id, state and useq as read,
--   the exact field, the exact value
-- Replies: {'ok', {1 (mended) | 0 (changed since read), ...}}
-- KEYS: outbox, state, useq (ops.go)
local done = {}
for i = 1, #ARGV - 6, 7 do
  local user = ARGV[i + 2]
  local ok = 0
  if redis.call('HGET', K_OUTBOX, ARGV[i]) == ARGV[i + 1] and redis.call('HGET', K_STATE, user) == ARGV[i + 3]
      and redis.call('HGET', K_USEQ, user) == ARGV[i + 4] then
    redis.call('HDEL', K_OUTBOX, ARGV[i])
    redis.call('HSETNX', K_OUTBOX, ARGV[i + 5], ARGV[i + 6])
    ok = 1
  end
  done[#done + 1] = ok
end
return {'ok', done}
