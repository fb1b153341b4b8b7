-- counts: an event's live numbers and configuration. Read-only.
-- ARGV: none
-- Replies: {'ok', {config field, value, ...}, waiting, active, admitted_last_minute, now_ms,
--   a later phase's pre-queued users (lib/draw.lua)}
--   | {'event_not_found'}
-- KEYS: config, waiting, active, rate, pq (ops.go)
local cfg = redis.call('HGETALL', K_CONFIG)
if #cfg == 0 then return {'event_not_found'} end
local now = clock()
return {'ok', cfg, redis.call('ZCARD', K_WAITING), redis.call('ZCARD', K_ACTIVE),
  admitted_last_minute(now), now, redis.call('ZCARD', K_PQ)}
