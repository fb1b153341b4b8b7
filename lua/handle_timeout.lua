-- handle_timeout: a hold's timeout message arrived. Idempotent.
-- ARGV: 1 user_id
-- Replies: {'ok', outcome, sequence, seat_ids, payment_id, deadline_ms, already_expired, expired_entry, now_ms}
--   outcome 'released' (deadline_ms: the one that passed; writes the
--   'x:<seq>:<user>' outbox entry, returned as expired_entry) | 'extended'
--   (grace given; the new deadline) | 'not_due' (while hold clocks are paused: a
--   time at least a minute on to look again) | 'no_hold' (already_expired 1
--   and the entry while unannounced when a promotion expired it)
--   | {'event_not_found'}
-- KEYS: config, seats, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers, alloc (ops.go)
local user = ARGV[1]
local now, now_s = clock()
local hnow, held = event_hold_clock(now)
if not hnow then return {'event_not_found'} end
local shift = now - hnow
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
  return {'ok', 'no_hold', seq, seat, pay, 0, again, entry, now}
end
-- deadlines are on the hold clock (holds.lua hold_clock); replies give
-- them on Redis's
if deadline > hnow then
  local due = deadline + shift
  -- while the clocks stand still the time left does not run out: the
  -- caller looks again no sooner than a minute on (its message would
  -- otherwise come back every time left, however short)
  if held and due < now + PAUSED_RECHECK_MS then due = now + PAUSED_RECHECK_MS end
  return {'ok', 'not_due', seq, seat, pay, due, 0, '', now}
end
local outcome, until_ms, released = expire_due(user, deadline, hnow)
if outcome == 'extended' then
  return {'ok', 'extended', seq, seat, pay, until_ms + shift, 0, '', now}
end
deadline = deadline + shift
close_offer(user, 'expired', now_s)
waitlist_offer(released, now, now_s)
-- as promote.lua's reclaim writes it: the deadline is booking_expired's time
local entry = outbox_expired(int(seq), user, deadline, released, now_s)
return {'ok', 'released', seq, released, pay, deadline, 0, entry, now}
