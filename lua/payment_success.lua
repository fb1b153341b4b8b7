-- payment_success.lua — the provider confirmed a payment (seed 002 "Payment
-- Success", fixed: the seat becomes sold for good, never freed; the booking
-- must be payment_pending with the same payment id; a duplicate changes
-- nothing; a payment for a hold already released is 'late', never a sale).
-- A payment that lands after the deadline but before the hold was released
-- still completes: the seat was never anyone else's.
-- KEYS: the event key set (lib.lua).
-- ARGV: 1 user_id, 2 payment_id, 3 now_ms
-- Replies: {'ok', 'completed' | 'duplicate', seat_id, sequence}
--   | {'late', seat_id, sequence}   refund: the hold was released first
--   | {'not_found'} | {'payment_mismatch'} | {'invalid_state', state} | {'event_not_found'}
local user, pid = ARGV[1], ARGV[2]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local state = redis.call('HGET', K_STATE, user)
if not state then return {'not_found'} end
if redis.call('HGET', K_UPAY, user) ~= pid then return {'payment_mismatch'} end
local seq = num(redis.call('HGET', K_USEQ, user))
local seat = redis.call('HGET', K_USEAT, user) or ''
if state == 'completed' then return {'ok', 'duplicate', seat, seq} end
if state == 'payment_pending' then
  redis.call('HSET', K_SEATS, seat, 's:' .. user)
  set_seat_status(seat, 's')
  redis.call('HINCRBY', K_CONFIG, 'held', -1)
  redis.call('HINCRBY', K_CONFIG, 'sold', 1)
  redis.call('ZREM', K_ACTIVE, user)
  redis.call('HDEL', K_UGRACE, user)
  redis.call('HSET', K_STATE, user, 'completed')
  return {'ok', 'completed', seat, seq}
end
if state == 'expired' or state == 'failed' or state == 'cancelled' then
  return {'late', seat, seq}
end
return {'invalid_state', state}
