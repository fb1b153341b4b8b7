-- payment_failure.lua — the provider declined a payment: the hold this
-- payment id was made for is released, only while it is payment_pending
-- with this id, and its seat becomes available again. Classified like payment_success.lua: by the event's payment
-- registry (K_PAYS) first, then the user's state.
-- KEYS: the event key set (lib.lua)
--   reads:  config, pays, seatidx, seats, state, upay, useat, useq, waiting
--   writes: active, config, pays, seats, state, status, ugrace
-- ARGV: 1 user_id, 2 payment_id, 3 now_ms
-- Replies: {'ok', 'failed' | 'duplicate' | 'no_hold', seat_id, sequence, at_ms}
--   'failed':    the hold was released
--   'duplicate': the id had failed before: nothing changes
--   'no_hold':   the id's hold had already ended (expired, cancelled, the
--                user joined again, or its success was classified as a
--                refund): nothing to release
--   at_ms: when the failure was first recorded (payment_failed's time: a
--   repeat republishes the same fact); 0 for a record without a time
--   | {'not_found'} (unknown user) | {'payment_mismatch'} (id not this user's)
--   | {'already_completed'} | {'event_not_found'}
local user, pid, now = ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local p, refused = user_payment(user, pid)
if not p then return refused end
if p.status == 'completed' then return {'already_completed'} end
if p.status == 'failed' then return {'ok', 'duplicate', p.seat, p.seq, p.at} end
if p.status == 'refund' then return {'ok', 'no_hold', p.seat, p.seq, p.at} end
if redis.call('HGET', K_STATE, user) == 'payment_pending' and redis.call('HGET', K_UPAY, user) == pid then
  local seat = release_hold(user, 'failed')
  set_payment(pid, p, 'failed', now)
  return {'ok', 'failed', seat, p.seq, p.at}
end
set_payment(pid, p, 'failed', now)
return {'ok', 'no_hold', p.seat, p.seq, p.at}
