-- payment_success: the provider confirmed a payment: its seats are sold,
-- or, for a hold already ended (or ended with the sale: finish_after_end
-- '0' and past sales_end), the payment is late (refund).
-- ARGV: 1 user_id, 2 payment_id
-- Replies: {'ok', 'completed' | 'duplicate', seat_ids, sequence, at_ms, sold_out_ms, amount_cents, seat_prices, phase}
--   | {'late', seat_ids, sequence, at_ms, duplicate (0|1), amount_cents, seat_prices, phase}
--   (phase: the sale's current phase, '' none; the ledger keeps the first
--   answer's with the order)
--   | {'not_found'} | {'payment_mismatch'} | {'event_not_found'}
-- KEYS: config, seats, seatmap, waiting, active, state, useq, useat, upay, ugrace, pays, status, seatidx, runs (ops.go)
local user, pid = ARGV[1], ARGV[2]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local now_ms, now = clock()
local phase = redis.call('HGET', K_CONFIG, 'phase') or ''
local p, refused = user_payment(user, pid)
if not p then return refused end
if p.status == 'completed' then
  return {'ok', 'duplicate', p.seat, p.seq, p.at, num(redis.call('HGET', K_CONFIG, 'sold_out_at')),
    order_amount(p.seat), seat_prices(p.seat), phase}
end
if p.status == 'refund' then return {'late', p.seat, p.seq, p.at, 1, order_amount(p.seat), seat_prices(p.seat), phase} end
if p.status == 'pending' and redis.call('HGET', K_STATE, user) == 'payment_pending'
    and redis.call('HGET', K_UPAY, user) == pid and hold_open_after_end(now_ms) then
  local seat = redis.call('HGET', K_USEAT, user)
  local ids = split_seats(seat)
  for _, id in ipairs(ids) do
    redis.call('HSET', K_SEATS, id, 's:' .. user)
    set_seat_status(id, 's')
  end
  redis.call('HINCRBY', K_CONFIG, 'held', -#ids)
  local sold = redis.call('HINCRBY', K_CONFIG, 'sold', #ids)
  if sold >= num(redis.call('HGET', K_CONFIG, 'total')) then
    redis.call('HSETNX', K_CONFIG, 'sold_out_at', now)
  end
  redis.call('ZREM', K_ACTIVE, user)
  redis.call('HDEL', K_UGRACE, user)
  redis.call('HSET', K_STATE, user, 'completed')
  set_payment(pid, p, 'completed', now)
  return {'ok', 'completed', seat, p.seq, p.at, num(redis.call('HGET', K_CONFIG, 'sold_out_at')),
    order_amount(seat), seat_prices(seat), phase}
end
-- failed before, or the hold it paid for has ended: the money goes back
set_payment(pid, p, 'refund', now)
return {'late', p.seat, p.seq, p.at, 0, order_amount(p.seat), seat_prices(p.seat), phase}
