-- handle_timeout.lua — a hold's delayed timeout message arrived.
-- Idempotent; completed users are skipped; a hold in payment_pending gets
-- the grace period once instead of being released.
-- KEYS: the event key set (lib.lua)
--   reads:  active, config, outbox, seatidx, seats, state, ugrace, upay, useat, useq, waiting
--   writes: active, config, outbox, seats, state, status, ugrace
-- ARGV: 1 user_id, 2 now_ms
-- Replies: {'ok', outcome, sequence, seat_id, payment_id, deadline_ms, already_expired, expired_entry}
--   outcome 'released'  the hold ended: free the slot (publish slot-released)
--           'extended'  payment pending: grace given, deadline_ms is the new deadline
--                       ('released': the deadline that passed, booking_expired's time)
--           'not_due'   the deadline is later (extended meanwhile): schedule again
--           'no_hold'   not in the room; already_expired = 1 when the hold had
--                       been expired earlier (by a promotion's reclaim)
--   expired_entry: the hold's 'x:<seq>:<user>' outbox value ('' when none):
--     'released' writes it in the same step ('seq|deadline_ms|seat|now_ms',
--     lib.lua), so booking_expired and the expired notification are
--     announced through the outbox (the safety net repairs a failed
--     announcement); 'no_hold' with already_expired returns it while it is
--     not fully announced
--   | {'event_not_found'}
local user, now_s = ARGV[1], ARGV[2]
local now = tonumber(now_s)
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local state = user_state(user)
local seq = user_seq(user)
local seat = redis.call('HGET', K_USEAT, user) or ''
local pay = redis.call('HGET', K_UPAY, user) or ''
local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
if not state or not deadline then
  local again = 0
  local entry = ''
  if state == 'expired' then
    again = 1
    entry = redis.call('HGET', K_OUTBOX, 'x:' .. int(seq) .. ':' .. user) or ''
  end
  return {'ok', 'no_hold', seq, seat, pay, 0, again, entry}
end
if deadline > now then
  return {'ok', 'not_due', seq, seat, pay, deadline, 0, ''}
end
local outcome, until_ms, released = expire_due(user, deadline, now)
if outcome == 'extended' then
  return {'ok', 'extended', seq, seat, pay, until_ms, 0, ''}
end
-- as promote.lua's reclaim writes it: the deadline is booking_expired's time
local s = int(seq)
local entry = s .. '|' .. int(deadline) .. '|' .. released .. '|' .. now_s
redis.call('HSET', K_OUTBOX, 'x:' .. s .. ':' .. user, entry)
return {'ok', 'released', seq, released, pay, deadline, 0, entry}
