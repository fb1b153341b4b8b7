-- payment_success.lua — the provider confirmed a payment: the seat becomes
-- sold for good, never freed; a duplicate changes nothing; a payment for a
-- hold already released is 'late', never a sale.
-- The payment id is classified first, from the event's payment registry
-- (K_PAYS, written by initiate_payment.lua and never deleted), then the
-- user's state: every id ever issued for the event stays classifiable
-- however late its webhook comes, even after its user joined again and
-- holds (or paid) another payment.
--   completed  the id's hold was payment_pending with this id: sold
--   duplicate  the id completed before: nothing changes
--   late       the id's hold had ended (expired, failed, cancelled, or the
--              user joined again since): refund; a repeat answers the same
--              (duplicate = 1) with the same at_ms
--   unknown    never issued for this user: not_found / payment_mismatch
-- A payment that lands after the deadline but before the hold was released
-- still completes: the seat was never anyone else's.
-- KEYS: the event key set (lib.lua)
--   reads:  config, pays, seatidx, seatmap, state, upay, useat, useq, waiting
--   writes: active, config, pays, seats, state, status, ugrace
-- ARGV: 1 user_id, 2 payment_id, 3 now_ms
-- Replies: {'ok', 'completed' | 'duplicate', seat_ids, sequence, at_ms, sold_out_ms, amount_cents, seat_prices}
--   | {'late', seat_ids, sequence, at_ms, duplicate (0|1), amount_cents, seat_prices}   refund
--   seat_ids joined by ','; every seat of the hold is sold (or, late, the
--   whole amount refunded); amount_cents as in initiate_payment.lua;
--   seat_prices: each seat's price in cents, joined by ',' like seat_ids
--   | {'not_found'} (unknown user) | {'payment_mismatch'} (id not this user's)
--   | {'event_not_found'}
--   sequence and seat_id are those of the hold the payment was made for;
--   at_ms is when the payment was first classified so (a republished fact
--   keeps its time). sold_out_ms: when the event's last seat was sold (the
--   completion that sold it records it in the config: event_sold_out's
--   time), 0 while seats remain.
local user, pid, now = ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local p, refused = user_payment(user, pid)
if not p then return refused end
if p.status == 'completed' then
  return {'ok', 'duplicate', p.seat, p.seq, p.at, num(redis.call('HGET', K_CONFIG, 'sold_out_at')),
    order_amount(p.seat), seat_prices(p.seat)}
end
if p.status == 'refund' then return {'late', p.seat, p.seq, p.at, 1, order_amount(p.seat), seat_prices(p.seat)} end
if p.status == 'pending' and redis.call('HGET', K_STATE, user) == 'payment_pending'
    and redis.call('HGET', K_UPAY, user) == pid then
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
    order_amount(seat), seat_prices(seat)}
end
-- failed before, or the hold it paid for has ended: the money goes back
set_payment(pid, p, 'refund', now)
return {'late', p.seat, p.seq, p.at, 0, order_amount(p.seat), seat_prices(p.seat)}
