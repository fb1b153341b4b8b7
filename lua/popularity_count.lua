-- popularity_count: count one completed booking in the ranking, once per Kafka message.
-- ARGV: 1 event_id, 2 seen marker TTL seconds (> 0), 3 seats (absent: 1)
-- Replies: 1 counted | 0 duplicate (nothing changed)
-- KEYS: 1 ranking, 2 seen (ops.go)
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then
  redis.call('ZINCRBY', KEYS[1], tonumber(ARGV[3]) or 1, ARGV[1])
  return 1
end
return 0
