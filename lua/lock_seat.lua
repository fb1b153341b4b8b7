-- lock_seat: hold seats for an admitted user, all or none; selecting again replaces the selection.
-- ARGV: 1 user_id, 2 seat ids joined by ',' (at most max_seats)
-- Replies: {'ok', seat_ids, deadline_ms} | {'not_found'} | {'invalid_state', state}
--   | {'hold_expired'} | {'seat_unknown', seat_id} | {'seat_unavailable', {taken seat ids}}
--   | {'seat_not_for_sale', {seat ids operators hold or killed (mark_seats.lua)}}
--   | {'too_many_seats', max} | {'invalid_argument'} (none, or one twice) | {'event_not_found'}
-- KEYS: config, seats, waiting, active, outbox, state, useq, useat, upay, ugrace, status, seatidx, alog, codes, waitlist, offers (ops.go)
local user, csv = ARGV[1], ARGV[2]
local now, now_s = clock()
local hnow = event_hold_clock(now)
if not hnow then return {'event_not_found'} end
local state = user_state(user)
if not state then return {'not_found'} end
if state ~= 'active' and state ~= 'seat_selected' then return {'invalid_state', state} end
local deadline = tonumber(redis.call('ZSCORE', K_ACTIVE, user))
if not deadline or deadline <= hnow then return {'hold_expired'} end

local want = split_seats(csv)
if #want == 0 then return {'invalid_argument'} end
local max = tonumber(redis.call('HGET', K_CONFIG, 'max_seats')) or 4
-- a redeemed access code may allow fewer (lib/codes.lua)
local cmax = code_seats(user)
if cmax and cmax < max then max = cmax end
if #want > max then return {'too_many_seats', max} end
local mine = 'h:' .. user
local wanted, vals, taken, kept = {}, {}, {}, {}
for i, seat in ipairs(want) do
  if wanted[seat] then return {'invalid_argument'} end
  wanted[seat] = true
  local v = redis.call('HGET', K_SEATS, seat)
  if not v then return {'seat_unknown', seat} end
  local p = string.sub(v, 1, 2)
  if p == 'r:' or p == 'k:' then
    kept[#kept + 1] = seat
  elseif v ~= '' and v ~= mine then
    taken[#taken + 1] = seat
  end
  vals[i] = v
end
if #kept > 0 then return {'seat_not_for_sale', kept} end
if #taken > 0 then return {'seat_unavailable', taken} end

local delta, freed = 0, {}
for _, prev in ipairs(split_seats(redis.call('HGET', K_USEAT, user))) do
  if not wanted[prev] and redis.call('HGET', K_SEATS, prev) == mine then
    redis.call('HSET', K_SEATS, prev, '')
    set_seat_status(prev, 'a')
    delta = delta - 1
    freed[#freed + 1] = prev
  end
end
for i, seat in ipairs(want) do
  if vals[i] == '' then
    redis.call('HSET', K_SEATS, seat, mine)
    set_seat_status(seat, 'h')
    delta = delta + 1
  end
end
if delta ~= 0 then redis.call('HINCRBY', K_CONFIG, 'held', delta) end
redis.call('HSET', K_USEAT, user, csv)
redis.call('HSET', K_STATE, user, 'seat_selected')
-- choosing seats of an offer accepts it; seats given back go to the
-- waitlist first
close_offer(user, 'accepted', now_s)
if #freed > 0 then waitlist_offer(table.concat(freed, ','), now, now_s) end
return {'ok', csv, deadline + now - hnow}
