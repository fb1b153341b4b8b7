-- ack_outbox.lua — remove announced outbox entries, but only if unchanged
-- since they were read (a newer promotion of the same user is kept).
-- KEYS: the event key set (lib.lua).
-- ARGV: field, value pairs as read from the outbox hash
-- Replies: {'ok', removed}
local removed = 0
for i = 1, #ARGV, 2 do
  if redis.call('HGET', K_OUTBOX, ARGV[i]) == ARGV[i + 1] then
    redis.call('HDEL', K_OUTBOX, ARGV[i])
    removed = removed + 1
  end
end
return {'ok', removed}
