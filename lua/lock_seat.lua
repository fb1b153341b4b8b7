-- lock_seat.lua — hold a seat for an admitted user (seed 002 "Lock Seat", fixed:
-- scoped by event, seat must exist, a sold seat stays sold).
-- Picking another seat while one is held swaps them; picking the same seat
-- again is a no-op.
-- KEYS: the event key set (lib.lua).
-- ARGV: 1 user_id, 2 seat_id, 3 now_ms
-- Replies: {'ok', seat_id, deadline_ms}
--   | {'not_found'} | {'invalid_state', state} | {'hold_expired'}
--   | {'seat_unknown'} | {'seat_unavailable'} | {'event_not_found'}
local user, seat, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
if redis.call('EXISTS', K_CONFIG) == 0 then return {'event_not_found'} end
local state = redis.call('HGET', K_STATE, user)
if not state then return {'not_found'} end
if state ~= 'active' and state ~= 'seat_selected' then return {'invalid_state', state} end
local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
if not deadline or deadline <= now then return {'hold_expired'} end

local v = redis.call('HGET', K_SEATS, seat)
if not v then return {'seat_unknown'} end
local mine = 'h:' .. user
if v == mine then return {'ok', seat, deadline} end
if v ~= '' then return {'seat_unavailable'} end

local previous = redis.call('HGET', K_USEAT, user)
if previous and previous ~= '' and redis.call('HGET', K_SEATS, previous) == mine then
  redis.call('HSET', K_SEATS, previous, '')
  redis.call('HINCRBY', K_CONFIG, 'held', -1)
  set_seat_status(previous, 'a')
end
redis.call('HSET', K_SEATS, seat, mine)
set_seat_status(seat, 'h')
redis.call('HINCRBY', K_CONFIG, 'held', 1)
redis.call('HSET', K_USEAT, user, seat)
redis.call('HSET', K_STATE, user, 'seat_selected')
return {'ok', seat, deadline}
