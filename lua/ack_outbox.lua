-- ack_outbox: settle announced outbox entries, each only if unchanged since read.
-- ARGV: field, value as read, new value ('' = remove) triples
-- Replies: {'ok', settled}
-- KEYS: outbox (ops.go)
local settled = 0
for i = 1, #ARGV, 3 do
  if redis.call('HGET', K_OUTBOX, ARGV[i]) == ARGV[i + 1] then
    if ARGV[i + 2] == '' then
      redis.call('HDEL', K_OUTBOX, ARGV[i])
    else
      redis.call('HSET', K_OUTBOX, ARGV[i], ARGV[i + 2])
    end
    settled = settled + 1
  end
end
return {'ok', settled}
