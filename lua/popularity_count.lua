-- popularity_count: count one completed booking in the popularity ranking,
-- at most once per Kafka message, so a redelivered booking_completed never
-- counts twice.
--
-- KEYS[1]  ranking ZSET   <prefix>:{popular}:ranking   (member event_id, score bookings)
-- KEYS[2]  seen marker    <prefix>:{popular}:seen:<envelope id>
-- Both keys carry the {popular} hash tag: one slot, Redis Cluster safe.
--
-- ARGV[1]  event_id (the concert) to count
-- ARGV[2]  seen marker TTL in seconds (> 0): how long a redelivery is
--          recognised; it must outlast the longest redelivery window
-- ARGV[3]  seats of the booking (popularity counts seats sold; absent: 1)
--
-- Replies:
--   1  counted (first time this message was seen)
--   0  duplicate: already counted, nothing changed
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then
  redis.call('ZINCRBY', KEYS[1], tonumber(ARGV[3]) or 1, ARGV[1])
  return 1
end
return 0
