-- provider_state: the payment provider is degraded (hold clocks pause, admissions stop) or recovered (they resume). Idempotent.
-- ARGV: 1 'degraded' | 'recovered', 2 (optional) 'max_outage': the recovery ends an outage that lasted too long, not
--   the provider's (the event keeps hold_outage_ended_at, the time, for the page until the next change)
-- Replies: {'ok', changed (0|1), paused_since_ms (0: running), paused_ms (the pauses that ended, summed), holds, now_ms,
--   ended_since_ms (the start of the pause this call ended; 0: none)}
--   (holds: the users in the room, whose clocks the change stops or restarts)
--   | {'event_not_found'} | {'invalid_argument'}
-- KEYS: config, active (ops.go)
local want = ARGV[1]
if want ~= 'degraded' and want ~= 'recovered' then return {'invalid_argument'} end
local c = redis.call('HMGET', K_CONFIG, 'total', 'hold_pause_ms', 'hold_paused_at')
if not c[1] then return {'event_not_found'} end
local now, now_s = clock()
local total, since, changed, ended = num(c[2]), num(c[3]), 0, 0
if want == 'degraded' and since == 0 then
  -- the hold clock stops here (holds.lua hold_clock)
  since, changed = now, 1
  redis.call('HSET', K_CONFIG, 'hold_paused_at', now_s)
  redis.call('HDEL', K_CONFIG, 'hold_outage_ended_at')
elseif want == 'recovered' and since > 0 then
  -- every deadline moves by the pause's length at once: the hold clock
  -- takes it off, no hold is touched
  total, since, changed, ended = total + now - since, 0, 1, since
  redis.call('HSET', K_CONFIG, 'hold_pause_ms', int(total))
  redis.call('HDEL', K_CONFIG, 'hold_paused_at')
  if ARGV[2] == 'max_outage' then
    redis.call('HSET', K_CONFIG, 'hold_outage_ended_at', now_s)
  else
    redis.call('HDEL', K_CONFIG, 'hold_outage_ended_at')
  end
end
return {'ok', changed, since, total, redis.call('ZCARD', K_ACTIVE), now, ended}
