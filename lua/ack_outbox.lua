-- ack_outbox.lua — settle announced outbox entries, each only if unchanged
-- since it was read (an entry rewritten meanwhile is kept). An entry whose
-- two sides (RabbitMQ, Kafka) are both announced is removed; an entry with
-- one side announced is rewritten with that side's mark ('|r' or '|k'
-- appended, lib.lua), so a retry redoes only the other side.
-- KEYS: the event key set (lib.lua)
--   reads:  outbox
--   writes: outbox
-- ARGV: field, value as read, new value ('' = remove) triples
-- Replies: {'ok', settled}
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
