-- initiate_payment: move a held selection to payment; a repeat returns the recorded payment.
-- ARGV: 1 user_id, 2 payment_id (new; used on the first call only)
-- Replies: {'ok', payment_id, seat_ids, deadline_ms, created (0|1), sequence, at_ms,
--   amount_cents, currency, seat_prices (','-joined, at the prices now: what the
--   order is charged)} | {'not_found'} | {'invalid_state', state}
--   | {'hold_expired'} | {'event_not_found'} | {'invalid_argument'} (id issued before)
--   | {'sales_ended'} (the sale ended and the event's holds end with it)
-- KEYS: config, seatmap, waiting, active, outbox, state, useq, useat, upay, pays, seatidx, offers (ops.go)
local user, pid = ARGV[1], ARGV[2]
local now, now_s = clock()
local hnow = event_hold_clock(now)
if not hnow then return {'event_not_found'} end
local state = user_state(user)
if not state then return {'not_found'} end
local seq = user_seq(user)
local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user)) -- on the hold clock
if state == 'payment_pending' then
  local upay = redis.call('HGET', K_UPAY, user)
  local p = payment_record(user, upay)
  local at = 0
  if p then at = p.at end
  local seats = redis.call('HGET', K_USEAT, user)
  if deadline then deadline = deadline + now - hnow else deadline = 0 end
  return {'ok', upay, seats, deadline, 0, seq, at, order_amount(seats),
    redis.call('HGET', K_CONFIG, 'currency') or '', seat_prices(seats)}
end
if state ~= 'seat_selected' then return {'invalid_state', state} end
if not deadline or deadline <= hnow then return {'hold_expired'} end
if not hold_open_after_end(now) then return {'sales_ended'} end
if redis.call('HEXISTS', K_PAYS, pid) == 1 then return {'invalid_argument'} end
local seat = redis.call('HGET', K_USEAT, user)
redis.call('HSET', K_UPAY, user, pid)
redis.call('HSET', K_STATE, user, 'payment_pending')
redis.call('HSET', K_PAYS, pid, user .. '|' .. int(seq) .. '|' .. seat .. '|pending|' .. now_s)
close_offer(user, 'accepted', now_s) -- paying for an offer accepts it
return {'ok', pid, seat, deadline + now - hnow, 1, seq, now, order_amount(seat), redis.call('HGET', K_CONFIG, 'currency') or '',
  seat_prices(seat)}
