-- counts: an event's live numbers and configuration. Read-only.
-- ARGV: 1 now_ms
-- Replies: {'ok', {config field, value, ...}, waiting, active, admitted_last_minute}
--   | {'event_not_found'}
-- KEYS: config, waiting, active, rate (ops.go)
local now = tonumber(ARGV[1])
local cfg = redis.call('HGETALL', K_CONFIG)
if #cfg == 0 then return {'event_not_found'} end
return {'ok', cfg, redis.call('ZCARD', K_WAITING), redis.call('ZCARD', K_ACTIVE),
  admitted_last_minute(now)}
