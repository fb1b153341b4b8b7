-- payment_failure: the provider declined a payment; its hold is released
-- while payment_pending with this id. Classified by the payment registry, then the state.
-- ARGV: 1 user_id, 2 payment_id
-- Replies: {'ok', 'failed' | 'duplicate' | 'no_hold', seat_ids, sequence, at_ms}
--   | {'not_found'} | {'payment_mismatch'} | {'already_completed'} | {'event_not_found'}
-- KEYS: config, seats, waiting, active, outbox, state, useq, useat, upay, ugrace, pays, status, seatidx, alog, runs, waitlist, offers, alloc (ops.go)
local user, pid = ARGV[1], ARGV[2]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local _, now = clock()
local p, refused = user_payment(user, pid)
if not p then return refused end
if p.status == 'completed' then return {'already_completed'} end
if p.status == 'failed' then return {'ok', 'duplicate', p.seat, p.seq, p.at} end
-- a failure that released no hold is recorded 'nohold', so its repeats
-- answer no_hold too, never a duplicate of a release (the webhook
-- publishes payment_failed only for a released hold)
if p.status == 'refund' or p.status == 'nohold' then return {'ok', 'no_hold', p.seat, p.seq, p.at} end
if redis.call('HGET', K_STATE, user) == 'payment_pending' and redis.call('HGET', K_UPAY, user) == pid then
  local seat = release_hold(user, 'failed')
  set_payment(pid, p, 'failed', now)
  waitlist_offer(seat, clock())
  return {'ok', 'failed', seat, p.seq, p.at}
end
set_payment(pid, p, 'nohold', now)
return {'ok', 'no_hold', p.seat, p.seq, p.at}
