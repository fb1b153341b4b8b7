-- cancel: the user gives up; a held seat is freed and the cancellation
-- written to the outbox ('c:<seq>:<user>'). Idempotent.
-- ARGV: 1 user_id
-- Replies: {'ok', 'queue' | 'active', seat_ids, sequence, duplicate (0|1), outbox_value}
--   (a repeat whose entry was announced: from and outbox_value '')
--   | {'cannot_cancel'} (payment pending) | {'not_found'} | {'invalid_state', state}
--   | {'event_not_found'}
-- KEYS: config, seats, waiting, active, seen, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, runs, waitlist, offers, alloc, pq (ops.go)
local user = ARGV[1]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local _, now = clock()
local state = user_state(user)
if not state then return {'not_found'} end
local seq = user_seq(user)
local s = int(seq)
local function cancelled(from, seat)
  return {'ok', from, seat, seq, 0, outbox_cancelled(s, user, from, seat, now)}
end
if state == 'waiting' then
  redis.call('ZREM', K_WAITING, user)
  redis.call('ZREM', K_SEEN, user)
  redis.call('HSET', K_STATE, user, 'cancelled')
  redis.call('HSET', K_USEQ, user, s) -- out of the queue: the sequence moves to useq
  return cancelled('queue', '')
end
if state == 'prequeued' then
  -- in a later phase's pre-queue (draw.lua): out of the open list; a
  -- closed one keeps the member (its digest is fixed) and the draw
  -- places only users still 'prequeued'
  redis.call('ZREM', K_PQ, user)
  redis.call('ZREM', K_SEEN, user)
  redis.call('HSET', K_STATE, user, 'cancelled')
  return cancelled('queue', '')
end
if state == 'active' or state == 'seat_selected' then
  local seats = release_hold(user, 'cancelled')
  close_offer(user, 'declined', now)
  waitlist_offer(seats, clock())
  return cancelled('active', seats)
end
if state == 'cancelled' then
  local v = redis.call('HGET', K_OUTBOX, 'c:' .. s .. ':' .. user)
  if not v then return {'ok', '', redis.call('HGET', K_USEAT, user) or '', seq, 1, ''} end
  local from, seat = string.match(v, '^[^|]*|([^|]*)|([^|]*)|')
  return {'ok', from, seat, seq, 1, v}
end
if state == 'payment_pending' then return {'cannot_cancel'} end
return {'invalid_state', state}
