-- payment_failure.lua — the provider declined a payment (seed 002
-- "CleanupUserSession", fixed: only the booking with this payment id, only
-- while payment_pending; the seat becomes available again).
-- KEYS: the event key set (lib.lua).
-- ARGV: 1 user_id, 2 payment_id, 3 now_ms
-- Replies: {'ok', 'failed' | 'duplicate' | 'no_hold', seat_id, sequence}
--   'no_hold': the hold had already ended (expired): nothing to release
--   | {'not_found'} | {'payment_mismatch'} | {'already_completed'} | {'invalid_state', state}
--   | {'event_not_found'}
local user, pid = ARGV[1], ARGV[2]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local state = redis.call('HGET', K_STATE, user)
if not state then return {'not_found'} end
if redis.call('HGET', K_UPAY, user) ~= pid then return {'payment_mismatch'} end
local seq = num(redis.call('HGET', K_USEQ, user))
if state == 'payment_pending' then
  return {'ok', 'failed', release_hold(user, 'failed'), seq}
end
local seat = redis.call('HGET', K_USEAT, user) or ''
if state == 'failed' then return {'ok', 'duplicate', seat, seq} end
if state == 'completed' then return {'already_completed'} end
if state == 'expired' or state == 'cancelled' then return {'ok', 'no_hold', seat, seq} end
return {'invalid_state', state}
