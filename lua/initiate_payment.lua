-- initiate_payment.lua — move a held seat to payment.
-- A repeated call returns the payment id already recorded, so a retried
-- request never creates a second payment. A new payment id is registered
-- in the event's payment registry (K_PAYS, status 'pending') for the
-- event's lifetime, so its webhook is classifiable however late it comes.
-- KEYS: the event key set (lib.lua)
--   reads:  active, config, pays, seatidx, seatmap, state, upay, useat, useq, waiting
--   writes: pays, state, upay
-- ARGV: 1 user_id, 2 payment_id (new, used only on the first call), 3 now_ms
-- Replies: {'ok', payment_id, seat_ids, deadline_ms, created (0|1), sequence, at_ms,
--          amount_cents, currency}
--   at_ms: when the payment was initiated (payment_initiated's time: a
--   repeat republishes the same fact); 0 for a payment without a record
--   seat_ids joined by ','; amount_cents is the sum of the seats' section
--   prices (0 for an event made before sections: the caller prices it)
--   | {'not_found'} | {'invalid_state', state} | {'hold_expired'} | {'event_not_found'}
--   | {'invalid_argument'} the payment id was issued before (ids are never reused)
local user, pid, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local state = user_state(user)
if not state then return {'not_found'} end
local seq = user_seq(user)
local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
if state == 'payment_pending' then
  local upay = redis.call('HGET', K_UPAY, user)
  local p = payment_record(user, upay)
  local at = 0
  if p then at = p.at end
  local seats = redis.call('HGET', K_USEAT, user)
  return {'ok', upay, seats, deadline or 0, 0, seq, at, order_amount(seats),
    redis.call('HGET', K_CONFIG, 'currency') or ''}
end
if state ~= 'seat_selected' then return {'invalid_state', state} end
if not deadline or deadline <= now then return {'hold_expired'} end
if redis.call('HEXISTS', K_PAYS, pid) == 1 then return {'invalid_argument'} end
local seat = redis.call('HGET', K_USEAT, user)
redis.call('HSET', K_UPAY, user, pid)
redis.call('HSET', K_STATE, user, 'payment_pending')
redis.call('HSET', K_PAYS, pid, user .. '|' .. int(seq) .. '|' .. seat .. '|pending|' .. ARGV[3])
return {'ok', pid, seat, deadline, 1, seq, now, order_amount(seat), redis.call('HGET', K_CONFIG, 'currency') or ''}
