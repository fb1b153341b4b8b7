-- cancel.lua — the user gives up: a held seat is freed; refused while a
-- payment is pending. The cancellation is
-- written to the outbox ('c:<seq>:<user>' → 'seq|from|seat|at_ms') in the same
-- step, so its side effects (booking_cancelled, and slot-released when it
-- left the room) are announced even if the caller fails right after.
-- Cancelling again is idempotent: it answers the same, plus the outbox
-- entry if it is still unannounced.
-- KEYS: the event key set (lib.lua)
--   reads:  config, outbox, seatidx, seats, state, useat, useq, waiting
--   writes: active, config, outbox, seats, seen, state, status, ugrace, useq, waiting
-- ARGV: 1 user_id, 2 now_ms
-- Replies: {'ok', 'queue' | 'active', seat_id, sequence, duplicate (0|1), outbox_value}
--   from and outbox_value are '' on a repeat whose entry was announced already;
--   outbox_value may carry the 'r'/'k' progress part (lib.lua)
--   | {'cannot_cancel'} | {'not_found'} | {'invalid_state', state} | {'event_not_found'}
local user, now = ARGV[1], ARGV[2]
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local state = user_state(user)
if not state then return {'not_found'} end
local seq = user_seq(user)
local s = int(seq)
local function cancelled(from, seat)
  local v = s .. '|' .. from .. '|' .. seat .. '|' .. now
  redis.call('HSET', K_OUTBOX, 'c:' .. s .. ':' .. user, v)
  return {'ok', from, seat, seq, 0, v}
end
if state == 'waiting' then
  redis.call('ZREM', K_WAITING, user)
  redis.call('ZREM', K_SEEN, user)
  redis.call('HSET', K_STATE, user, 'cancelled')
  redis.call('HSET', K_USEQ, user, s) -- out of the queue: the sequence moves to useq
  return cancelled('queue', '')
end
if state == 'active' or state == 'seat_selected' then
  return cancelled('active', release_hold(user, 'cancelled'))
end
if state == 'cancelled' then
  local v = redis.call('HGET', K_OUTBOX, 'c:' .. s .. ':' .. user)
  if not v then return {'ok', '', redis.call('HGET', K_USEAT, user) or '', seq, 1, ''} end
  local from, seat = string.match(v, '^[^|]*|([^|]*)|([^|]*)|')
  return {'ok', from, seat, seq, 1, v}
end
if state == 'payment_pending' then return {'cannot_cancel'} end
return {'invalid_state', state}
