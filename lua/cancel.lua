-- cancel.lua — the user gives up (seed 002 "Cancel Booking", fixed: a held
-- seat is freed, refused while a payment is pending).
-- KEYS: the event key set (lib.lua).
-- ARGV: 1 user_id, 2 now_ms
-- Replies: {'ok', 'queue' | 'active', seat_id, sequence}
--   | {'cannot_cancel'} | {'not_found'} | {'invalid_state', state} | {'event_not_found'}
local user = ARGV[1]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local state = redis.call('HGET', K_STATE, user)
if not state then return {'not_found'} end
local seq = num(redis.call('HGET', K_USEQ, user))
if state == 'waiting' then
  redis.call('ZREM', K_WAITING, user)
  redis.call('ZREM', K_SEEN, user)
  redis.call('HSET', K_STATE, user, 'cancelled')
  return {'ok', 'queue', '', seq}
end
if state == 'active' or state == 'seat_selected' then
  return {'ok', 'active', release_hold(user, 'cancelled'), seq}
end
if state == 'payment_pending' then return {'cannot_cancel'} end
return {'invalid_state', state}
